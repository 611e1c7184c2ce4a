"""Small helpers over DuckDB's Python API shared by the store modules."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import duckdb

from monitor.errors import UserInputError


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


# -- a store on DuckLake ----------------------------------------------------------------
# DuckLake has no PRIMARY KEY, UNIQUE or index, so neither the constraints nor
# ``ON CONFLICT`` exist there. The same DDL creates the same tables on a lake with the key
# clauses left out (``ddl``), and each insert that relied on a key checks it inside its
# own transaction instead (``insert_absent``): a row whose key is stored already is left
# out, and one whose key is stored with other values is refused, so a duplicate can never
# land silently.

_KEY_CLAUSE = re.compile(r",\s*PRIMARY KEY\s*\([^)]*\)", re.IGNORECASE)
_KEY_WORDS = re.compile(r"\s+PRIMARY KEY\b", re.IGNORECASE)
# DuckLake has no default for a LIST column either (``details.literal`` writes a list
# default as ``CAST([...] AS T[])``); writers there name every column instead.
_LIST_DEFAULT = re.compile(r"\s+DEFAULT CAST\(\[[^\]]*\] AS \w+\[\]\)", re.IGNORECASE)
# Columns that say when a row was written, not what it holds: a batch re-sent after a
# commit its writer never saw carries a later time and is still the same row.
WRITE_TIMES = frozenset({"scored_at", "created_at", "applied_at", "updated_at", "validated_at"})


class DuplicateKeyError(UserInputError):
    """A row's key is stored already with other values (a lake has no constraint to stop
    it): the transaction is rolled back, so nothing of the batch was written."""


def is_lake(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the connection's default database is a DuckLake (no keys, no ON CONFLICT)."""
    kind = scalar(
        con, "SELECT type FROM duckdb_databases() WHERE database_name = current_database()"
    )
    return kind == "ducklake"


def for_lake(ddl_text: str) -> str:
    """``ddl_text`` as a lake takes it: the same tables and columns, without PRIMARY KEY
    clauses and list defaults."""
    return _LIST_DEFAULT.sub("", _KEY_WORDS.sub("", _KEY_CLAUSE.sub("", ddl_text)))


def ddl(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """Run schema DDL: as written on a DuckDB file, ``for_lake`` on a lake."""
    con.execute(for_lake(text) if is_lake(con) else text)


def insert_absent(
    con: duckdb.DuckDBPyConnection,
    table: str,
    picks: Sequence[str],
    source: str,
    keys: Sequence[str],
    *,
    where: str = "TRUE",
    params: Sequence[Any] = (),
    pick_params: Sequence[Any] = (),
    compare: Sequence[str] = (),
) -> int:
    """``INSERT INTO table BY NAME SELECT picks FROM source s WHERE where`` for the rows
    whose ``keys`` are not stored yet; returns how many were inserted.

    On a DuckDB file the table's key does it (``ON CONFLICT DO NOTHING``). On a lake the
    same happens inside the caller's transaction: first a stored row with the same key
    but other values in ``compare`` (the batch's columns; write times left out) is
    refused with ``DuplicateKeyError``, then only absent keys are inserted.
    ``pick_params`` bind the ``?`` of ``picks``, ``params`` those of ``where``.
    """
    select = f"SELECT {', '.join(picks)} FROM {source} s"
    if not is_lake(con):
        return int(
            scalar(
                con,
                f"INSERT INTO {table} BY NAME {select} WHERE {where} ON CONFLICT DO NOTHING",
                [*pick_params, *params],
            )
        )
    on = " AND ".join(f"x.{k} = s.{k}" for k in keys)
    differs = [c for c in compare if c not in keys and c not in WRITE_TIMES]
    if differs:
        changed = " OR ".join(
            f"CAST(s.{c} AS VARCHAR) IS DISTINCT FROM CAST(x.{c} AS VARCHAR)" for c in differs
        )
        clash = one(
            con,
            f"SELECT {', '.join(f's.{k}' for k in keys)} FROM {source} s JOIN {table} x "
            f"ON {on} WHERE ({where}) AND ({changed}) LIMIT 1",
            list(params),
        )
        if clash is not None:
            named = ", ".join(f"{k}={v!r}" for k, v in zip(keys, clash, strict=True))
            raise DuplicateKeyError(
                f"{table} already holds a row with {named} whose values differ from the "
                "one being written; nothing of this batch was written"
            )
    return int(
        scalar(
            con,
            f"INSERT INTO {table} BY NAME {select} WHERE ({where}) "
            f"AND NOT EXISTS (SELECT 1 FROM {table} x WHERE {on})",
            [*pick_params, *params],
        )
    )


def claim_writes(con: duckdb.DuckDBPyConnection) -> None:
    """Make this lake transaction conflict with every other write transaction on the lake.

    DuckLake commits two transactions that only insert into a table both, so two writers
    checking a key at once could each find it absent and each insert it. Rewriting one
    catalog row (the first migration's, unchanged) makes any two overlapping writers
    conflict at commit: one wins, the other is retried (``Store``'s ``_serialised``)."""
    con.execute("UPDATE schema_migrations SET applied_at = applied_at WHERE version = 1")
