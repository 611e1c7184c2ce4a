"""``run`` as a function: plan the request, then score each snapshot and collect what
every run reports. Nothing is printed; the caller hears progress through ``RunEvents``."""

from __future__ import annotations

from monitor.app.family_hooks import score_judged_generation
from monitor.app.run_plan import RunPlan, plan_run
from monitor.app.run_request import RunEvents, RunRequest, RunResult
from monitor.families.pairs.run_options import PairRunOptions
from monitor.jobs.options import RunOutcome
from monitor.store.db import Store


def run(request: RunRequest, events: RunEvents | None = None) -> RunResult:
    """Score the request's snapshots on its benchmarks and store every item score.

    Every input is checked before the store is opened (a ``UserInputError`` leaves it
    untouched). When no snapshot applies (all skipped under ``only_applicable``) the
    result is empty and nothing is opened.
    """
    events = events or RunEvents()
    plan = plan_run(request, events)
    if not plan.snapshots:
        return RunResult(outcomes=[], benchmarks=plan.benches, snapshots=[])
    store = Store.open(plan.db_path)
    outcomes = _score(store, plan, request.family(PairRunOptions), events)
    return RunResult(
        outcomes=outcomes, benchmarks=plan.benches, snapshots=[s.id for s in plan.snapshots]
    )


def _score(
    store: Store, plan: RunPlan, pairs: PairRunOptions, events: RunEvents
) -> list[RunOutcome]:
    """Each snapshot in turn: its benchmarks by its kind's driver, then the judged
    generation task (when asked) as a run of its own."""
    from monitor.jobs.run import run_snapshot

    outcomes: list[RunOutcome] = []
    with events.progress() as factory:
        for snap in plan.snapshots:
            if plan.benches:
                outcomes += run_snapshot(
                    store,
                    snap,
                    plan.benches,
                    plan.options,
                    on_event=events.on_event,
                    progress_factory=factory,
                    metric=plan.metrics[snap.id],
                )
            if plan.generation:
                outcomes.append(
                    score_judged_generation(
                        store,
                        snap,
                        plan.judge,
                        plan.generation,
                        plan.options,
                        temperature=pairs.temperature,
                        max_tokens=pairs.generation_max_tokens,
                        judge_max_tokens=pairs.judge_max_tokens,
                        on_event=events.on_event,
                        progress_factory=factory,
                    )
                )
    return outcomes
