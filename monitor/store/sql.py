"""Small helpers over DuckDB's Python API shared by the store modules."""

from __future__ import annotations

from typing import Any

import duckdb


def one(con: duckdb.DuckDBPyConnection, query: str, params: Any = None) -> tuple[Any, ...] | None:
    """First row or None, with the result drained.

    DuckDB 2 refuses further work on a connection while a result is only partly read,
    so ``execute(...).fetchone()`` would leave the connection unusable.
    """
    rows = con.execute(query, params).fetchall()
    return rows[0] if rows else None


def scalar(con: duckdb.DuckDBPyConnection, query: str, params: Any = None) -> Any:
    """The single value of a one-row, one-column query (e.g. a count)."""
    row = one(con, query, params)
    if row is None:
        raise RuntimeError(f"query returned no row: {query.split()[0]} ...")
    return row[0]
