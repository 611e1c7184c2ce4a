"""Batch API mode end to end: the real vLLM server behind a real Files + Batches shim.

vLLM has no ``/v1/batches``; ``servers.batch_shim`` adds one on 127.0.0.1 that runs each
line against vLLM, so a batched run goes through the official SDK's upload, create, poll
and download calls and is compared with the same items scored by direct requests.
"""

from __future__ import annotations

import pytest
from _api_support import chat_snapshot, subset
from servers.batch_shim import BatchShim

from monitor.jobs.options import RunOptions
from monitor.jobs.run import run_snapshot
from monitor.store.db import Store

pytestmark = pytest.mark.vllm
pytest_plugins = ["_api_fixtures"]  # fixture chat_server (bhed: conftest)

N_ITEMS = 4  # per axis; both option orders, so 8 requests


def _answers(store: Store, run_id: str) -> dict[str, tuple[str, str]]:
    return {r["request_key"]: (r["status"], r["response_text"]) for r in store.api_requests(run_id)}


def _outcomes(store: Store, run_id: str) -> dict[str, str]:
    return {r["item_id"]: r["outcome"] for r in store.scores(run_id)}


def test_batched_run_matches_direct_requests(chat_server, bhed, monitor_env):
    store = Store(monitor_env / "batch.duckdb")
    items = subset(bhed[:1], N_ITEMS)
    (direct,) = run_snapshot(
        store, chat_snapshot(chat_server.base_url, snapshot_id="direct"), items, RunOptions()
    )
    with BatchShim(chat_server.root) as shim:
        snap = chat_snapshot(
            shim.base_url, snapshot_id="batched", batch_api=True, batch_wait_s=300, batch_poll_s=0.2
        )
        (out,) = run_snapshot(store, snap, items, RunOptions())
    assert (direct.status, out.status) == ("complete", "complete"), out.reason
    (batch,) = store.api_batches(out.run_id)
    assert batch["status"] == "ingested" and len(batch["request_keys"]) == 2 * N_ITEMS
    assert shim.created == [batch["batch_id"]]
    # No chat request went around the batch (the start-up probe is the only direct call).
    assert sum("/chat/completions" in p for p in shim.direct_calls) <= 1
    requests = store.api_requests(out.run_id)
    assert {r["batch_id"] for r in requests} == {batch["batch_id"]}
    assert _answers(store, out.run_id) == _answers(store, direct.run_id)
    assert _outcomes(store, out.run_id) == _outcomes(store, direct.run_id)


def test_submit_exit_then_ingest_and_resubmit_failed_lines(chat_server, bhed, monitor_env):
    """A nightly job submits and leaves; the next one ingests, and a line that failed inside
    the batch is submitted again on its own. Nothing is asked twice that was answered."""
    store = Store(monitor_env / "batch.duckdb")
    items = subset(bhed[:1], N_ITEMS)
    with BatchShim(chat_server.root, hold=True) as shim:
        snap = chat_snapshot(shim.base_url, batch_api=True, batch_wait_s=0, batch_poll_s=0.2)
        (first,) = run_snapshot(store, snap, items, RunOptions())
        assert first.status == "pending" and "rerun the same command" in first.reason
        run = store.get_run(first.run_id)
        assert run["status"] == "interrupted" and "waiting for Batch API" in run["notes"]
        (batch,) = store.api_batches(first.run_id)
        assert batch["status"] == "submitted"

        # The job is still running: a rerun submits nothing new and leaves it waiting.
        (again,) = run_snapshot(store, snap, items, RunOptions())
        assert again.status == "pending" and again.run_id == first.run_id
        assert len(shim.created) == 1

        failing = batch["request_keys"][0]
        shim.fail_once.add(failing)
        shim.release()
        waiting = chat_snapshot(shim.base_url, batch_api=True, batch_wait_s=300, batch_poll_s=0.2)
        (done,) = run_snapshot(store, waiting, items, RunOptions())
    assert done.status == "complete" and done.run_id == first.run_id, done.reason
    batches = store.api_batches(first.run_id)
    assert [b["status"] for b in batches] == ["ingested", "ingested"]
    assert batches[1]["request_keys"] == [failing]
    assert sorted(shim.lines_seen) == sorted([*batch["request_keys"], failing])
    answers = _answers(store, first.run_id)
    assert len(answers) == 2 * N_ITEMS and {s for s, _ in answers.values()} == {"ok"}
    assert len(store.scores(first.run_id)) == N_ITEMS
