"""Read-side SQL for the rooms downstream of the store: drift, the quality gate, reports.

Functions of an open connection returning the typed models of ``monitor.readmodel.models``.
They used to live in drift, quality and the report input builder; keeping every query
here means the schema has one owner. Nothing here writes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb

from monitor.benchmarks.items import source_version
from monitor.errors import UserInputError
from monitor.readmodel.models import (
    AxisKey,
    AxisOutcomes,
    ConfigurationGroup,
    OutcomeShares,
    ResultFrames,
    StoredRun,
    TestTerms,
    TrendSeries,
    ValidationRow,
)
from monitor.records import UNDECIDED_OUTCOMES, score_columns, score_floats
from monitor.store import details

RUN_JSON_COLUMNS = ("snapshot_manifest", "dataset_versions", "environment")
# JSON columns whose text a snapshot's runs repeat night after night (its manifest, the
# benchmark versions it scored): parsed once per distinct text in a read of many runs.
# A year of 7,340 runs is ~3 MB of these, ~0.1 s of ``json.loads``.
RUN_REPEATED_JSON = ("snapshot_manifest", "dataset_versions")
RUN_TIME_COLUMNS = ("started_at", "finished_at")
MEASURE_FLOATS = ("value", "ci_low", "ci_high", "p_value")


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    cols = [d[0] for d in cur.description or ()]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _since_param(since: datetime | None) -> list[datetime | None]:
    """``since`` as the naive UTC timestamp the queries compare with, twice (NULL test)."""
    return [since.astimezone(UTC).replace(tzinfo=None) if since else None] * 2


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _aware(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=UTC) if isinstance(moment, datetime) else moment


# --- runs ---------------------------------------------------------------------------------


_RUN_SELECT = """
    SELECT * REPLACE (
        timezone('UTC', started_at) AS started_at,
        timezone('UTC', finished_at) AS finished_at
    )
    FROM runs
"""


def _stored_runs(cur: duckdb.DuckDBPyConnection) -> list[StoredRun]:
    """``runs`` rows as typed runs: JSON columns parsed, timestamps made aware (UTC).

    Timestamps are read as UTC and made aware in Python: fetching TIMESTAMPTZ directly
    would make DuckDB import pytz for every row. Runs read together share the parsed
    value of a repeated JSON text (``RUN_REPEATED_JSON``); runs are read-only.
    """
    out = []
    parsed: dict[str, Any] = {}
    for row in _rows(cur):
        for col in RUN_JSON_COLUMNS:
            text = row.get(col)
            if not isinstance(text, str):
                continue
            if col not in RUN_REPEATED_JSON:
                row[col] = json.loads(text)
                continue
            if text not in parsed:
                parsed[text] = json.loads(text)
            row[col] = parsed[text]
        for col in RUN_TIME_COLUMNS:
            row[col] = _aware(row.get(col))
        out.append(StoredRun.from_row(row))
    return out


def run(con: duckdb.DuckDBPyConnection, run_id: str) -> StoredRun:
    """The ``runs`` row of ``run_id``; ``UserInputError`` if there is none."""
    rows = _stored_runs(con.execute(_RUN_SELECT + " WHERE run_id = ?", [run_id]))
    if not rows:
        raise UserInputError(f"run {run_id!r} is not in the store")
    return rows[0]


def complete_runs(
    con: duckdb.DuckDBPyConnection, snapshot_id: str, metric: str | None = None
) -> list[StoredRun]:
    """The snapshot's complete runs (of ``metric`` when given), oldest first, in one query:
    a year of nightly runs is read at once, not run by run."""
    return _stored_runs(
        con.execute(
            _RUN_SELECT
            + """
            WHERE snapshot_id = ? AND status = 'complete'
              AND (CAST(? AS VARCHAR) IS NULL OR metric = CAST(? AS VARCHAR))
            ORDER BY started_at, run_id
            """,
            [snapshot_id, metric, metric],
        )
    )


def axis_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[AxisKey, AxisOutcomes]:
    """Per (benchmark, axis), every scored item's outcome in ``run_id``.

    Benchmark and axis come from ``items`` (the item's identity), not from the run, so a
    CrowS-Pairs run splits into its bias types.
    """
    return axis_outcomes_of(con, [run_id]).get(run_id, {})


def axis_outcomes_of(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]
) -> dict[str, dict[AxisKey, AxisOutcomes]]:
    """:func:`axis_outcomes` of several runs from one scan of ``scores``: in a store of
    millions of rows a run's rows are spread over the whole table, so reading the runs a
    drift session needs one by one scans it once per run. Runs without scores are absent.
    """
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    # One row per (run, benchmark, axis) with its items as lists: DuckDB builds the lists,
    # and dict(zip(...)) the maps, instead of a Python loop over a row per item (the scan
    # itself is ~30 ms; turning 250k rows into tuples and looping over them was ~1.3 s).
    # The lists are ordered by rowid: an aggregate's order is otherwise unspecified (it
    # varies with threads), and the item order feeds float sums (the design effect), so
    # it must be the order the items were stored in, in every run of drift.
    cur = con.execute(
        """
        SELECT s.run_id, i.benchmark, i.axis, list(DISTINCT i.benchmark_version),
               list(s.item_id ORDER BY s.rowid), list(s.outcome ORDER BY s.rowid),
               list(s.delta ORDER BY s.rowid),
               list(s.item_id ORDER BY s.rowid) FILTER (WHERE i.template IS NOT NULL),
               list(i.template ORDER BY s.rowid) FILTER (WHERE i.template IS NOT NULL)
        FROM scores AS s JOIN items AS i USING (item_id)
        WHERE list_contains(?, s.run_id)
        GROUP BY s.run_id, i.benchmark, i.axis
        """,
        [ids],
    )
    out: dict[str, dict[AxisKey, AxisOutcomes]] = {}
    versions: dict[str, str] = {}
    for row in cur.fetchall():
        run_id, benchmark, axis, raw_versions, items, outcomes, deltas, templated, templates = row
        for version in raw_versions:
            if version not in versions:
                versions[version] = source_version(version)
        out.setdefault(run_id, {})[(benchmark, axis)] = AxisOutcomes(
            outcomes=dict(zip(items, outcomes, strict=True)),
            benchmark_versions={versions[v] for v in raw_versions},
            deltas=dict(zip(items, deltas, strict=True)),
            # Only the items that have a template (both lists in one order, so they pair
            # up); an item without one is its own cluster. Most benchmarks have none, so
            # most axes fetch no list here rather than a NULL or an id per item.
            templates=dict(zip(templated or (), templates or (), strict=True)),
        )
    return out


# The metric panel's members as ``scores.details.panel`` keys them (``monitor.metrics.panel``);
# a run's own metric is the row's ``outcome``, so each row names at most the other two.
PANEL_MEMBERS = ("cll", "cll-reference", "ull")


PanelOutcomes = dict[AxisKey, dict[str, dict[str, str]]]


def panel_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> PanelOutcomes:
    """Per (benchmark, axis), the panel metrics' item outcomes stored beside the run's own
    (metric → item id → outcome, the run's own metric included under its name): what drift
    reads to cross-check a flagged change on the same items. Empty for a run without a
    panel (``--no-panel``, API runs, masked LMs)."""
    return panel_outcomes_of(con, [run_id]).get(run_id, {})


def panel_outcomes_of(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]
) -> dict[str, PanelOutcomes]:
    """:func:`panel_outcomes` of several runs from one scan of ``scores`` (runs without a
    panel are absent). On DuckDB 1.5.5 a run's filter prunes none of a year's row groups,
    so each run read alone is a scan of all 20M rows (~0.05 s of CPU; a drift session over
    a year's store asked 44 times, ~2.2 s); DuckDB 2.0.0 pruned them."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    members = ", ".join(
        f"json_extract_string(s.details, '$.panel.\"{m}\".outcome')" for m in PANEL_MEMBERS
    )
    cur = con.execute(
        f"""
        SELECT s.run_id, i.benchmark, i.axis, s.item_id, s.metric, s.outcome, {members}
        FROM scores AS s JOIN items AS i USING (item_id)
        WHERE list_contains(?, s.run_id) AND json_exists(s.details, '$.panel')
        ORDER BY s.rowid
        """,
        [ids],
    )
    out: dict[str, PanelOutcomes] = {}
    for run_id, benchmark, axis, item_id, metric, outcome, *panel in cur.fetchall():
        by_metric = out.setdefault(run_id, {}).setdefault((benchmark, axis), {})
        by_metric.setdefault(metric, {})[item_id] = outcome
        for member, value in zip(PANEL_MEMBERS, panel, strict=True):
            if member != metric and value is not None:
                by_metric.setdefault(member, {})[item_id] = value
    return out


def test_terms(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[AxisKey, TestTerms]:
    """Per (benchmark, test) of an association run, its embedded target words' s(w, A, B)
    (words the model could not embed have no number and are left out)."""
    cur = con.execute(
        """
        SELECT i.benchmark, i.axis, i.benchmark_version, s.item_id,
               s.details->>'role' AS role, s.delta
        FROM scores AS s JOIN items AS i USING (item_id)
        WHERE s.run_id = ? AND i.kind = 'word-set-term'
        """,
        [run_id],
    )
    out: dict[AxisKey, TestTerms] = defaultdict(TestTerms)
    for benchmark, axis, version, item_id, role, delta in cur.fetchall():
        entry = out[(benchmark, axis)]
        entry.benchmark_versions.add(source_version(version))
        if role in ("X", "Y") and delta is not None:
            entry.targets[item_id] = (role, float(delta))
    return dict(out)


def repeat_group_runs(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """Run ids of ``run_id``'s repeat group (complete ones, and ``run_id`` itself), in
    repeat order; empty when the run has no repeat group."""
    r = run(con, run_id)
    if r.repeat_group is None:
        return []
    return [
        row[0]
        for row in con.execute(
            """
            SELECT run_id FROM runs
            WHERE repeat_group = ? AND snapshot_id = ? AND metric = ? AND metric_version = ?
              AND (status = 'complete' OR run_id = ?)
            ORDER BY repeat_index, run_id
            """,
            [r.repeat_group, r.snapshot_id, r.metric, r.metric_version, run_id],
        ).fetchall()
    ]


def snapshots_with_complete_runs(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT DISTINCT snapshot_id FROM runs WHERE status = 'complete' ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def latest_repeat_group(con: duckdb.DuckDBPyConnection, snapshot_id: str) -> tuple[str, str] | None:
    """(repeat group, one of its run ids) of the snapshot's latest group with ≥2 complete
    runs, or None."""
    row = con.execute(
        """
        SELECT repeat_group, max(run_id) FROM runs
        WHERE snapshot_id = ? AND status = 'complete' AND repeat_group IS NOT NULL
        GROUP BY repeat_group HAVING count(*) >= 2
        ORDER BY max(started_at) DESC LIMIT 1
        """,
        [snapshot_id],
    ).fetchone()
    return (row[0], row[1]) if row else None


def existing_run_ids(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]) -> set[str]:
    """Which of ``run_ids`` are in the store (an import skips those)."""
    ids = sorted(set(run_ids))
    if not ids:
        return set()
    rows = con.execute("SELECT run_id FROM runs WHERE list_contains(?, run_id)", [ids]).fetchall()
    return {r[0] for r in rows}


def group_by_configuration(snapshot_id: str, runs: Sequence[StoredRun]) -> list[ConfigurationGroup]:
    """``runs`` (one snapshot's, oldest first) grouped by measurement configuration.

    Runs of one ``--repeat`` group join one configuration group even where their
    recorded configuration would differ (it cannot, for runs the monitor scored).
    """
    members: list[list[StoredRun]] = []
    by_key: dict[str, int] = {}
    by_repeat: dict[str, int] = {}
    for r in runs:
        key = r.configuration_key
        idx = by_key.get(key)
        if idx is None and r.repeat_group is not None:
            idx = by_repeat.get(r.repeat_group)
        if idx is None:
            idx = len(members)
            members.append([])
        members[idx].append(r)
        by_key.setdefault(key, idx)
        if r.repeat_group is not None:
            by_repeat.setdefault(r.repeat_group, idx)
    return [
        ConfigurationGroup(
            snapshot_id=snapshot_id,
            key=group[0].configuration_key,
            configuration=group[0].configuration,
            run_ids=tuple(r.run_id for r in group),
            started_at=tuple(r.started_at for r in group),
        )
        for group in members
    ]


def gate_history_run_ids(con: duckdb.DuckDBPyConnection, run_id: str) -> list[str]:
    """Complete runs of ``run_id``'s snapshot and metric, other than itself: the history the
    quality gate compares a run's coverage and refusal rates with."""
    r = run(con, run_id)
    rows = con.execute(
        """
        SELECT run_id FROM runs
        WHERE snapshot_id = ? AND metric = ? AND status = 'complete' AND run_id <> ?
        ORDER BY started_at, run_id
        """,
        [r.snapshot_id, r.metric, run_id],
    ).fetchall()
    return [row[0] for row in rows]


def outcome_shares(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]) -> list[OutcomeShares]:
    """Per run and (benchmark, axis): items scored, decided, refused, ambiguous, other.

    *Decided* is any outcome outside ``UNDECIDED_OUTCOMES``, whatever the family: a pair's
    stereo/anti, a choice question's picked role, an association term's value (NULL
    outcome). It was ``stereo``/``anti`` only, so every choice-QA and association run had
    a coverage of 0 and the gate's coverage rule could never fire on them."""
    ids = sorted(set(run_ids))
    if not ids:
        return []
    rows = con.execute(
        """
        SELECT s.run_id, i.benchmark, i.axis, count(*),
               count(*) FILTER (WHERE s.outcome IS NULL OR NOT list_contains(?, s.outcome)),
               count(*) FILTER (WHERE s.outcome = 'refusal'),
               count(*) FILTER (WHERE s.outcome = 'ambiguous'),
               count(*) FILTER (WHERE s.outcome = 'other')
        FROM scores AS s JOIN items AS i USING (item_id)
        WHERE list_contains(?, s.run_id)
        GROUP BY ALL
        ORDER BY 1, 2, 3
        """,
        [list(UNDECIDED_OUTCOMES), ids],
    ).fetchall()
    return [OutcomeShares(*row) for row in rows]


# --- what reports show ------------------------------------------------------------------


def measure_trend(
    con: duckdb.DuckDBPyConnection, since: datetime | None, measure: str = "bias_rate"
) -> list[TrendSeries]:
    """``measure`` over time for every snapshot × benchmark axis × metric, complete runs
    only, oldest first: one series per row, its runs as DuckDB lists (see ``TrendSeries``).

    Start times come as epoch microseconds and are made datetimes once per run: a run has
    a value on every axis it scored, so the same instant recurs in every series.
    """
    # Each point's place in its series is numbered once (``k``) and the lists ordered by
    # that integer: ordering each of the six lists by (start time, run id) itself sorted
    # the same keys six times (~40 ms of ~160 at a year's 147k points).
    rows = con.execute(
        """
        WITH points AS (
            SELECT r.snapshot_id, m.benchmark, m.axis, r.metric, r.run_id,
                   epoch_us(r.started_at) AS started_us, m.value, m.ci_low, m.ci_high, m.n,
                   row_number() OVER (
                       PARTITION BY r.snapshot_id, m.benchmark, m.axis, r.metric
                       ORDER BY r.started_at, r.run_id) AS k
            FROM axis_measures m JOIN runs r USING (run_id)
            WHERE m.measure = ? AND r.status = 'complete'
              AND (CAST(? AS TIMESTAMP) IS NULL
                   OR timezone('UTC', r.started_at) >= CAST(? AS TIMESTAMP))
        )
        SELECT snapshot_id, benchmark, axis, metric,
               list(run_id ORDER BY k), list(started_us ORDER BY k),
               list(value ORDER BY k), list(ci_low ORDER BY k),
               list(ci_high ORDER BY k), list(n ORDER BY k)
        FROM points
        GROUP BY snapshot_id, benchmark, axis, metric
        ORDER BY snapshot_id, benchmark, axis, metric
        """,
        [measure, *_since_param(since)],
    ).fetchall()
    moments: dict[int, datetime] = {}

    def moment(us: int) -> datetime:
        if us not in moments:
            moments[us] = _EPOCH + timedelta(microseconds=us)
        return moments[us]

    return [
        TrendSeries(
            s,
            b,
            a,
            metric,
            tuple(rids),
            tuple(map(moment, started)),
            tuple(values),
            tuple(lows),
            tuple(highs),
            tuple(ns),
        )
        for s, b, a, metric, rids, started, values, lows, highs, ns in rows
    ]


def latest_validations(
    con: duckdb.DuckDBPyConnection, since: datetime | None
) -> list[ValidationRow]:
    """Each run's latest result of each suite, for runs started since ``since``."""
    rows = con.execute(
        """
        SELECT v.run_id, v.suite, v.success, v.results
        FROM validations v JOIN runs r USING (run_id)
        WHERE (CAST(? AS TIMESTAMP) IS NULL
               OR timezone('UTC', r.started_at) >= CAST(? AS TIMESTAMP))
        QUALIFY row_number() OVER (
            PARTITION BY v.run_id, v.suite ORDER BY v.validated_at DESC) = 1
        ORDER BY v.run_id
        """,
        _since_param(since),
    ).fetchall()
    return [
        ValidationRow(
            rid,
            suite,
            bool(success),
            json.loads(results) if isinstance(results, str) else (results or {}),
        )
        for rid, suite, success, results in rows
    ]


def runs_since(con: duckdb.DuckDBPyConnection, since: datetime | None) -> list[StoredRun]:
    """Every run started since ``since`` (all statuses), oldest first, in one query."""
    return _stored_runs(
        con.execute(
            _RUN_SELECT
            + """
            WHERE (CAST(? AS TIMESTAMP) IS NULL
                   OR timezone('UTC', started_at) >= CAST(? AS TIMESTAMP))
            ORDER BY started_at, run_id
            """,
            _since_param(since),
        )
    )


def runs_by_id(con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]) -> dict[str, StoredRun]:
    """The runs with these ids, in one query; ``UserInputError`` names one that is missing."""
    ids = sorted(set(run_ids))
    if not ids:
        return {}
    found = {
        r.run_id: r
        for r in _stored_runs(con.execute(_RUN_SELECT + " WHERE list_contains(?, run_id)", [ids]))
    }
    for rid in ids:
        if rid not in found:
            raise UserInputError(f"run {rid!r} is not in the store")
    return {rid: found[rid] for rid in ids}


# --- what the results quality suite reads -----------------------------------------------


def _finite_flags(alias: str, columns: Sequence[str]) -> str:
    return ", ".join(f"isfinite({alias}.{c}) AS {c}_finite" for c in columns)


def result_frames(con: duckdb.DuckDBPyConnection, run_id: str) -> ResultFrames:
    """The run, its scores and its measures as the results suite checks them.

    Pandas cannot tell SQL NULL from NaN once a DOUBLE column is fetched, but the suite
    must: NULL is "this metric does not produce the number", NaN is a broken score. So
    every floating column comes with a ``<column>_finite`` flag computed in DuckDB: NULL
    when the value is NULL, false for NaN and ±inf. Benchmark text is never selected; an
    item's payload is (identity names, reference-row flags), which measures beyond the
    metric's own aggregation are recomputed from.
    """
    frame = con.execute(
        """
        SELECT run_id, snapshot_id, snapshot_revision, metric, metric_version, status,
               CAST(dataset_versions AS VARCHAR) AS dataset_versions,
               CAST(environment AS VARCHAR)      AS environment,
               git_commit, device, CAST(started_at AS VARCHAR) AS started_at, n_scored,
               coalesce(len(json_keys(dataset_versions)), 0) AS n_dataset_versions,
               coalesce(len(json_keys(environment)), 0)      AS n_environment_fields,
               list_has_all(coalesce(json_keys(dataset_versions), []), benchmarks)
                   AS dataset_versions_cover_benchmarks
        FROM runs WHERE run_id = ?
        """,
        [run_id],
    ).df()
    if frame.empty:
        raise UserInputError(f"no run with id {run_id!r} in the store")
    floats = score_floats()
    # Every number the suite checks: the finite ones, then the families' bounded ones.
    checked = [*floats, *(c.name for c in score_columns() if c.bounds and c.name not in floats)]
    columns = ", ".join(f"s.{c}" for c in checked)
    scores = con.execute(
        f"""
        SELECT s.run_id, s.item_id, s.metric, s.metric_version, s.outcome,
               r.metric AS run_metric, r.metric_version AS run_metric_version,
               {columns},
               {_finite_flags("s", floats)},
               (i.item_id IS NOT NULL) AS item_known,
               i.benchmark AS item_benchmark, i.axis AS item_axis,
               i.region AS item_region, i.kind AS item_kind,
               CAST(i.payload AS VARCHAR) AS item_payload,
               CAST(s.details AS VARCHAR) AS details
        FROM {details.wide("scores")} s
        JOIN runs r ON r.run_id = s.run_id
        LEFT JOIN items i ON i.item_id = s.item_id
        WHERE s.run_id = ?
        ORDER BY s.item_id
        """,
        [run_id],
    ).df()
    measures = con.execute(
        f"""
        SELECT m.run_id, m.benchmark, m.axis, m.measure, m.kind, m.k, m.n, m.value,
               m.ci_low, m.ci_high, m.p_value, m.method, m.confidence,
               {_finite_flags("m", MEASURE_FLOATS)}
        FROM axis_measures m
        WHERE m.run_id = ?
        ORDER BY m.benchmark, m.axis, m.measure
        """,
        [run_id],
    ).df()
    return ResultFrames(run=frame, scores=scores, measures=measures)
