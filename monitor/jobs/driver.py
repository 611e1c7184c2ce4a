"""The one scoring loop; each kind of snapshot supplies what differs as hooks.

Every scoring driver does the same around its own work: open the backend or client once
(a snapshot that cannot be had here is a 'skipped' outcome, not a run), then for each
repeat open a run (begin, or resume a killed one: ``RunLifecycle.open``), score inside
``RunLifecycle.attempt`` (which turns an error into the run's status), and finalise it
from its stored rows through the quality gate. That loop is written here once, so a
change to resuming, leases or how a failure is recorded reaches local, embedding, chat
API and judged runs alike.

What differs between kinds is named in two small protocols rather than switched on by
flags, and each driver module implements them in plain view:

* :class:`KindScoring` — one snapshot's scoring once its backend or client is open: the
  fingerprint its runs are resumed by, the metric they are finalised with, how many
  repeats, and the hooks of each repeat;
* :class:`RunHooks` — one repeat: its new run record, what it does once its run is open
  (progress, what a resume changes), how it scores into the store, how its errors are
  redacted and what must be written before the run closes, and what it records after
  scoring (an API run's usage; a Batch API run that waits ends there, unfinalised).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from monitor.jobs.context import JobContext
from monitor.jobs.hold import hold_at
from monitor.jobs.lifecycle import Attempt, OpenRun
from monitor.jobs.options import RunOutcome
from monitor.jobs.reuse import find_reusable
from monitor.records import RunRecord


class RunHooks(Protocol):
    """One repeat of a kind's scoring, from before its run is opened to its finalise.

    A driver subclasses this protocol explicitly to inherit the defaults of the optional
    hooks (no resume note of its own, nothing to do once open, no redaction, nothing held
    in memory, nothing to record after scoring)."""

    #: The status note of a resumed run, from the item ids it already holds; ``None``
    #: keeps the lifecycle's own ("resumed with N items already stored").
    resume_note: Callable[[frozenset[str]], str] | None = None

    def new_record(self) -> RunRecord:
        """The provenance record of a new run (not called when a killed run is resumed)."""
        ...

    def start(self, run: OpenRun) -> None:
        """After the run is open, before scoring: progress, and what a resume changes."""

    def score(self, run: OpenRun) -> None:
        """Score into the store for ``run``; called inside the run's attempt, so an error
        here becomes the run's status (see ``monitor.jobs.lifecycle``)."""
        ...

    def redact(self, text: str) -> str:
        """Clean a failure reason before it is stored or shown (an API may echo a key)."""
        return text

    def before_close(self) -> None:
        """Write what is still held in memory; runs first however the attempt ends."""

    def finish(self, run: OpenRun, attempt: Attempt) -> RunOutcome | None:
        """After a clean attempt, before finalise: record what scoring learned. An outcome
        returned here ends the repeat without finalising (a Batch API job still running)."""
        return None


class KindScoring(Protocol):
    """One snapshot's scoring by one kind, its backend or client already open."""

    #: Identity of "the same measurement": a killed run with it is resumed.
    fingerprint: str
    #: The metric every run is finalised with (an API run's may be its fallback's).
    metric: str
    #: How many runs to score (each repeat is its own run).
    repeats: int

    def repeat(self, rep: int) -> RunHooks:
        """The hooks of repeat ``rep``; made before its run is opened, so a refusal here
        (an API run over its request budget) leaves nothing written."""
        ...


def drive(ctx: JobContext, scoring: KindScoring | RunOutcome) -> list[RunOutcome]:
    """Score ``scoring.repeats`` runs of ``ctx.snapshot``; a ``RunOutcome`` in place of
    the scoring (the kind could not open its backend) is the only outcome."""
    if isinstance(scoring, RunOutcome):
        return [scoring]
    first = scoring.repeat(0) if scoring.repeats else None
    if first is not None and _may_reuse(ctx, scoring):
        reused = find_reusable(ctx.store, first.new_record(), ctx.on_event)
        if reused is not None:
            return [reused]
    outcomes: list[RunOutcome] = []
    for rep in range(scoring.repeats):
        hooks = first if rep == 0 and first is not None else scoring.repeat(rep)
        hold_at("opening", ctx.snapshot.id)  # a test's fixed point: loaded, nothing claimed
        run = ctx.lifecycle.open(
            fingerprint=scoring.fingerprint,
            resume=ctx.options.resume,
            items=ctx.items,
            benches=ctx.benches,
            new_record=hooks.new_record,
            resume_note=hooks.resume_note,
        )
        hooks.start(run)
        with ctx.lifecycle.attempt(
            run, ctx.snapshot.id, redact=hooks.redact, before_close=hooks.before_close
        ) as attempt:
            hold_at("scoring", run.run_id)  # a test's fixed point: open, leased, unscored
            hooks.score(run)
        if attempt.outcome is not None:
            outcomes.append(attempt.outcome)
            continue
        ended = hooks.finish(run, attempt)
        if ended is not None:
            outcomes.append(ended)
            continue
        outcomes.append(
            ctx.lifecycle.finalise(
                run.run_id,
                ctx.items,
                metric=scoring.metric,
                snapshot_id=ctx.snapshot.id,
                n_excluded=ctx.n_excluded,
                resumed_from=attempt.resumed_from,
            )
        )
    return outcomes


def _may_reuse(ctx: JobContext, scoring: KindScoring) -> bool:
    """A pull request's single run may reuse a trusted run of the same measurement
    (``monitor.jobs.reuse``); ``--repeat N`` asks for N new runs, never a reused one."""
    return ctx.options.reuse and ctx.options.origin == "pull-request" and scoring.repeats == 1
