"""Read what drift needs from the store: run rows and per-item outcomes, by plain SQL.

Drift reads the schema (``monitor/store/schema.py``) directly through a DuckDB
connection rather than the store's Python API, so the two rooms only share the table
definitions. Nothing here writes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import duckdb

from monitor.errors import UserInputError

JSON_COLUMNS = ("snapshot_manifest", "dataset_versions", "environment")
TIME_COLUMNS = ("started_at", "finished_at")

AxisKey = tuple[str, str]  # (benchmark, axis)


@dataclass
class AxisOutcomes:
    """One run's outcomes on one (benchmark, axis): item id → outcome, and source versions."""

    outcomes: dict[str, str] = field(default_factory=dict)
    benchmark_versions: set[str] = field(default_factory=set)


def source_version(label: str) -> str:
    """A benchmark version label without its errata part (``…:errata-N``).

    Item ids are hashed without the errata version, so runs before and after an errata
    release pair on every untouched item; only the source commit and file decide whether
    two runs scored the same benchmark. The errata change itself shows in the provenance
    diff (``dataset_versions``) as a measurement change.
    """
    return label.split(":errata-", 1)[0]


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    cols = [d[0] for d in cur.description or ()]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def run_row(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    """The ``runs`` row with its JSON columns parsed; UserInputError if there is none.

    Timestamps are read as UTC and made aware in Python: fetching TIMESTAMPTZ directly
    would make DuckDB import pytz, which the project does not depend on.
    """
    rows = _rows(
        con.execute(
            """
            SELECT * REPLACE (
                timezone('UTC', started_at) AS started_at,
                timezone('UTC', finished_at) AS finished_at
            )
            FROM runs WHERE run_id = ?
            """,
            [run_id],
        )
    )
    if not rows:
        raise UserInputError(f"run {run_id!r} is not in the store")
    row = rows[0]
    for col in JSON_COLUMNS:
        if isinstance(row.get(col), str):
            row[col] = json.loads(row[col])
    for col in TIME_COLUMNS:
        if isinstance(row.get(col), datetime):
            row[col] = row[col].replace(tzinfo=UTC)
    return row


def axis_outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[AxisKey, AxisOutcomes]:
    """Per (benchmark, axis), every scored item's outcome in ``run_id``.

    Benchmark and axis come from ``items`` (the item's identity), not from the run, so a
    CrowS-Pairs run splits into its bias types.
    """
    cur = con.execute(
        """
        SELECT i.benchmark, i.axis, i.benchmark_version, s.item_id, s.outcome
        FROM scores AS s JOIN items AS i USING (item_id)
        WHERE s.run_id = ?
        """,
        [run_id],
    )
    out: dict[AxisKey, AxisOutcomes] = defaultdict(AxisOutcomes)
    for benchmark, axis, version, item_id, outcome in cur.fetchall():
        entry = out[(benchmark, axis)]
        entry.outcomes[item_id] = outcome
        entry.benchmark_versions.add(source_version(version))
    return dict(out)


def default_baseline(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The run to compare ``run_id`` with: the latest earlier complete run of the same snapshot.

    Only status 'complete' counts (never 'quarantined', 'failed' or 'running'); a run of
    the same repeat group is a repeat, not a baseline, and is skipped. Among candidates a
    run with the same metric and version is preferred over a later one scored
    differently, since a different metric can only give "not comparable".
    """
    run_row(con, run_id)  # a clear error for an unknown id
    row = con.execute(
        """
        SELECT r.run_id
        FROM runs AS r, (SELECT * FROM runs WHERE run_id = ?) AS n
        WHERE r.snapshot_id = n.snapshot_id
          AND r.status = 'complete'
          AND r.started_at < n.started_at
          AND r.run_id <> n.run_id
          AND (n.repeat_group IS NULL OR r.repeat_group IS NULL
               OR r.repeat_group <> n.repeat_group)
        ORDER BY (r.metric = n.metric AND r.metric_version = n.metric_version) DESC,
                 r.started_at DESC, r.run_id DESC
        LIMIT 1
        """,
        [run_id],
    ).fetchone()
    return row[0] if row else None


def repeat_outcomes(
    con: duckdb.DuckDBPyConnection, run_id: str
) -> dict[AxisKey, list[dict[str, str]]]:
    """Outcomes of every complete run in ``run_id``'s repeat group (including itself).

    Empty when the run has no repeat group. Repeats share snapshot, metric and items by
    construction, so their disagreements are the measurement's own noise.
    """
    run = run_row(con, run_id)
    if run["repeat_group"] is None:
        return {}
    ids = [
        r[0]
        for r in con.execute(
            """
            SELECT run_id FROM runs
            WHERE repeat_group = ? AND snapshot_id = ? AND metric = ? AND metric_version = ?
              AND (status = 'complete' OR run_id = ?)
            ORDER BY repeat_index, run_id
            """,
            [
                run["repeat_group"],
                run["snapshot_id"],
                run["metric"],
                run["metric_version"],
                run_id,
            ],
        ).fetchall()
    ]
    out: dict[AxisKey, list[dict[str, str]]] = defaultdict(list)
    for rid in ids:
        for key, axis in axis_outcomes(con, rid).items():
            out[key].append(axis.outcomes)
    return dict(out)
