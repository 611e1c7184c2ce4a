"""Read-side SQL: functions of an open connection that return plain dicts or Arrow tables.

They take a connection rather than a ``Store`` so that merge and export can run them
inside their own transaction and see a consistent picture.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.records import ScoreRow
from monitor.store import codec, details, sql

RESUMABLE_STATUSES = ("running", "interrupted", "failed")


def fetch_table(
    con: duckdb.DuckDBPyConnection, query: str, params: list[Any] | None = None
) -> pa.Table:
    # A prepared statement's result rather than ``con.sql``'s relation: on DuckDB 1.5.5 a
    # relation with parameters costs ~4x the CPU of the same query executed (the items
    # a report reads, 17 queries: 0.26 s against 0.07 s).
    return con.execute(query, params or []).to_arrow_table()


def fetch_dicts(
    con: duckdb.DuckDBPyConnection, query: str, params: list[Any] | None = None
) -> list[dict[str, Any]]:
    return codec.decode_rows(fetch_table(con, query, params))


def list_runs(
    con: duckdb.DuckDBPyConnection,
    snapshot: str | None = None,
    status: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Newest first; ``None`` filters are ignored (bound as NULL, not spliced into SQL)."""
    query = (
        "SELECT * FROM runs "
        "WHERE ($snapshot IS NULL OR snapshot_id = $snapshot) "
        "AND ($status IS NULL OR status = $status) "
        "ORDER BY started_at DESC, run_id "
        "LIMIT $limit"
    )
    if limit is not None and limit < 0:
        raise UserInputError(f"limit must be zero or more, got {limit}")
    params = {"snapshot": snapshot, "status": status, "limit": limit}
    return codec.decode_rows(con.execute(query, params).to_arrow_table())


def get_run(con: duckdb.DuckDBPyConnection, run_id_or_prefix: str) -> dict[str, Any]:
    """Exact id first, then a unique prefix, so a short id from ``runs list`` is enough."""
    key = run_id_or_prefix.strip()
    if not key:
        raise UserInputError("run id is empty")
    exact = fetch_dicts(con, "SELECT * FROM runs WHERE run_id = ?", [key])
    if exact:
        return exact[0]
    matches = fetch_dicts(
        con, "SELECT * FROM runs WHERE starts_with(run_id, ?) ORDER BY run_id LIMIT 11", [key]
    )
    if not matches:
        raise UserInputError(f"no run with id or id prefix {key!r}")
    if len(matches) > 1:
        shown = ", ".join(m["run_id"] for m in matches[:10])
        more = " (and more)" if len(matches) > 10 else ""
        raise UserInputError(f"run id prefix {key!r} is ambiguous: {shown}{more}")
    return matches[0]


def run_status(con: duckdb.DuckDBPyConnection, run_id: str) -> str:
    row = sql.one(con, "SELECT status FROM runs WHERE run_id = ?", [run_id])
    if row is None:
        raise UserInputError(f"no run with id {run_id!r}")
    return row[0]


def scored_item_ids(con: duckdb.DuckDBPyConnection, run_id: str) -> set[str]:
    rows = con.execute("SELECT item_id FROM scores WHERE run_id = ?", [run_id]).fetchall()
    return {item_id for (item_id,) in rows}


def find_resumable(con: duckdb.DuckDBPyConnection, fingerprint: str) -> str | None:
    row = sql.one(
        con,
        "SELECT run_id FROM runs WHERE fingerprint = ? AND list_contains(?, status) "
        "ORDER BY started_at DESC, run_id DESC LIMIT 1",
        [fingerprint, list(RESUMABLE_STATUSES)],
    )
    return None if row is None else row[0]


def resumable_runs(con: duckdb.DuckDBPyConnection, fingerprint: str) -> list[str]:
    """Unfinished runs with this fingerprint, newest first."""
    rows = con.execute(
        "SELECT run_id FROM runs WHERE fingerprint = ? AND list_contains(?, status) "
        "ORDER BY started_at DESC, run_id DESC",
        [fingerprint, list(RESUMABLE_STATUSES)],
    ).fetchall()
    return [r[0] for r in rows]


def axis_measures(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    return axis_measures_of(con, [run_id]).get(run_id, [])


def axis_measures_of(
    con: duckdb.DuckDBPyConnection, run_ids: Iterable[str]
) -> dict[str, list[dict[str, Any]]]:
    """:func:`axis_measures` of several runs from one scan (a report reads the measures
    of dozens of runs; each query alone scans the whole table). Runs without measures
    are absent."""
    out: dict[str, list[dict[str, Any]]] = {}
    ids = sorted(set(run_ids))
    if not ids:
        return out
    for row in fetch_dicts(
        con,
        "SELECT * FROM axis_measures WHERE list_contains(?, run_id) "
        "ORDER BY run_id, benchmark, axis, measure",
        [ids],
    ):
        out.setdefault(row["run_id"], []).append(row)
    return out


def scores_table(con: duckdb.DuckDBPyConnection, run_id: str) -> pa.Table:
    """Arrow, for the paired statistics; ``details`` stays a JSON string here."""
    return fetch_table(
        con, f"SELECT * FROM {details.wide('scores')} WHERE run_id = ? ORDER BY item_id", [run_id]
    )


def scores(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    return codec.decode_rows(scores_table(con, run_id))


def score_rows(con: duckdb.DuckDBPyConnection, run_id: str) -> list[ScoreRow]:
    """A run's scores as the records scoring wrote, each its item's family's record."""
    rows = codec.decode_rows(
        fetch_table(
            con,
            f"SELECT s.*, i.kind AS item_kind__ FROM {details.wide('scores')} s "
            "LEFT JOIN items i USING (item_id) WHERE s.run_id = ? ORDER BY s.item_id",
            [run_id],
        )
    )
    return [codec.score_from_row(row, row.pop("item_kind__")) for row in rows]


def item_scores(
    con: duckdb.DuckDBPyConnection, run_id: str, with_texts: bool = False
) -> list[dict[str, Any]]:
    """One row per scored item for people to read: the core numbers, then the score
    columns families declare as shown; texts (declared ``with_texts``) are opt-in (they
    hold slurs)."""
    shown = "".join(
        f", s.{c.name}" for c in details.detail_columns("scores") if c.shown == "always"
    )
    texts = "".join(
        f", i.{c.name}"
        for c in details.detail_columns("items")
        if with_texts and c.shown == "with_texts"
    )
    # The metric panel's outcomes beside the run's own (NULL for runs without a panel).
    panel = (
        ", json_extract_string(s.details, '$.panel.\"cll-reference\".outcome') AS cll_reference"
        ", json_extract_string(s.details, '$.panel.cll.outcome') AS cll"
        ", json_extract_string(s.details, '$.panel.ull.outcome') AS ull"
    )
    return fetch_dicts(
        con,
        "SELECT s.item_id, i.benchmark, i.source_row, i.axis, s.outcome, s.delta"
        f"{shown}{panel}{texts} "
        f"FROM {details.wide('scores')} s JOIN {details.wide('items')} i USING (item_id) "
        "WHERE s.run_id = ? ORDER BY i.benchmark, i.source_row, s.item_id",
        [run_id],
    )


def exclusions(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    return fetch_dicts(
        con,
        "SELECT * FROM exclusions WHERE run_id = ? ORDER BY benchmark, source_row",
        [run_id],
    )


def validations(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    return fetch_dicts(
        con,
        "SELECT * FROM validations WHERE run_id = ? ORDER BY validated_at, suite",
        [run_id],
    )


def items(con: duckdb.DuckDBPyConnection, item_ids: Iterable[str]) -> dict[str, Item]:
    """Items by id; ids not in the store are simply absent from the result."""
    ids = sorted(set(item_ids))
    if not ids:
        return {}
    rows = fetch_dicts(
        con,
        # Joined to the ids rather than filtered by list_contains: the join's key filter
        # reaches the core and the detail tables' scans alike (drift asks this hundreds
        # of times a session).
        f"SELECT w.* FROM (SELECT unnest(?) AS item_id) k JOIN {details.wide('items')} w "
        "ON w.item_id = k.item_id ORDER BY w.item_id",
        [ids],
    )
    return {row["item_id"]: codec.item_from_row(row) for row in rows}


def stale_running_runs(con: duckdb.DuckDBPyConnection, cutoff: datetime) -> list[str]:
    """Runs still marked running whose latest score (or start, if none) is before ``cutoff``."""
    rows = con.execute(
        "SELECT r.run_id FROM runs r LEFT JOIN scores s USING (run_id) "
        "WHERE r.status = 'running' GROUP BY r.run_id, r.started_at "
        "HAVING greatest(r.started_at, coalesce(max(s.scored_at), r.started_at)) < ? "
        "ORDER BY r.run_id",
        [cutoff],
    ).fetchall()
    return [run_id for (run_id,) in rows]


def embeddings(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, list[float]]:
    rows = con.execute(
        "SELECT item_id, vector FROM embeddings WHERE run_id = ? ORDER BY item_id", [run_id]
    ).fetchall()
    return {item_id: list(vector) for item_id, vector in rows}


def term_scores(
    con: duckdb.DuckDBPyConnection, run_id: str, with_texts: bool = False
) -> list[dict[str, Any]]:
    """One row per scored term of an association run, for people to read: ids, test,
    set and numbers; the term itself (words and sentences hold identity terms and slurs)
    only when asked for."""
    text = ", i.payload->>'text' AS term" if with_texts else ""
    return fetch_dicts(
        con,
        "SELECT s.item_id, i.benchmark, i.axis AS test, i.payload->>'role' AS role, "
        "CAST(i.payload->>'occurrence' AS INTEGER) AS occurrence, "
        "s.outcome = 'other' AS missing, s.delta, "
        f"CAST(s.details->>'mean_cos_first' AS DOUBLE) AS mean_cos_first{text} "
        "FROM scores s JOIN items i USING (item_id) WHERE s.run_id = ? "
        "ORDER BY i.benchmark, i.axis, i.source_row, s.item_id",
        [run_id],
    )
