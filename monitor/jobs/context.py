"""What a scoring driver is handed: the snapshot, its kind and metric, the items, the store."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from monitor.benchmarks.items import Item, LoadedBenchmark
from monitor.jobs.lifecycle import RunLifecycle
from monitor.jobs.options import EventSink, ProgressFactory, RunOptions
from monitor.jobs.run_record import new_run_record
from monitor.kinds import KindSpec
from monitor.metrics.registry import MetricSpec
from monitor.records import RunRecord
from monitor.snapshots.model import Snapshot
from monitor.store.db import Store


class Repeats(Protocol):
    """What a kind's scoring shares across its repeats: the runs' fingerprint and group."""

    fingerprint: str
    repeat_group: str | None


class Placed(Protocol):
    """Where a local backend computes: its device and dtype, recorded with each run."""

    device: str
    dtype: str


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

    def local_record(
        self,
        repeats: Repeats,
        rep: int,
        backend: Placed,
        *,
        batch_size: int | None,
        environment: dict[str, Any],
    ) -> RunRecord:
        """The record of repeat ``rep`` scored on a local backend with this job's metric:
        the one way the local driver and a family's own local driver (the embeddings')
        describe a new run."""
        return new_run_record(
            self.snapshot,
            self.benches,
            self.options,
            metric=self.metric.name,
            metric_version=self.metric.version,
            fingerprint=repeats.fingerprint,
            repeat_group=repeats.repeat_group,
            repeat_index=rep,
            device=backend.device,
            dtype=backend.dtype,
            batch_size=batch_size,
            environment=environment,
            origin=self.kind.origin,
        )
