"""Batch API mode: submit an API run's requests as batch jobs, poll, ingest the answers.

Half price, for nightly runs. The batch ids live in the store, so any later process with
the same database (another machine, the next night) can poll and ingest them; a request
that failed inside a finished batch is stored as ``failed`` and submitted again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from monitor.backends.openai_batch import (
    MAX_LINES,
    TERMINAL_FAILURES,
    BatchJobs,
    batch_jsonl,
    parse_batch_output,
)
from monitor.backends.openai_chat import ChatCaller, ResponseRecord
from monitor.jobs.api_session import ApiSession
from monitor.scoring.api_tasks import PlannedRequest, asks_logprobs, request_row
from monitor.snapshots.model import ApiSettings

EventSink = Callable[[str], None]


def run_batches(
    session: ApiSession,
    api,
    caller: ChatCaller,
    pending: list[PlannedRequest],
    settings: ApiSettings,
    on_event: EventSink,
) -> tuple[bool, list[str]]:
    """Batch API mode: ingest finished batches of this run, submit what no open batch
    covers, and wait up to ``batch_wait_s`` polling every ``batch_poll_s``.

    Returns (every pending request answered, ids of batches still open). A request that
    failed inside a finished batch is stored as ``failed`` and submitted again.
    """
    store, run_id, method = session.store, session.run_id, session.method
    jobs = BatchJobs(api)
    by_key = {p.key: p for p in pending}
    deadline = time.monotonic() + max(0.0, settings.batch_wait_s)
    want_logprobs = asks_logprobs(method.metric)

    def missing() -> list[PlannedRequest]:
        return [p for p in pending if p.key not in session.records]

    while True:
        open_batches = [b for b in store.api_batches(run_id) if b["status"] == "submitted"]
        for b in open_batches:
            st = jobs.status(b["batch_id"])
            if st.status == "completed":
                outcomes = []
                for file_id in (st.output_file_id, st.error_file_id):
                    if file_id:
                        outcomes += parse_batch_output(
                            jobs.download(file_id),
                            caller.endpoint,
                            batch_id=b["batch_id"],
                            want_logprobs=want_logprobs,
                        )
                failed = 0
                for o in outcomes:
                    planned = by_key.get(o.custom_id)
                    if planned is None or o.custom_id in session.records:
                        continue  # not ours to score now (already answered)
                    if o.record is not None:
                        session.on_result(planned, o.record)
                    else:
                        failed += 1
                        empty = ResponseRecord(
                            o.custom_id, "", (), None, None, {}, None, None, batch_id=b["batch_id"]
                        )
                        session.pending_requests.append(
                            request_row(
                                planned,
                                empty,
                                endpoint=session.endpoint,
                                params=method.params(),
                                status="failed",
                                error=api.redact(o.error or "failed"),
                            )
                        )
                session.flush()
                store.update_api_batch(
                    b["batch_id"],
                    "ingested",
                    output_file_id=st.output_file_id,
                    error_file_id=st.error_file_id,
                    detail=f"{len(outcomes)} lines, {failed} failed",
                )
                on_event(
                    f"{session.snapshot.id}: ingested batch {b['batch_id']} "
                    f"({len(outcomes)} answers, {failed} failed)"
                )
            elif st.status in TERMINAL_FAILURES:
                store.update_api_batch(b["batch_id"], st.status, detail=st.detail)
                on_event(
                    f"{session.snapshot.id}: batch {b['batch_id']} ended {st.status}"
                    + (f" ({api.redact(st.detail)})" if st.detail else "")
                    + "; its requests will be submitted again"
                )
        open_batches = [b for b in store.api_batches(run_id) if b["status"] == "submitted"]
        covered = {k for b in open_batches for k in b["request_keys"]}
        todo = [p for p in missing() if p.key not in covered]
        if todo:
            for start in range(0, len(todo), MAX_LINES):
                chunk = todo[start : start + MAX_LINES]
                data = batch_jsonl(
                    (
                        (
                            p.key,
                            caller.body(method.request(p)),
                        )
                        for p in chunk
                    ),
                    caller.endpoint,
                )
                batch_id, file_id = jobs.submit(data, caller.endpoint)
                store.add_api_batch(
                    run_id,
                    batch_id,
                    endpoint=caller.endpoint,
                    input_file_id=file_id,
                    request_keys=[p.key for p in chunk],
                )
                on_event(
                    f"{session.snapshot.id}: submitted batch {batch_id} with {len(chunk)} requests"
                )
            continue  # poll the new batch once before deciding to wait
        if not missing():
            return True, []
        waiting = [b["batch_id"] for b in open_batches]
        if time.monotonic() >= deadline:
            return False, waiting
        time.sleep(max(0.1, settings.batch_poll_s))
