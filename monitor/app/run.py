"""``run`` as a function: plan the request, then score each snapshot and collect what
every run reports. Nothing is printed; the caller hears progress through ``RunEvents``."""

from __future__ import annotations

from monitor.app.run_plan import RunPlan, plan_run
from monitor.app.run_request import RunEvents, RunRequest, RunResult
from monitor.contract.capabilities import TaskRequest
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
    outcomes = _score(store, plan, events)
    return RunResult(
        outcomes=outcomes, benchmarks=plan.benches, snapshots=[s.id for s in plan.snapshots]
    )


def _score(store: Store, plan: RunPlan, events: RunEvents) -> list[RunOutcome]:
    """Each snapshot in turn: its benchmarks by its kind's driver, then each task a
    family scores itself (the families' ``Run.add``) as a run of its own."""
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
            for task in plan.tasks:
                outcomes.append(
                    task(TaskRequest(store, snap, plan.options, events.on_event, factory))
                )
    return outcomes
