"""Typed read models: what the store hands the rooms that read it.

Drift, the quality gate, the reports and the CLI never see a database connection or a
SQL row; they get these shapes from :class:`monitor.store.view.StoreView`. Keeping the
shapes here (rather than in each reader) is what lets the schema change without edits
across rooms: a column moves, one query and one model change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from monitor.readmodel.configuration import configuration_key, measurement_configuration

if TYPE_CHECKING:
    import pandas as pd

AxisKey = tuple[str, str]  # (benchmark, axis)


@dataclass(frozen=True)
class StoredRun:
    """One ``runs`` row, JSON columns parsed and timestamps aware (UTC).

    The typed attributes are what readers decide on; ``fields`` holds every column, for
    the provenance diff, which lists every field that differs whatever it is. Read-only,
    nested values included: runs read together share a repeated JSON column's value.
    """

    run_id: str
    snapshot_id: str
    snapshot_kind: str
    snapshot_revision: str
    metric: str
    metric_version: str
    status: str
    origin: str
    started_at: datetime
    finished_at: datetime | None
    repeat_group: str | None
    repeat_index: int
    fingerprint: str
    notes: str | None
    fields: Mapping[str, Any] = field(repr=False)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> StoredRun:
        return cls(
            run_id=row["run_id"],
            snapshot_id=row["snapshot_id"],
            snapshot_kind=row["snapshot_kind"],
            snapshot_revision=row["snapshot_revision"],
            metric=row["metric"],
            metric_version=row["metric_version"],
            status=row["status"],
            origin=row["origin"],
            started_at=row["started_at"],
            finished_at=row.get("finished_at"),
            repeat_group=row.get("repeat_group"),
            repeat_index=row.get("repeat_index") or 0,
            fingerprint=row["fingerprint"],
            notes=row.get("notes"),
            fields=MappingProxyType(dict(row)),
        )

    def __getitem__(self, column: str) -> Any:
        """``run["environment"]``: any column by name, as the row had it."""
        return self.fields[column]

    @property
    def configuration(self) -> dict[str, Any]:
        """The measurement configuration (``monitor.readmodel.configuration``)."""
        return measurement_configuration(self.fields)

    @cached_property
    def configuration_key(self) -> str:
        """The configuration's key, computed once per run: a year's report asks for the
        key of each of its thousands of runs several times (groups, breaks, trends)."""
        return configuration_key(self.configuration)


@dataclass(frozen=True)
class ConfigurationGroup:
    """Complete runs of one snapshot with one measurement configuration, oldest first.

    Runs that share a ``--repeat`` group always belong to one configuration group.
    A group of two or more runs is a *repeat group*: its disagreements are noise.
    Quarantined and unfinished runs are never members.
    """

    snapshot_id: str
    key: str
    configuration: Mapping[str, Any]
    run_ids: tuple[str, ...]
    started_at: tuple[datetime, ...]

    @property
    def is_repeat_group(self) -> bool:
        return len(self.run_ids) >= 2

    @property
    def latest(self) -> str:
        return self.run_ids[-1]


@dataclass
class AxisOutcomes:
    """One run's outcomes on one (benchmark, axis): item id → outcome, and the benchmark
    source versions (without errata) those items came from."""

    outcomes: dict[str, str] = field(default_factory=dict)
    benchmark_versions: set[str] = field(default_factory=set)
    # Per-item score difference (stereo − anti; metric-specific units) where stored, and
    # the template each item was filled from: items that share a template (India_Religious
    # repeats sentences with other targets) are one cluster for intervals and tests. Items
    # without a template are absent here, and each is a cluster of its own.
    deltas: dict[str, float | None] = field(default_factory=dict)
    templates: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class OutcomeShares:
    """How one run's items on one (benchmark, axis) ended: the counts the quality gate
    compares with the snapshot's history (coverage = decided / n)."""

    run_id: str
    benchmark: str
    axis: str
    n: int
    decided: int  # any outcome outside records.UNDECIDED_OUTCOMES
    refusal: int
    ambiguous: int
    other: int


@dataclass
class TestTerms:
    """One run's scored terms of one association test (benchmark, test): item id → (set,
    s(w, A, B)) for the target words it could embed, and the benchmark source versions."""

    targets: dict[str, tuple[str, float]] = field(default_factory=dict)
    benchmark_versions: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class TrendSeries:
    """One measure over time for one snapshot × benchmark axis × metric, oldest first,
    column by column: entry ``i`` of every tuple is one complete run's value (complete
    runs only, so a series has no status column).

    Columns, not a row object per run: a year of nightly runs is ~150k values, most of
    which a report folds into summary points (``report.history.condense``), and a
    Python object per value cost more than reading, condensing and rendering together.
    """

    snapshot_id: str
    benchmark: str
    axis: str
    metric: str
    run_ids: tuple[str, ...]
    started_at: tuple[datetime, ...]
    values: tuple[float | None, ...]
    ci_lows: tuple[float | None, ...]
    ci_highs: tuple[float | None, ...]
    ns: tuple[int | None, ...]


@dataclass(frozen=True)
class ValidationRow:
    """The latest result of one quality suite for one run."""

    run_id: str
    suite: str
    success: bool
    results: dict[str, Any]


@dataclass(frozen=True)
class ResultFrames:
    """One run as the results quality suite reads it: the run row, its score rows (with
    ``<column>_finite`` flags, since pandas cannot tell NULL from NaN) and its measures.
    Benchmark text is never included."""

    run: pd.DataFrame
    scores: pd.DataFrame
    measures: pd.DataFrame
