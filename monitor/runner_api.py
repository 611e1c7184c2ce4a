"""The scoring job for API snapshots (kinds ``openai-chat`` and ``openai-responses``).

Same shape as the local path in ``monitor.runner`` (begin or resume a run, store items,
score, finalise through the quality gate), with what talking to a paid, flaky, changing
service adds:

* the request count and a cost estimate are printed *before* anything is sent, and a run
  needing more than the snapshot's ``request_budget`` is refused;
* forced choice needs top log-probabilities: one probe request at the start tells whether
  the model gives them, and a model that does not (reasoning models) is scored with the
  sampling method instead, with a message saying so and the reason stored with the run;
* every answer is stored in ``api_requests`` (prompt, order, raw top log-probs, reported
  model, fingerprint, usage) as it arrives, in small batches, before the item's score; a
  resumed run asks only for requests not stored yet, and scores items whose requests were
  all stored before a kill without asking again;
* a change of the model name the server reports stops the run (two models' answers are
  never mixed); a change of ``system_fingerprint`` is recorded and reported, not fatal;
* after the run the real token usage and cost, the reported model names and fingerprints
  are stored in the run's environment.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.backends.api_client import (
    ApiError,
    ApiModelChanged,
    RequestBudget,
    UsageTotals,
    estimate_cost,
    make_client,
    run_bounded,
)
from monitor.backends.openai_chat import (
    ENDPOINT_OF_KIND,
    ChatCaller,
    ProbeResult,
    ResponseRecord,
    probe_logprobs,
)
from monitor.benchmarks.items import Item, LoadedBenchmark
from monitor.errors import MonitorError, SnapshotUnavailable, UserInputError
from monitor.metrics.forced_choice import FORCED_CHOICE
from monitor.metrics.registry import metric_info
from monitor.metrics.sampling import SAMPLED_CHOICE
from monitor.provenance import environment
from monitor.records import ScoreRow
from monitor.scoring.api_tasks import (
    TEMPLATES,
    PlannedRequest,
    chat_request,
    measures_for,
    plan_requests,
    record_from_row,
    request_row,
    score_item,
)
from monitor.snapshots.model import ApiSettings, ApiSource, Snapshot

EventSink = Callable[[str], None]
METHOD_METRIC = {"forced-choice": FORCED_CHOICE, "sampling": SAMPLED_CHOICE}
FLUSH_EVERY = 16  # answers buffered before they are written
FLUSH_AFTER_S = 2.0  # ... or seconds since the last write


@dataclass(frozen=True)
class Method:
    """How this run asks: metric, samples per order, and the request parameters."""

    metric: str
    samples: int
    temperature: float | None
    max_tokens: int
    top_logprobs: int
    seed: int | None

    def params(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_logprobs": self.top_logprobs if self.metric == FORCED_CHOICE else None,
            "logprobs": self.metric == FORCED_CHOICE,
            "seed": self.seed,
            "samples": self.samples,
        }


def method_for(metric: str, settings: ApiSettings) -> Method:
    if metric == FORCED_CHOICE:
        return Method(
            metric,
            1,
            settings.temperature,
            settings.max_tokens,
            settings.top_logprobs,
            settings.seed,
        )
    return Method(
        metric,
        settings.samples,
        settings.sampling_temperature,
        settings.sampling_max_tokens or settings.max_tokens,
        settings.top_logprobs,
        settings.seed,
    )


def api_fingerprint(
    snapshot: Snapshot,
    method: Method,
    benches: Sequence[LoadedBenchmark],
    seed: int,
    option_order: str,
) -> str:
    """Identity of 'the same measurement' for resuming: model, endpoint, metric, items,
    prompt templates and sampling parameters; not concurrency, timeouts or budgets."""
    from monitor.runner import RunOptions, fingerprint

    base = fingerprint(
        snapshot,
        method.metric,
        metric_info(method.metric)[1],
        benches,
        RunOptions(seed=seed, device="api", dtype="n/a"),
    )
    items = sorted(it.item_id for b in benches for it in b.items)
    payload = {
        "base": base,
        "option_order": option_order,
        "templates": TEMPLATES,  # a reworded prompt is a different measurement
        "items": hashlib.sha256("\n".join(items).encode()).hexdigest(),
        **method.params(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


@dataclass
class _Session:
    """One run's in-flight state: answers buffered for the store, model/fingerprint
    watch, usage totals, progress."""

    store: Any
    run_id: str
    snapshot: Snapshot
    method: Method
    endpoint: str
    plan: dict[str, list[PlannedRequest]]
    records: dict[str, ResponseRecord]
    scored: set[str]
    on_event: EventSink
    advance: Callable[[int], None] | None
    redact: Callable[[str], str]
    reference_model: str | None = None
    fingerprints: list[str] = field(default_factory=list)
    usage: UsageTotals = field(default_factory=UsageTotals)
    pending_requests: list[dict[str, Any]] = field(default_factory=list)
    pending_scores: list[ScoreRow] = field(default_factory=list)
    last_flush: float = field(default_factory=time.monotonic)
    probe_model: str | None = None

    def __post_init__(self) -> None:
        """The run's model is the one its stored answers came from, else the one that
        answered the probe; a probe answered by another model stops a resumed run."""
        for rec in self.records.values():
            self._watch_fingerprint(rec.system_fingerprint, announce=False)
            if self.reference_model is None and rec.reported_model:
                self.reference_model = rec.reported_model
        if self.reference_model is None:
            self.reference_model = self.probe_model
        elif self.probe_model and self.probe_model != self.reference_model:
            raise ApiModelChanged(
                self.redact(
                    f"snapshot {self.snapshot.id}: the API now reports model "
                    f"{self.probe_model!r}, but this run's stored answers came from "
                    f"{self.reference_model!r}; refusing to mix two models' answers"
                )
            )

    def _watch_fingerprint(self, fp: str | None, *, announce: bool = True) -> None:
        if not fp:
            return
        fp = self.redact(fp)  # a server's string: it could carry a credential
        if fp in self.fingerprints:
            return
        self.fingerprints.append(fp)
        if announce and len(self.fingerprints) > 1:
            self.on_event(
                f"{self.snapshot.id}: system_fingerprint changed during the run "
                f"({self.fingerprints[0]} -> {fp}); recorded per request"
            )

    def on_result(self, planned: PlannedRequest, record: ResponseRecord) -> None:
        """Called on the main thread for every answer, in arrival order."""
        reported = record.reported_model
        if reported and self.reference_model and reported != self.reference_model:
            error = (
                f"snapshot {self.snapshot.id}: the API reported model {reported!r} after "
                f"{self.reference_model!r} earlier in this run (requested "
                f"{self.snapshot.source.model!r}); refusing to mix two models' answers. "
                "Stored answers are kept; rerun to resume once the served model is stable"
            )
            self.pending_requests.append(
                request_row(
                    planned,
                    record,
                    endpoint=self.endpoint,
                    params=self.method.params(),
                    status="model_changed",
                    error=error,
                    redact=self.redact,
                )
            )
            self.flush()
            raise ApiModelChanged(self.redact(error))
        if reported and self.reference_model is None:
            self.reference_model = reported
        self._watch_fingerprint(record.system_fingerprint)
        self.records[planned.key] = record
        self.usage.add(record.usage, attempts=record.attempts, latency_s=record.latency_s or 0.0)
        self.pending_requests.append(
            request_row(
                planned,
                record,
                endpoint=self.endpoint,
                params=self.method.params(),
                redact=self.redact,
            )
        )
        self._score_if_complete(planned.item_id)
        if (
            len(self.pending_requests) >= FLUSH_EVERY
            or time.monotonic() - self.last_flush >= FLUSH_AFTER_S
        ):
            self.flush()

    def _score_if_complete(self, item_id: str) -> None:
        if item_id in self.scored:
            return
        planned = self.plan[item_id]
        if all(p.key in self.records for p in planned):
            self.pending_scores.append(
                score_item(self.method.metric, item_id, planned, self.records)
            )
            self.scored.add(item_id)
            if self.advance is not None:
                self.advance(1)

    def score_ready(self, item_ids: Sequence[str]) -> None:
        """Score items whose answers were all stored before (a kill between writes)."""
        for item_id in item_ids:
            self._score_if_complete(item_id)
        self.flush()

    def flush(self) -> None:
        """Answers first, then the scores computed from them: a kill in between leaves
        answers that the next run scores without asking again."""
        if self.pending_requests:
            self.store.add_api_requests(self.run_id, self.pending_requests)
            self.pending_requests = []
        if self.pending_scores:
            self.store.add_scores(self.run_id, self.pending_scores)
            self.pending_scores = []
        self.last_flush = time.monotonic()


def _redacting(sink: EventSink, redact: Callable[[str], str]) -> EventSink:
    def emit(message: str) -> None:
        sink(redact(message))

    return emit


def _api_environment(
    snapshot: Snapshot,
    api,
    endpoint: str,
    method: Method,
    settings: ApiSettings,
    probe: ProbeResult | None,
    fallback: str | None,
) -> dict[str, Any]:
    source = snapshot.source
    assert isinstance(source, ApiSource)
    return {
        "provider": source.provider,
        "endpoint_url": api.endpoint_url,
        "endpoint": endpoint,
        "requested_model": source.model,
        "method": method.metric,
        "request_params": method.params(),
        "option_order": settings.option_order,
        "batch_api": settings.batch_api,
        "max_concurrency": settings.max_concurrency,
        "logprobs_probe": probe.as_dict() if probe else None,
        "fallback": fallback,
    }


@dataclass
class _Context:
    """What every repeat of one snapshot's runs shares."""

    store: Any
    snapshot: Snapshot
    benches: list[LoadedBenchmark]
    options: Any
    settings: ApiSettings
    api: Any
    caller: ChatCaller
    budget: RequestBudget
    on_event: EventSink
    progress_factory: Callable[[str, int], Callable[[int], None]] | None
    method: Method
    plan: dict[str, list[PlannedRequest]]
    fingerprint: str
    probe: ProbeResult | None
    fallback: str | None
    repeat_group: str | None


def run_api_snapshot(
    store,
    snapshot: Snapshot,
    benches: list[LoadedBenchmark],
    options,
    *,
    on_event: EventSink = lambda _msg: None,
    progress_factory: Callable[[str, int], Callable[[int], None]] | None = None,
) -> list:
    """Score one API snapshot ``options.repeat`` times (each repeat its own run)."""
    from monitor.runner import RunOutcome

    settings = snapshot.api or ApiSettings()
    source = snapshot.source
    if not isinstance(source, ApiSource):
        raise UserInputError(f"snapshot {snapshot.id} has no openai-api source")
    metric = options.metric or METHOD_METRIC.get(settings.method)
    if metric not in (FORCED_CHOICE, SAMPLED_CHOICE):
        raise UserInputError(
            f"snapshot {snapshot.id}: kind {snapshot.kind} is scored with forced-choice or "
            f"sampled-choice, not {metric or settings.method!r}"
        )
    try:
        api = make_client(snapshot.id, source, settings)
    except SnapshotUnavailable as exc:
        return [RunOutcome(snapshot.id, None, "skipped", reason=str(exc))]
    budget = RequestBudget(settings.request_budget, snapshot.id)
    on_event = _redacting(on_event, api.redact)  # every message from here on
    caller = ChatCaller(api, ENDPOINT_OF_KIND[snapshot.kind], budget=budget, on_event=on_event)
    items: list[Item] = [it for b in benches for it in b.items]

    def plan_for(method: Method) -> dict[str, list[PlannedRequest]]:
        return plan_requests(
            items, option_order=settings.option_order, samples=method.samples, seed=options.seed
        )

    method = method_for(metric, settings)
    plan = plan_for(method)
    whole = estimate_cost(
        (p.prompt for v in plan.values() for p in v),
        settings,
        max_output_tokens=method.max_tokens,
        batch=settings.batch_api,
    )
    budget_text = settings.request_budget if settings.request_budget is not None else "unset"
    on_event(f"{snapshot.id}: whole plan {whole.describe()}; request budget {budget_text}")

    probe: ProbeResult | None = None
    fallback: str | None = None
    if metric == FORCED_CHOICE:
        budget.check_plan(1)
        try:
            probe = probe_logprobs(
                caller, top_logprobs=settings.top_logprobs, max_tokens=settings.max_tokens
            )
        except ApiError as exc:
            return [RunOutcome(snapshot.id, None, "skipped", reason=str(exc))]
        if not probe.accepted:
            method = method_for(SAMPLED_CHOICE, settings)
            fallback = (
                f"{snapshot.id}: the model gives no log-probabilities ({probe.detail}); "
                f"falling back to the sampling method ({SAMPLED_CHOICE}, {method.samples} "
                "samples per item and option order)"
            )
            on_event(fallback)
            plan = plan_for(method)

    ctx = _Context(
        store=store,
        snapshot=snapshot,
        benches=benches,
        options=options,
        settings=settings,
        api=api,
        caller=caller,
        budget=budget,
        on_event=on_event,
        progress_factory=progress_factory,
        method=method,
        plan=plan,
        fingerprint=api_fingerprint(snapshot, method, benches, options.seed, settings.option_order),
        probe=probe,
        fallback=fallback,
        repeat_group=uuid.uuid4().hex[:12] if options.repeat > 1 else None,
    )
    return [_one_run(ctx, rep) for rep in range(options.repeat)]


def _one_run(ctx: _Context, rep: int):
    """One repeat: begin or resume the run, ask what is missing, store, finalise."""
    from monitor.runner import RunOutcome, finalise_run, new_run_record

    store, snapshot, benches, options = ctx.store, ctx.snapshot, ctx.benches, ctx.options
    settings, api, caller, budget, on_event = (
        ctx.settings,
        ctx.api,
        ctx.caller,
        ctx.budget,
        ctx.on_event,
    )
    method, plan, fp, probe, fallback = (
        ctx.method,
        ctx.plan,
        ctx.fingerprint,
        ctx.probe,
        ctx.fallback,
    )
    metric = method.metric
    items: list[Item] = [it for b in benches for it in b.items]
    item_axis = {it.item_id: (it.benchmark, it.axis) for it in items}
    n_planned = sum(len(v) for v in plan.values())
    metric_name, metric_version, _ = metric_info(metric)
    endpoint = caller.endpoint

    run_id = store.find_resumable(fp) if options.resume else None
    already: set[str] = set()
    stored: dict[str, ResponseRecord] = {}
    if run_id is not None:
        already = store.scored_item_ids(run_id)
        rows = sorted(store.api_requests(run_id, status="ok"), key=lambda r: r["created_at"])
        stored = {r["request_key"]: record_from_row(r) for r in rows}
    todo_items = [it.item_id for it in items if it.item_id not in already]
    pending = [p for i in todo_items for p in plan[i] if p.key not in stored]
    estimate = estimate_cost(
        (p.prompt for p in pending),
        settings,
        max_output_tokens=method.max_tokens,
        batch=settings.batch_api,
    )
    on_event(f"{snapshot.id}: request budget/cost estimate for this run: {estimate.describe()}")
    budget.check_plan(len(pending))  # refused before anything is written

    if run_id is not None:
        store.set_status(
            run_id,
            "running",
            f"resumed with {len(already)} items and {len(stored)} answers already stored",
        )
        on_event(
            f"resuming run {run_id}: {len(already)} of {len(items)} items and "
            f"{len(stored)} of {n_planned} answers already stored"
        )
    else:
        env = environment("api")
        env["api"] = _api_environment(snapshot, api, endpoint, method, settings, probe, fallback)
        record = new_run_record(
            snapshot,
            benches,
            options,
            metric=metric_name,
            metric_version=metric_version,
            fingerprint=fp,
            repeat_group=ctx.repeat_group,
            repeat_index=rep,
            device="api",
            dtype="n/a",
            batch_size=None,
            environment=env,
            origin="api",
            notes=fallback,
        )
        run_id = record.run_id
        store.begin_run(record)
        store.upsert_items(items)
        for b in benches:
            store.add_exclusions(run_id, b.exclusions)

    advance = (
        ctx.progress_factory(f"{snapshot.id} #{rep + 1}", len(todo_items))
        if ctx.progress_factory
        else None
    )
    started_at = time.perf_counter()
    session: _Session | None = None
    try:
        session = _Session(
            store,
            run_id,
            snapshot,
            method,
            endpoint,
            plan,
            stored,
            set(already),
            on_event,
            advance,
            api.redact,
            probe_model=probe.reported_model if probe else None,
        )
        session.score_ready(todo_items)
        if settings.batch_api:
            done, waiting = run_batches(session, api, caller, pending, settings, on_event)
        else:
            run_bounded(
                pending,
                lambda p: caller.call(
                    chat_request(
                        p,
                        method=method.metric,
                        max_tokens=method.max_tokens,
                        temperature=method.temperature,
                        top_logprobs=method.top_logprobs,
                        seed=method.seed,
                    )
                ),
                max_concurrency=settings.max_concurrency,
                on_result=session.on_result,
            )
            done, waiting = True, []
        session.flush()
    except KeyboardInterrupt:
        if session is not None:
            session.flush()
        store.set_status(run_id, "interrupted", "interrupted by the user; rerun to resume")
        raise
    except Exception as exc:  # recorded, then surfaced: the run must not stay 'running'
        try:
            if session is not None:
                session.flush()
        finally:
            store.set_status(run_id, "failed", api.redact(f"{type(exc).__name__}: {exc}")[:500])
        if isinstance(exc, MonitorError):
            return RunOutcome(
                snapshot.id,
                run_id,
                "failed",
                reason=api.redact(str(exc)),
                resumed_from=len(already),
            )
        raise
    elapsed = time.perf_counter() - started_at
    store.update_run_environment(
        run_id, _usage_patch(session, settings, elapsed, estimate.describe())
    )
    if not done:
        note = (
            "waiting for Batch API job(s) "
            + ", ".join(waiting)
            + "; rerun the same command to ingest the answers"
        )
        store.set_status(run_id, "interrupted", note)
        on_event(f"{snapshot.id}: {note}")
        return RunOutcome(snapshot.id, run_id, "pending", reason=note, resumed_from=len(already))
    usage = session.usage.as_dict(settings, batch=settings.batch_api)
    cost = f"${usage['usd']:.4f}" if usage["usd"] is not None else "cost unknown"
    rate = session.usage.requests / elapsed if elapsed > 0 else 0.0
    on_event(
        f"{snapshot.id} run {run_id}: {session.usage.requests} requests "
        f"({session.usage.attempts} attempts) in {elapsed:.1f}s ({rate:.2f}/s), "
        f"{usage['input_tokens']} input + {usage['output_tokens']} output tokens, {cost}"
    )
    if len(session.fingerprints) > 1:  # kept as the run's note unless the gate fails it
        store.set_status(
            run_id,
            "running",
            "system_fingerprint changed during the run: " + " -> ".join(session.fingerprints),
        )
    return finalise_run(
        store,
        run_id,
        items,
        item_axis,
        sum(len(b.exclusions) for b in benches),
        snapshot.id,
        resumed_from=len(already),
        measures_fn=lambda rows, axes: measures_for(metric, rows, axes),
    )


def _usage_patch(
    session: _Session, settings: ApiSettings, elapsed: float, estimate: str
) -> dict[str, Any]:
    """Usage over every stored answer of the run (earlier processes included), and what
    this process sent."""
    total = UsageTotals()
    for rec in session.records.values():
        total.add(rec.usage, attempts=rec.attempts, latency_s=rec.latency_s or 0.0)
    usage = total.as_dict(settings, batch=settings.batch_api)
    this = session.usage.as_dict(settings, batch=settings.batch_api)
    this["wall_s"] = round(elapsed, 3)
    this["requests_per_s"] = round(session.usage.requests / elapsed, 3) if elapsed else None
    this["estimate_before"] = estimate
    usage["this_process"] = this
    return {
        "api_usage": usage,
        "reported_models": sorted(
            {session.redact(r.reported_model) for r in session.records.values() if r.reported_model}
        ),
        "system_fingerprints": list(session.fingerprints),
    }


def run_batches(
    session: _Session,
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
    from monitor.backends.openai_batch import (
        TERMINAL_FAILURES,
        BatchJobs,
        batch_jsonl,
        parse_batch_output,
    )

    store, run_id, method = session.store, session.run_id, session.method
    jobs = BatchJobs(api)
    by_key = {p.key: p for p in pending}
    deadline = time.monotonic() + max(0.0, settings.batch_wait_s)
    want_logprobs = method.metric == FORCED_CHOICE

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
            from monitor.backends.openai_batch import MAX_LINES

            for start in range(0, len(todo), MAX_LINES):
                chunk = todo[start : start + MAX_LINES]
                data = batch_jsonl(
                    (
                        (
                            p.key,
                            caller.body(
                                chat_request(
                                    p,
                                    method=method.metric,
                                    max_tokens=method.max_tokens,
                                    temperature=method.temperature,
                                    top_logprobs=method.top_logprobs,
                                    seed=method.seed,
                                )
                            ),
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
