"""The scoring driver for kinds scored from token log-probabilities.

Local transformers models (``hf-causal``, ``hf-mlm``) and open models served by vLLM
(``openai-completions``) differ only in their backend; the metric code, the chunking
that makes scores reproducible and the run lifecycle are the same. A backend that can
say what answered it (``provenance()``, the remote one) has that stored with the run.

Scored rows reach the store at most every ``FLUSH_SECONDS`` (``TimedWrites``), not after
every chunk: each ``add_scores`` opens the DuckDB file, commits and checkpoints (66 ms
a call on the GPU machine), which on a GPU cost 85 of the 245 s of the full English
BharatBBQ (1,293 calls of 42 questions). On a CPU a chunk takes longer than that, so
every chunk is still written as soon as it is scored. What was scored is written
before an error or an interrupt ends the run, so a resumed run redoes nothing stored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

from monitor.backends.device_facts import torch_facts, weights_facts
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.jobs.context import JobContext
from monitor.jobs.driver import RunHooks, drive
from monitor.jobs.hold import hold_at
from monitor.jobs.lifecycle import OpenRun
from monitor.jobs.options import RunOutcome
from monitor.jobs.run_record import (
    fingerprint,
    new_repeat_group,
    panel_provenance,
)
from monitor.provenance import environment
from monitor.records import RunRecord, ScoreRow
from monitor.scoring.coverage import unreadable
from monitor.scoring.score import scoring_provenance
from monitor.scoring.tokenizer_facts import tokenizer_facts

FLUSH_SECONDS = 2.0


@dataclass
class TimedWrites:
    """Rows for ``write`` kept until ``seconds`` have passed since the last write (or the
    run's start), then written together; ``flush`` writes what is left. Fewer, larger
    store transactions where chunks come fast (a GPU), unchanged where they are slow."""

    write: Callable[[list[ScoreRow]], object]
    seconds: float = FLUSH_SECONDS
    rows: list[ScoreRow] = field(default_factory=list)
    last: float = field(default_factory=time.monotonic)
    writes: int = 0

    def __call__(self, rows: list[ScoreRow]) -> None:
        self.rows.extend(rows)
        if time.monotonic() - self.last >= self.seconds:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            rows, self.rows = self.rows, []
            self.write(rows)
            self.writes += 1
        self.last = time.monotonic()


def score_snapshot(ctx: JobContext) -> list[RunOutcome]:
    """Score ``ctx.snapshot`` ``options.repeat`` times; every repeat is its own run.

    Weights that cannot be had here, and a tokenizer that cannot represent a benchmark's
    script (``monitor.scoring.coverage``), turn into a 'skipped' outcome with the reason,
    never a silent failure or a score of byte fragments (a family that skips unreadable
    benchmarks has the rest scored: the opened job's context holds them).
    """
    opened = _open(ctx)
    return drive(opened.ctx if isinstance(opened, _LocalScoring) else ctx, opened)


def _open(ctx: JobContext) -> _LocalScoring | RunOutcome:
    """Load the backend once for every repeat, or say why this snapshot is skipped."""
    snapshot, options, spec = ctx.snapshot, ctx.options, ctx.metric
    # Each family scores its items itself (same arguments): the pairs through their
    # request planners and the metric panel; choice-QA packs an item's options into one
    # forward pass. The kinds offer only metrics whose family can (tests/test_kinds.py).
    score = spec.family.scoring().local
    if score is None:
        raise UserInputError(f"metric {spec.name}: {spec.family.name} results are not scored here")
    try:
        backend = ctx.kind.load_backend()(
            snapshot, device=options.device, dtype=options.dtype, on_event=ctx.on_event
        )
    except SnapshotUnavailable as exc:
        return RunOutcome(snapshot.id, None, "skipped", reason=str(exc))
    refused = unreadable(backend, ctx.benches)
    skips = spec.family.skips_unreadable
    kept = [b for b in ctx.benches if b.benchmark not in refused]
    if refused and not (skips and kept):  # refused before a run is recorded
        why = "; ".join(refused.values()) if skips else next(iter(refused.values()))
        return RunOutcome(snapshot.id, None, "skipped", reason=f"{snapshot.id}: {why}")
    for reason in refused.values():  # the family's skips, each named, the rest scored
        ctx.on_event(f"{snapshot.id}: skipped: {reason}")
    if refused:
        ctx = replace(ctx, benches=kept)
    return _LocalScoring(
        ctx,
        backend,
        score=score,
        fingerprint=fingerprint(snapshot, spec.name, spec.version, ctx.benches, options),
        metric=spec.name,
        repeats=options.repeat,
        repeat_group=new_repeat_group(options.repeat),
        skipped=refused,
    )


@dataclass
class _LocalScoring:
    """A loaded log-prob backend and what every repeat of its runs shares."""

    ctx: JobContext
    backend: Any
    score: Callable[..., Any]
    fingerprint: str
    metric: str
    repeats: int
    repeat_group: str | None
    skipped: dict[str, str] = field(default_factory=dict)  # benchmark -> why, not scored

    def repeat(self, rep: int) -> _LocalRun:
        return _LocalRun(self, rep)


@dataclass
class _LocalRun(RunHooks):
    """One repeat: items scored in fixed chunks, each batch of rows stored as it is done."""

    shared: _LocalScoring
    rep: int
    advance: Callable[[int], None] | None = None

    def new_record(self) -> RunRecord:
        ctx, backend, options, spec = (
            self.shared.ctx,
            self.shared.backend,
            self.shared.ctx.options,
            self.shared.ctx.metric,
        )
        return ctx.local_record(
            self.shared,
            self.rep,
            backend,
            # What was used, also when the backend's default was: "None" would not
            # say how the scores were batched (float32 results depend on it).
            batch_size=options.batch_size or getattr(backend, "batch_size", None),
            # Prefix sharing, chunking and batch shape decide the last bits of a score.
            environment={
                **environment(),
                **torch_facts(backend.device),
                **weights_facts(backend),
                "scoring": {
                    **scoring_provenance(backend),
                    "panel": options.panel,
                    **panel_provenance(spec.name, options),
                },
                # What drift needs to tell which metrics are valid for this model
                # (BOS, script); a served model has no local tokenizer to ask.
                **(
                    {"tokenizer": tokenizer_facts(backend.tokenizer, ctx.benches)}
                    if getattr(backend, "tokenizer", None) is not None
                    else {}
                ),
                **({"skipped_benchmarks": self.shared.skipped} if self.shared.skipped else {}),
            },
        )

    def start(self, run: OpenRun) -> None:
        ctx = self.shared.ctx
        todo = len(ctx.items) - len(run.already_scored & {it.item_id for it in ctx.items})
        self.advance = ctx.progress(f"{ctx.snapshot.id} #{self.rep + 1}", todo)

    def score(self, run: OpenRun) -> None:
        ctx, backend = self.shared.ctx, self.shared.backend
        writes = TimedWrites(lambda rows: ctx.store.add_scores(run.run_id, rows))
        stored = len(run.already_scored)

        def on_batch(rows: list[ScoreRow]) -> None:
            nonlocal stored
            writes(rows)
            stored += len(rows)
            hold_at("stored", run.run_id, stored=stored, prepare=writes.flush)  # tests only

        try:
            self.shared.score(
                backend,
                ctx.items,
                ctx.metric.name,
                batch_size=ctx.options.batch_size,
                progress=self.advance,
                already_scored=run.already_scored,
                on_batch=on_batch,
                panel=ctx.options.panel,
                panel_metrics=ctx.options.panel_metrics,
            )
        except BaseException:
            # Keep what was scored before the error or Ctrl-C (the run resumes from it);
            # a store that fails again here must not hide the first error.
            with suppress(Exception):
                writes.flush()
            raise
        writes.flush()
        served_by = getattr(backend, "provenance", None)
        if callable(served_by):  # a remote backend: what answered, for the record
            ctx.store.update_run_environment(run.run_id, {"api": served_by()})
