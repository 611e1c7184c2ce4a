"""``run_snapshot``: score one snapshot by its kind's driver (``monitor.kinds``)."""

from __future__ import annotations

from monitor.benchmarks.items import LoadedBenchmark
from monitor.jobs.context import JobContext
from monitor.jobs.lifecycle import RunLifecycle
from monitor.jobs.options import EventSink, ProgressFactory, RunOptions, RunOutcome
from monitor.kinds import KindSpec, get_kind
from monitor.metrics.registry import get_metric
from monitor.snapshots.model import Snapshot
from monitor.store.db import Store

# An API snapshot's ``[api] method`` names its preferred metric among its kind's.
METHOD_METRIC = {"forced-choice": "forced-choice", "sampling": "sampled-choice"}


def metric_for(snapshot: Snapshot, kind: KindSpec, requested: str | None) -> str:
    """The metric a run of ``snapshot`` uses: the one asked for (checked against the
    kind), else the snapshot's ``[api] method``, else the kind's default."""
    if requested is not None:
        get_metric(requested)  # unknown name: one clear error listing the known ones
        return kind.check_metric(requested, snapshot.id)
    preferred = METHOD_METRIC.get(snapshot.api.method) if snapshot.api else None
    return preferred if preferred in kind.metrics else kind.default_metric


def run_snapshot(
    store: Store,
    snapshot: Snapshot,
    benches: list[LoadedBenchmark],
    options: RunOptions,
    *,
    on_event: EventSink = lambda _msg: None,
    progress_factory: ProgressFactory | None = None,
) -> list[RunOutcome]:
    """Score one snapshot ``options.repeat`` times (each repeat its own run)."""
    kind = get_kind(snapshot.kind)
    ctx = JobContext(
        store=store,
        lifecycle=RunLifecycle(store, on_event),
        snapshot=snapshot,
        kind=kind,
        metric=get_metric(metric_for(snapshot, kind, options.metric)),
        benches=benches,
        options=options,
        on_event=on_event,
        progress_factory=progress_factory,
    )
    return kind.load_driver()(ctx)
