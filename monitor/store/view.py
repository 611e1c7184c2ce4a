"""``StoreView``: a consistent, read-only look at the store for the rooms that read it.

Drift, the quality gate, the reports and the CLI read through one of these. It holds a
single connection for its lifetime (so a drift session sees one consistent state and
pays DuckDB's open cost once) and hands out typed models only: no connection, cursor or
SQL leaves the store room.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import duckdb

from monitor.records import Measure
from monitor.store import codec, queries, reads
from monitor.store.models import (
    AxisKey,
    AxisOutcomes,
    ConfigurationGroup,
    OutcomeShares,
    ResultFrames,
    StoredRun,
    TestTerms,
    TrendRow,
    ValidationRow,
)


class StoreView:
    """Typed reads over one open connection (see the module docstring)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    # runs
    def run(self, run_id: str) -> StoredRun:
        """The run with exactly this id (``UserInputError`` if none)."""
        return reads.run(self._con, run_id)

    def resolve_run(self, run_id_or_prefix: str) -> StoredRun:
        """The run with this id, or the only one whose id starts with it."""
        return reads.run(self._con, queries.get_run(self._con, run_id_or_prefix)["run_id"])

    def runs(self, run_ids: Iterable[str]) -> dict[str, StoredRun]:
        return reads.runs_by_id(self._con, run_ids)

    def runs_since(self, since: datetime | None) -> list[StoredRun]:
        return reads.runs_since(self._con, since)

    def latest_complete(self, snapshot_id: str, before: datetime | None = None) -> str | None:
        return reads.latest_complete(self._con, snapshot_id, before)

    def snapshots_with_complete_runs(self) -> list[str]:
        return reads.snapshots_with_complete_runs(self._con)

    def default_baseline(self, run_id: str) -> str | None:
        return reads.default_baseline(self._con, run_id)

    def repeat_group_runs(self, run_id: str) -> list[str]:
        return reads.repeat_group_runs(self._con, run_id)

    def latest_repeat_group(self, snapshot_id: str) -> tuple[str, str] | None:
        return reads.latest_repeat_group(self._con, snapshot_id)

    def existing_run_ids(self, run_ids: Iterable[str]) -> set[str]:
        return reads.existing_run_ids(self._con, run_ids)

    def configuration_groups(
        self, snapshot_id: str, metric: str | None = None
    ) -> list[ConfigurationGroup]:
        """Complete runs grouped by measurement configuration (repeat groups: ≥2 runs)."""
        return reads.configuration_groups(self._con, snapshot_id, metric)

    def gate_history_run_ids(self, run_id: str) -> list[str]:
        return reads.gate_history_run_ids(self._con, run_id)

    def outcome_shares(self, run_ids: Iterable[str]) -> list[OutcomeShares]:
        return reads.outcome_shares(self._con, run_ids)

    # per-item and per-run results
    def axis_outcomes(self, run_id: str) -> dict[AxisKey, AxisOutcomes]:
        return reads.axis_outcomes(self._con, run_id)

    def test_terms(self, run_id: str) -> dict[AxisKey, TestTerms]:
        """Per association test, the target words' s(w, A, B) (drift pairs them by id)."""
        return reads.test_terms(self._con, run_id)

    def measures(self, run_id: str) -> list[Measure]:
        return [codec.measure_from_row(r) for r in queries.axis_measures(self._con, run_id)]

    def measure_trend(self, since: datetime | None, measure: str = "bias_rate") -> list[TrendRow]:
        return reads.measure_trend(self._con, since, measure)

    def latest_validations(self, since: datetime | None) -> list[ValidationRow]:
        return reads.latest_validations(self._con, since)

    def result_frames(self, run_id: str) -> ResultFrames:
        return reads.result_frames(self._con, run_id)

    def exclusions(self, run_id: str) -> list[dict[str, Any]]:
        return queries.exclusions(self._con, run_id)
