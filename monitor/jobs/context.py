"""What a scoring driver is handed: the snapshot, its kind and metric, the items, the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from monitor.benchmarks.items import Item, LoadedBenchmark
from monitor.jobs.lifecycle import RunLifecycle
from monitor.jobs.options import EventSink, ProgressFactory, RunOptions
from monitor.kinds import KindSpec
from monitor.metrics.registry import MetricSpec
from monitor.snapshots.model import Snapshot
from monitor.store.db import Store


@dataclass
class JobContext:
    """One snapshot's scoring job (all of its repeats)."""

    store: Store
    lifecycle: RunLifecycle
    snapshot: Snapshot
    kind: KindSpec
    metric: MetricSpec
    benches: list[LoadedBenchmark]
    options: RunOptions
    on_event: EventSink
    progress_factory: ProgressFactory | None = None

    @cached_property
    def items(self) -> list[Item]:
        """The items to score; a metric that reproduces code which scored every source row
        (``cll-reference``) also gets the rows our loader excludes."""
        extra = self.metric.scores_excluded_rows
        return [it for b in self.benches for it in (*b.items, *(b.reference_rows if extra else ()))]

    @property
    def n_excluded(self) -> int:
        return sum(len(b.exclusions) for b in self.benches)

    def progress(self, label: str, total: int) -> Callable[[int], None] | None:
        return self.progress_factory(label, total) if self.progress_factory else None
