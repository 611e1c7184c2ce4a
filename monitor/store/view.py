"""``StoreView``: a consistent, read-only look at the store for the rooms that read it.

Drift, the quality gate, the reports and the CLI read through one of these. It holds a
single connection for its lifetime (so a drift session sees one consistent state and
pays DuckDB's open cost once) and hands out typed models only: no connection, cursor or
SQL leaves the store room.

A view over a read-only connection (``Store.read()`` outside a write session) sees a
store nothing can change while it is open, so it remembers what it has read: runs,
configuration groups, per-axis outcomes and items. A drift session over a year of nightly runs
asks for the same runs thousands of times (every noise context walks the snapshot's
history); with the cache each is read once, and a snapshot's history in one query.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any, TypeVar

import duckdb

from monitor.benchmarks.items import Item
from monitor.readmodel import models as rm
from monitor.records import Measure
from monitor.store import codec, queries, reads, reuse, snapshot

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class StoreView:
    """Typed reads over one open connection (see the module docstring)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, *, frozen: bool = False, catalog: str | None = None
    ) -> None:
        """``frozen``: the connection is read-only, so reads may be remembered.
        ``catalog``: the lake's name on ``con`` (None: a DuckDB file)."""
        self._con = con
        self._catalog = catalog
        self._snapshot: snapshot.LakeSnapshot | None = None
        self._frozen = frozen
        self._runs: dict[str, rm.StoredRun] = {}
        self._groups: dict[tuple[str, str | None], list[rm.ConfigurationGroup]] = {}
        self._outcomes: dict[str, dict[rm.AxisKey, rm.AxisOutcomes]] = {}
        self._since: dict[datetime | None, list[rm.StoredRun]] = {}
        self._measures: dict[str, list[Measure]] = {}
        self._panels: dict[str, dict[rm.AxisKey, dict[str, dict[str, str]]]] = {}
        self._panel_runs: set[str] = set()  # announced, read together on the first ask
        self._items: dict[str, Item | None] = {}  # None: asked for, not in the store

    def _remember(self, runs: Iterable[rm.StoredRun]) -> None:
        if self._frozen:
            self._runs.update((r.run_id, r) for r in runs)

    def _cached(self, cache: dict[K, V], key: K, read: Callable[[], V]) -> V:
        """``cache[key]``, else what ``read`` returns, kept in ``cache`` when frozen (an
        open connection another session may write through is read afresh each time)."""
        if key in cache:
            return cache[key]
        out = read()
        if self._frozen:
            cache[key] = out
        return out

    # runs
    def run(self, run_id: str) -> rm.StoredRun:
        """The run with exactly this id (``UserInputError`` if none)."""
        if run_id in self._runs:
            return self._runs[run_id]
        found = reads.run(self._con, run_id)
        self._remember([found])
        return found

    def resolve_run(self, run_id_or_prefix: str) -> rm.StoredRun:
        """The run with this id, or the only one whose id starts with it."""
        if run_id_or_prefix in self._runs:
            return self._runs[run_id_or_prefix]
        return self.run(queries.get_run(self._con, run_id_or_prefix)["run_id"])

    def runs(self, run_ids: Iterable[str]) -> dict[str, rm.StoredRun]:
        ids = sorted(set(run_ids))
        missing = [r for r in ids if r not in self._runs]
        found = reads.runs_by_id(self._con, missing)
        self._remember(found.values())
        return {r: found[r] if r in found else self._runs[r] for r in ids}

    def runs_since(self, since: datetime | None) -> list[rm.StoredRun]:
        def read() -> list[rm.StoredRun]:
            runs = reads.runs_since(self._con, since)
            self._remember(runs)
            return runs

        return self._cached(self._since, since, read)

    def snapshots_with_complete_runs(self) -> list[str]:
        return reads.snapshots_with_complete_runs(self._con)

    def repeat_group_runs(self, run_id: str) -> list[str]:
        return reads.repeat_group_runs(self._con, run_id)

    def latest_repeat_group(self, snapshot_id: str) -> tuple[str, str] | None:
        return reads.latest_repeat_group(self._con, snapshot_id)

    def latest_complete_run(self, snapshot_id: str, metric: str) -> dict[str, Any] | None:
        """The snapshot's newest complete run of ``metric``, a row (``store.reuse``)."""
        return reuse.latest_complete_run(self._con, snapshot_id, metric)

    def existing_run_ids(self, run_ids: Iterable[str]) -> set[str]:
        return reads.existing_run_ids(self._con, run_ids)

    def configuration_groups(
        self, snapshot_id: str, metric: str | None = None
    ) -> list[rm.ConfigurationGroup]:
        """Complete runs grouped by measurement configuration (repeat groups: ≥2 runs)."""
        return self._cached(
            self._groups, (snapshot_id, metric), lambda: self._read_groups(snapshot_id, metric)
        )

    def _read_groups(self, snapshot_id: str, metric: str | None) -> list[rm.ConfigurationGroup]:
        if self._frozen and (self._groups or None in self._since):
            # A session walking more than one snapshot's history (drift over every
            # snapshot, a report) reads every run once rather than a query per snapshot;
            # one snapshot's walk (``drift --snapshot``) reads only its own runs.
            runs = [
                r
                for r in self.runs_since(None)
                if r.snapshot_id == snapshot_id
                and r.status == "complete"
                and (metric is None or r.metric == metric)
            ]
        else:
            runs = reads.complete_runs(self._con, snapshot_id, metric)
            self._remember(runs)
        return reads.group_by_configuration(snapshot_id, runs)

    def gate_history_run_ids(self, run_id: str) -> list[str]:
        return reads.gate_history_run_ids(self._con, run_id)

    def outcome_shares(self, run_ids: Iterable[str]) -> list[rm.OutcomeShares]:
        return reads.outcome_shares(self._con, run_ids)

    # per-item and per-run results
    def prefetch_outcomes(self, run_ids: Iterable[str]) -> None:
        """Read the per-axis outcomes of ``run_ids`` in one scan and remember them (a frozen
        view only; otherwise nothing is kept and each ``axis_outcomes`` reads for itself)."""
        if not self._frozen:
            return
        missing = [r for r in set(run_ids) if r not in self._outcomes]
        found = reads.axis_outcomes_of(self._con, missing)
        for r in missing:
            self._outcomes[r] = found.get(r, {})

    def axis_outcomes(self, run_id: str) -> dict[rm.AxisKey, rm.AxisOutcomes]:
        """Per (benchmark, axis), the run's item outcomes; callers must not modify them."""
        return self._cached(self._outcomes, run_id, lambda: reads.axis_outcomes(self._con, run_id))

    def prefetch_panel_outcomes(self, run_ids: Iterable[str]) -> None:
        """Announce the runs whose panel outcomes a session may ask for: the first
        :meth:`panel_outcomes` of any of them reads them all in one scan (a frozen view
        only). Nothing is read if none is asked for (families without a panel)."""
        if self._frozen:
            self._panel_runs.update(r for r in run_ids if r not in self._panels)

    def panel_outcomes(self, run_id: str) -> dict[rm.AxisKey, dict[str, dict[str, str]]]:
        """Per (benchmark, axis), each panel metric's item outcomes in the run (metric →
        item id → outcome, its own metric included); empty without a panel. Callers must
        not modify them."""
        if run_id in self._panel_runs:
            found = reads.panel_outcomes_of(self._con, self._panel_runs)
            self._panels.update((r, found.get(r, {})) for r in self._panel_runs)
            self._panel_runs.clear()
        return self._cached(self._panels, run_id, lambda: reads.panel_outcomes(self._con, run_id))

    def items(self, item_ids: Iterable[str]) -> dict[str, Item]:
        """Items by id with their payloads (a family's comparator reads, e.g., a question's
        polarity there); ids not in the store are absent.

        A frozen view reads each id once: drift asks for an axis's items once per
        comparison on that axis (340 times over a year's store, ~5 s), the same few
        thousand items every time. Items are immutable (frozen dataclasses), so the
        remembered ones are handed out as they are, in id order as the query gives them.
        """
        if not self._frozen:
            return queries.items(self._con, item_ids)
        ids = sorted(set(item_ids))
        missing = [i for i in ids if i not in self._items]
        if missing:
            found = queries.items(self._con, missing)
            self._items.update((i, found.get(i)) for i in missing)
        return {i: it for i in ids if (it := self._items[i]) is not None}

    def test_terms(self, run_id: str) -> dict[rm.AxisKey, rm.TestTerms]:
        """Per association test, the target words' s(w, A, B) (drift pairs them by id)."""
        return reads.test_terms(self._con, run_id)

    def prefetch_measures(self, run_ids: Iterable[str]) -> None:
        """Read the measures of ``run_ids`` in one scan and remember them (a frozen view
        only, as :meth:`prefetch_outcomes`)."""
        if not self._frozen:
            return
        missing = [r for r in set(run_ids) if r not in self._measures]
        found = queries.axis_measures_of(self._con, missing)
        for r in missing:
            self._measures[r] = [codec.measure_from_row(row) for row in found.get(r, [])]

    def measures(self, run_id: str) -> list[Measure]:
        """The run's measures; callers must not modify the list."""
        return self._cached(
            self._measures,
            run_id,
            lambda: [codec.measure_from_row(r) for r in queries.axis_measures(self._con, run_id)],
        )

    def measure_trend(
        self, since: datetime | None, measure: str = "bias_rate"
    ) -> list[rm.TrendSeries]:
        return reads.measure_trend(self._con, since, measure)

    def latest_validations(self, since: datetime | None) -> list[rm.ValidationRow]:
        return reads.latest_validations(self._con, since)

    def result_frames(self, run_id: str) -> rm.ResultFrames:
        return reads.result_frames(self._con, run_id)

    def exclusions(self, run_id: str) -> list[dict[str, Any]]:
        return queries.exclusions(self._con, run_id)

    def validations(self, run_id: str) -> list[dict[str, Any]]:
        """Every quality-suite result stored for the run, as its rows."""
        return queries.validations(self._con, run_id)

    def item_scores(self, run_id: str, with_texts: bool = False) -> list[dict[str, Any]]:
        """Per-item numbers with benchmark row and axis; sentences only if asked for."""
        return queries.item_scores(self._con, run_id, with_texts=with_texts)

    def term_scores(self, run_id: str, with_texts: bool = False) -> list[dict[str, Any]]:
        """Per-term numbers of an association run (test, set, s(w,A,B)); terms only if asked."""
        return queries.term_scores(self._con, run_id, with_texts=with_texts)

    @property
    def lake_snapshot(self) -> snapshot.LakeSnapshot | None:
        """The lake snapshot this view reads (one for the whole view: ``Store.read`` holds
        a transaction), which a report records so ``--as-of`` can read it again; None on a
        DuckDB file, which has no snapshots."""
        if self._catalog is not None and self._snapshot is None:
            self._snapshot = snapshot.current(self._con, self._catalog)
        return self._snapshot
