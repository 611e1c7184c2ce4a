"""The reading protocol the report room is written against.

``monitor.store.view.StoreView`` implements it (a structural match: nothing registers),
so the report builds its input from a view without importing the store, and a test may
hand it any object with these methods. Only the reads the report makes are listed: a
reader that needs more (drift, the CLI) takes the ``StoreView`` itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from monitor.readmodel.models import (
    AxisKey,
    AxisOutcomes,
    ConfigurationGroup,
    StoredRun,
    TrendSeries,
    ValidationRow,
)
from monitor.records import Measure


class RunReader(Protocol):
    """Runs, their measures, history and validations, read through typed models."""

    def run(self, run_id: str) -> StoredRun: ...

    def runs(self, run_ids: Iterable[str]) -> dict[str, StoredRun]: ...

    def runs_since(self, since: datetime | None) -> list[StoredRun]: ...

    def configuration_groups(
        self, snapshot_id: str, metric: str | None = None
    ) -> list[ConfigurationGroup]: ...

    def axis_outcomes(self, run_id: str) -> dict[AxisKey, AxisOutcomes]: ...

    def prefetch_measures(self, run_ids: Iterable[str]) -> None: ...

    def measures(self, run_id: str) -> list[Measure]: ...

    def measure_trend(
        self, since: datetime | None, measure: str = "bias_rate"
    ) -> list[TrendSeries]: ...

    def latest_validations(self, since: datetime | None) -> list[ValidationRow]: ...
