"""The scoring driver for chat API snapshots (kinds ``openai-chat`` and ``openai-responses``).

Same lifecycle as every run (``monitor.jobs.lifecycle``: begin or resume, store items,
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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.backends.api_client import (
    ApiClient,
    ApiError,
    RequestBudget,
    UsageTotals,
    estimate_cost,
    make_client,
    run_bounded,
)
from monitor.backends.device_facts import torch_facts
from monitor.backends.openai_chat import ChatCaller, ProbeResult, ResponseRecord, probe_logprobs
from monitor.benchmarks.items import LoadedBenchmark
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.jobs.api_batch import run_batches
from monitor.jobs.api_method import Method, method_for
from monitor.jobs.api_session import ApiSession
from monitor.jobs.context import JobContext
from monitor.jobs.driver import RunHooks, drive
from monitor.jobs.lifecycle import Attempt, OpenRun
from monitor.jobs.options import EventSink, RunOptions, RunOutcome
from monitor.jobs.run_record import fingerprint, new_repeat_group, new_run_record
from monitor.metrics.registry import get_metric
from monitor.provenance import environment
from monitor.records import RunRecord
from monitor.scoring.api_tasks import (
    ApiScoring,
    PlannedRequest,
    api_scoring,
    record_from_row,
)
from monitor.snapshots.model import ApiSettings, ApiSource, Snapshot


def api_fingerprint(
    snapshot: Snapshot,
    method: Method,
    benches: Sequence[LoadedBenchmark],
    seed: int,
    option_order: str,
) -> str:
    """Identity of 'the same measurement' for resuming: model, endpoint, metric, items,
    prompt templates and sampling parameters; not concurrency, timeouts or budgets."""
    items = sorted(it.item_id for b in benches for it in b.items)
    scoring = _scoring(method.metric)
    return fingerprint(
        snapshot,
        method.metric,
        get_metric(method.metric).version,
        benches,
        RunOptions(seed=seed, device="api", dtype="n/a"),
        extra={
            "option_order": option_order,
            # A reworded prompt is a different measurement.
            "templates": scoring.templates,
            # What the family adds for these benchmarks (the pairs' Indic-Bias prompts,
            # only when used, so runs of the other benchmarks keep their fingerprints).
            **(scoring.fingerprint(benches) if scoring.fingerprint is not None else {}),
            "items": hashlib.sha256("\n".join(items).encode()).hexdigest(),
            **method.params(),
        },
    )


def _scoring(metric: str) -> ApiScoring:
    scoring = api_scoring(metric)
    if scoring is None:
        raise UserInputError(f"metric {metric!r} is not scored through a chat API")
    return scoring


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


def score_snapshot(ctx: JobContext) -> list[RunOutcome]:
    """Score one API snapshot ``options.repeat`` times (each repeat its own run)."""
    return drive(ctx, _open(ctx))


def _open(ctx: JobContext) -> _Plan | RunOutcome:
    """Open the client, print the whole plan's cost, probe for log-probabilities (and
    fall back to sampling without them): what every repeat shares. A client that cannot
    be made is a 'skipped' outcome, a probe that fails a 'failed' one, neither a run."""
    snapshot, options = ctx.snapshot, ctx.options
    settings = snapshot.api or ApiSettings()
    source = snapshot.source
    if not isinstance(source, ApiSource):
        raise UserInputError(f"snapshot {snapshot.id} has no openai-api source")
    metric = ctx.metric.name
    scoring = api_scoring(metric)
    if scoring is None:
        raise UserInputError(
            f"snapshot {snapshot.id}: kind {snapshot.kind} is scored with "
            f"{' or '.join(m for m in ctx.kind.metrics if api_scoring(m) is not None)}, "
            f"not {metric!r}"
        )
    try:
        api = make_client(snapshot.id, source, settings)
    except SnapshotUnavailable as exc:
        return RunOutcome(snapshot.id, None, "skipped", reason=str(exc))
    budget = RequestBudget(settings.request_budget, snapshot.id)
    on_event = _redacting(ctx.on_event, api.redact)  # every message from here on
    caller: ChatCaller = ctx.kind.load_backend()(api, budget=budget, on_event=on_event)
    items = ctx.items

    def plan_for(method: Method) -> dict[str, list[PlannedRequest]]:
        planner = api_scoring(method.metric) or scoring
        return planner.plan(
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
    if scoring.logprobs:
        budget.check_plan(1)
        try:
            probe = probe_logprobs(
                caller, top_logprobs=settings.top_logprobs, max_tokens=settings.max_tokens
            )
        except ApiError as exc:  # a wrong key, an outage: the run fails, with the reason
            return RunOutcome(
                snapshot.id,
                None,
                "failed",
                reason=api.redact(f"the start-of-run probe failed: {exc}"),
            )
        if not probe.accepted:
            if scoring.fallback is None:  # a family's log-prob metric without a sampled twin
                return RunOutcome(
                    snapshot.id,
                    None,
                    "failed",
                    reason=f"the model gives no log-probabilities ({probe.detail}) and "
                    f"{metric} has no sampling method to fall back to",
                )
            method = method_for(scoring.fallback, settings)
            fallback = (
                f"{snapshot.id}: the model gives no log-probabilities ({probe.detail}); "
                f"falling back to the sampling method ({method.metric}, {method.samples} "
                "samples per item and option order)"
            )
            on_event(fallback)
            plan = plan_for(method)

    return _Plan(
        ctx=ctx,
        settings=settings,
        api=api,
        caller=caller,
        budget=budget,
        on_event=on_event,
        method=method,
        plan=plan,
        fingerprint=api_fingerprint(
            snapshot, method, ctx.benches, options.seed, settings.option_order
        ),
        probe=probe,
        fallback=fallback,
        repeat_group=new_repeat_group(options.repeat),
        metric=method.metric,
        repeats=options.repeat,
    )


@dataclass
class _Plan:
    """What every repeat of one snapshot's API runs shares."""

    ctx: JobContext
    settings: ApiSettings
    api: ApiClient
    caller: ChatCaller
    budget: RequestBudget
    on_event: EventSink
    method: Method
    plan: dict[str, list[PlannedRequest]]
    fingerprint: str
    probe: ProbeResult | None
    fallback: str | None
    repeat_group: str | None
    metric: str  # the method's: the fallback's when the probe found no log-probabilities
    repeats: int

    def repeat(self, rep: int) -> _ApiRun:
        """Count what this repeat still has to ask (a killed run's stored answers are not
        asked again), print its cost and refuse it over budget, before anything is written."""
        store, snapshot, method, settings = (
            self.ctx.store,
            self.ctx.snapshot,
            self.method,
            self.settings,
        )
        owner = self.ctx.lifecycle.owner
        resumable = (
            store.peek_resumable(self.fingerprint, owner) if self.ctx.options.resume else None
        )
        already, stored = _stored_answers(store, resumable)
        todo_items = [it.item_id for it in self.ctx.items if it.item_id not in already]
        pending = [q for i in todo_items for q in self.plan[i] if q.key not in stored]
        estimate = estimate_cost(
            (q.prompt for q in pending),
            settings,
            max_output_tokens=method.max_tokens,
            batch=settings.batch_api,
        )
        self.on_event(
            f"{snapshot.id}: request budget/cost estimate for this run: {estimate.describe()}"
        )
        self.budget.check_plan(len(pending))  # refused before anything is written
        return _ApiRun(self, rep, resumable, stored, todo_items, pending, estimate.describe())


@dataclass
class _ApiRun(RunHooks):
    """One repeat: ask what is missing, store answers as they come, record usage."""

    p: _Plan
    rep: int
    resumable: str | None  # the run this repeat expected to resume when it was counted
    stored: dict[str, ResponseRecord]
    todo_items: list[str]
    pending: list[PlannedRequest]
    estimate: str
    session: ApiSession | None = None
    started_at: float = 0.0
    done: bool = False
    waiting: list[str] = field(default_factory=list)

    def resume_note(self, already: frozenset[str]) -> str:
        return f"resumed with {len(already)} items and {len(self.stored)} answers already stored"

    def new_record(self) -> RunRecord:
        p = self.p
        ctx, snapshot, method = p.ctx, p.ctx.snapshot, p.method
        env = environment() | torch_facts("api")
        env["api"] = _api_environment(
            snapshot, p.api, p.caller.endpoint, method, p.settings, p.probe, p.fallback
        )
        return new_run_record(
            snapshot,
            ctx.benches,
            ctx.options,
            metric=method.metric,
            metric_version=get_metric(method.metric).version,
            fingerprint=p.fingerprint,
            repeat_group=p.repeat_group,
            repeat_index=self.rep,
            device="api",
            dtype="n/a",
            batch_size=None,
            environment=env,
            origin=ctx.kind.origin,
            notes=p.fallback,
        )

    def start(self, run: OpenRun) -> None:
        p = self.p
        ctx, snapshot, store = p.ctx, p.ctx.snapshot, p.ctx.store
        if (
            run.run_id != self.resumable
        ):  # another process took that run meanwhile: ours is this one
            already, self.stored = _stored_answers(store, run.run_id if run.resumed else None)
            self.todo_items = [it.item_id for it in ctx.items if it.item_id not in already]
            self.pending = [
                q for i in self.todo_items for q in p.plan[i] if q.key not in self.stored
            ]
        if run.resumed:
            p.on_event(
                f"{snapshot.id}: {len(self.stored)} of {sum(len(v) for v in p.plan.values())} "
                "answers already stored"
            )
        advance = ctx.progress(f"{snapshot.id} #{self.rep + 1}", len(self.todo_items))
        self.started_at = time.perf_counter()
        self.session = ApiSession(
            store,
            run.run_id,
            snapshot,
            p.method,
            p.caller.endpoint,
            p.plan,
            self.stored,
            set(run.already_scored),
            p.on_event,
            advance,
            p.api.redact,
            probe_model=p.probe.reported_model if p.probe else None,
        )

    def redact(self, text: str) -> str:
        return self.p.api.redact(text)

    def before_close(self) -> None:
        if self.session is not None:
            self.session.flush()  # answers still buffered are written, however it ends

    def score(self, run: OpenRun) -> None:
        p, session, method, settings = self.p, self._session(), self.p.method, self.p.settings
        session.check_model()
        session.score_ready(self.todo_items)
        if settings.batch_api:
            self.done, self.waiting = run_batches(
                session, p.api, p.caller, self.pending, settings, p.on_event
            )
            return
        run_bounded(
            self.pending,
            lambda q: p.caller.call(method.request(q)),
            max_concurrency=settings.max_concurrency,
            on_result=session.on_result,
        )
        self.done = True

    def finish(self, run: OpenRun, attempt: Attempt) -> RunOutcome | None:
        """Store usage; a Batch API job still running leaves the run waiting, to be
        ingested by the next command; a changed system fingerprint becomes the note."""
        p, session, settings = self.p, self._session(), self.p.settings
        store, snapshot = p.ctx.store, p.ctx.snapshot
        elapsed = time.perf_counter() - self.started_at
        store.update_run_environment(
            run.run_id, _usage_patch(session, settings, elapsed, self.estimate)
        )
        if not self.done:
            note = (
                "waiting for Batch API job(s) "
                + ", ".join(self.waiting)
                + "; rerun the same command to ingest the answers"
            )
            store.set_status(run.run_id, "interrupted", note)
            p.ctx.lifecycle.release(run.run_id)
            p.on_event(f"{snapshot.id}: {note}")
            return RunOutcome(
                snapshot.id, run.run_id, "pending", reason=note, resumed_from=attempt.resumed_from
            )
        usage = session.usage.as_dict(settings, batch=settings.batch_api)
        cost = f"${usage['usd']:.4f}" if usage["usd"] is not None else "cost unknown"
        rate = session.usage.requests / elapsed if elapsed > 0 else 0.0
        p.on_event(
            f"{snapshot.id} run {run.run_id}: {session.usage.requests} requests "
            f"({session.usage.attempts} attempts) in {elapsed:.1f}s ({rate:.2f}/s), "
            f"{usage['input_tokens']} input + {usage['output_tokens']} output tokens, {cost}"
        )
        if len(session.fingerprints) > 1:  # kept as the run's note unless the gate fails it
            store.set_status(
                run.run_id,
                "running",
                "system_fingerprint changed during the run: " + " -> ".join(session.fingerprints),
            )
        return None

    def _session(self) -> ApiSession:
        assert self.session is not None, "start() makes the session before scoring"
        return self.session


def _stored_answers(store, run_id: str | None) -> tuple[set[str], dict[str, ResponseRecord]]:
    """Items already scored and answers already stored for a run being resumed."""
    if run_id is None:
        return set(), {}
    rows = sorted(store.api_requests(run_id, status="ok"), key=lambda r: r["created_at"])
    return store.scored_item_ids(run_id), {r["request_key"]: record_from_row(r) for r in rows}


def _usage_patch(
    session: ApiSession, settings: ApiSettings, elapsed: float, estimate: str
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
