"""The scoring driver for the Indic-Bias generation task: a model answers, a judge decides.

Two API snapshots take part: the one under test (any ``openai-chat`` or
``openai-responses`` kind, vLLM included) generates an answer to each scenario at the
given sampling temperature (the paper's 0.8 by default), and the judge (a pinned snapshot
of the same kinds) reads each answer and says which identity–stereotype associations it
makes (``judged``). The run belongs to the model under test; the judge's
snapshot, revision and reported model, and the temperature, are part of its fingerprint
and its recorded environment, so two runs judged differently are never paired as one
measurement.

The lifecycle is every run's (``monitor.jobs.lifecycle``): begin or resume, answers
stored in ``api_requests`` as they arrive (key ``<item>/generation/0`` and
``<item>/judge/0``), an item's score as soon as its verdict is in, a killed run resumed
without asking anything twice, measures from the stored rows, then the quality gate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.backends.api_client import RequestBudget, make_client, run_bounded
from monitor.backends.device_facts import torch_facts
from monitor.backends.openai_chat import ChatCaller, ChatRequest, ResponseRecord
from monitor.benchmarks.items import Item, LoadedBenchmark
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.families.pairs import judged
from monitor.jobs.context import JobContext
from monitor.jobs.driver import RunHooks, drive
from monitor.jobs.lifecycle import OpenRun, RunLifecycle
from monitor.jobs.options import EventSink, ProgressFactory, RunOptions, RunOutcome
from monitor.jobs.run_record import fingerprint, new_run_record
from monitor.kinds import get_kind
from monitor.metrics.forced_choice import Option
from monitor.metrics.registry import get_metric
from monitor.provenance import environment
from monitor.records import RunRecord
from monitor.scoring.api_tasks import PlannedRequest, record_from_row, request_row
from monitor.snapshots.model import ApiSettings, ApiSource, Snapshot
from monitor.store.db import Store

CHAT_KINDS = ("openai-chat", "openai-responses")
GENERATION, JUDGE = "generation", "judge"
DEFAULT_MAX_TOKENS = 512
JUDGE_MAX_TOKENS = 400


@dataclass
class _Party:
    """One API snapshot taking part: its client, caller and settings."""

    snapshot: Snapshot
    settings: ApiSettings
    caller: ChatCaller
    redact: Any


def _party(snapshot: Snapshot, on_event: EventSink, role: str) -> _Party:
    if snapshot.kind not in CHAT_KINDS:
        raise UserInputError(
            f"{role} snapshot {snapshot.id} is of kind {snapshot.kind}; the generation task "
            f"needs one of {', '.join(CHAT_KINDS)} (a chat model, e.g. served by vLLM)"
        )
    settings = snapshot.api or ApiSettings()
    source = snapshot.source
    if not isinstance(source, ApiSource):
        raise UserInputError(f"snapshot {snapshot.id} has no openai-api source")
    api = make_client(snapshot.id, source, settings)
    budget = RequestBudget(settings.request_budget, snapshot.id)
    caller = get_kind(snapshot.kind).load_backend()(api, budget=budget, on_event=on_event)
    return _Party(snapshot, settings, caller, api.redact)


def _planned(item: Item, stage: str, prompt: str) -> PlannedRequest:
    p = item.payload
    template = judged.GENERATION_TEMPLATE if stage == GENERATION else judged.JUDGE_TEMPLATE
    return PlannedRequest(
        key=f"{item.item_id}/{stage}/0",
        item_id=item.item_id,
        order=stage,
        sample=0,
        template_id=template,
        prompt=prompt,
        options=(Option("stereo", p["identity_1"]), Option("anti", p["identity_2"])),
    )


def score_judged(
    store: Store,
    snapshot: Snapshot,
    judge: Snapshot,
    benches: Sequence[LoadedBenchmark],
    options: RunOptions,
    *,
    temperature: float,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    judge_max_tokens: int = JUDGE_MAX_TOKENS,
    on_event: EventSink = lambda _m: None,
    progress_factory: ProgressFactory | None = None,
) -> RunOutcome:
    """Generate, judge and score every item of ``benches`` (kind ``judged-generation``).

    One run, whatever ``options.repeat`` says: a repeat would sample new answers and
    judge them again, which the generation task does not ask for."""
    ctx = JobContext(
        store=store,
        lifecycle=RunLifecycle(store, on_event),
        snapshot=snapshot,
        kind=get_kind(snapshot.kind),
        metric=get_metric(judged.METRIC),
        benches=list(benches),
        options=options,
        on_event=on_event,
        progress_factory=progress_factory,
    )
    stages = _Stages(temperature, max_tokens, judge_max_tokens)
    (outcome,) = drive(ctx, _open(ctx, judge, stages))
    return outcome


@dataclass(frozen=True)
class _Stages:
    """The sampling of the two stages: the answer's temperature and both token limits."""

    temperature: float
    max_tokens: int
    judge_max_tokens: int


def _open(ctx: JobContext, judge: Snapshot, stages: _Stages) -> _Judged | RunOutcome:
    """Make both parties' clients, or say why this snapshot is skipped."""
    snapshot, options = ctx.snapshot, ctx.options
    try:
        gen = _party(snapshot, ctx.on_event, "the")
        jud = _party(judge, ctx.on_event, "judge")
    except SnapshotUnavailable as exc:
        return RunOutcome(snapshot.id, None, "skipped", reason=str(exc))
    params = {
        "judge": judge.revision_label,
        "judge_snapshot": judge.id,
        "temperature": stages.temperature,
        "max_tokens": stages.max_tokens,
        "judge_max_tokens": stages.judge_max_tokens,
        "judge_prompt": judged.JUDGE_PROMPT,
    }
    fp = fingerprint(
        snapshot,
        judged.METRIC,
        judged.METRIC_VERSION,
        ctx.benches,
        RunOptions(seed=options.seed, device="api", dtype="n/a"),
        extra=params,
    )
    return _Judged(ctx, judge, stages, gen, jud, params, fingerprint=fp)


@dataclass
class _Judged:
    """Both parties' clients and what the run's record and fingerprint say of them."""

    ctx: JobContext
    judge: Snapshot
    stages: _Stages
    gen: _Party
    jud: _Party
    params: dict[str, Any]
    fingerprint: str
    metric: str = judged.METRIC
    repeats: int = 1

    def repeat(self, rep: int) -> _JudgedRun:
        return _JudgedRun(self)


@dataclass
class _JudgedRun(RunHooks):
    """The run: answers, then verdicts, each stored as it arrives, then the scores."""

    j: _Judged
    stored: dict[str, ResponseRecord] = field(default_factory=dict)
    todo: list[Item] = field(default_factory=list)
    advance: Callable[[int], None] | None = None

    def new_record(self) -> RunRecord:
        j = self.j
        snapshot, judge = j.ctx.snapshot, j.judge
        env = environment() | torch_facts("api")
        env["api"] = {
            "endpoint": j.gen.caller.endpoint,
            "requested_model": getattr(snapshot.source, "model", None),
            "method": judged.METRIC,
            "request_params": {k: v for k, v in j.params.items() if k != "judge_prompt"},
            "judge": {
                "snapshot": judge.id,
                "revision": judge.revision_label,
                "kind": judge.kind,
                "endpoint": j.jud.caller.endpoint,
            },
        }
        return new_run_record(
            snapshot,
            j.ctx.benches,
            j.ctx.options,
            metric=judged.METRIC,
            metric_version=judged.METRIC_VERSION,
            fingerprint=j.fingerprint,
            repeat_group=None,
            repeat_index=0,
            device="api",
            dtype="n/a",
            batch_size=None,
            environment=env,
            origin="api",
        )

    def start(self, run: OpenRun) -> None:
        ctx = self.j.ctx
        self.stored = {
            r["request_key"]: record_from_row(r)
            for r in ctx.store.api_requests(run.run_id, status="ok")
        }
        self.todo = [it for it in ctx.items if it.item_id not in run.already_scored]
        self.advance = ctx.progress(
            f"{ctx.snapshot.id} (judged by {self.j.judge.id})", len(self.todo)
        )

    def redact(self, text: str) -> str:
        return self.j.jud.redact(self.j.gen.redact(text))

    def score(self, run: OpenRun) -> None:
        j, stored, todo = self.j, self.stored, self.todo
        ctx, gen, jud, stages = j.ctx, j.gen, j.jud, j.stages
        temperature, seed = stages.temperature, ctx.options.seed
        # 1. answers of the model under test, sampled at the recorded temperature
        asks = [
            _planned(it, GENERATION, it.text_stereo)
            for it in todo
            if f"{it.item_id}/{GENERATION}/0" not in stored
        ]
        ctx.on_event(
            f"{ctx.snapshot.id}: {len(asks)} generation requests (temperature "
            f"{temperature:g}) and up to {len(todo)} judge requests to {j.judge.id}"
        )

        def keep(stage_params: dict[str, Any], party: _Party):
            def on_result(q: PlannedRequest, rec: ResponseRecord) -> None:
                stored[q.key] = rec
                row = request_row(
                    q,
                    rec,
                    endpoint=party.caller.endpoint,
                    params=stage_params,
                    redact=self.redact,
                )
                ctx.store.add_api_requests(run.run_id, [row])

            return on_result

        max_tokens, judge_max_tokens = stages.max_tokens, stages.judge_max_tokens
        gen_params = ChatRequest("", "", max_tokens, temperature, None, seed).params()
        run_bounded(
            asks,
            lambda q: gen.caller.call(
                ChatRequest(q.key, q.prompt, max_tokens, temperature, None, seed)
            ),
            max_concurrency=gen.settings.max_concurrency,
            on_result=keep(gen_params, gen),
        )
        # 2. the judge's verdicts, at temperature 0
        verdicts = []
        for it in todo:
            answer = stored.get(f"{it.item_id}/{GENERATION}/0")
            if answer is None or f"{it.item_id}/{JUDGE}/0" in stored:
                continue
            prompt = judged.judge_prompt(it.text_stereo, answer.text, it.payload["true_pairs"])
            verdicts.append(_planned(it, JUDGE, prompt))
        judge_params = ChatRequest("", "", judge_max_tokens, 0.0, None, seed).params()
        run_bounded(
            verdicts,
            lambda q: jud.caller.call(
                ChatRequest(q.key, q.prompt, judge_max_tokens, 0.0, None, seed)
            ),
            max_concurrency=jud.settings.max_concurrency,
            on_result=keep(judge_params, jud),
        )
        # 3. scores, from the stored verdicts
        rows = [
            judged.judged_row(
                it.item_id, stored[f"{it.item_id}/{JUDGE}/0"].text, temperature=temperature
            )
            for it in todo
            if f"{it.item_id}/{JUDGE}/0" in stored
        ]
        ctx.store.add_scores(run.run_id, rows)
        if self.advance is not None:
            self.advance(len(rows))
