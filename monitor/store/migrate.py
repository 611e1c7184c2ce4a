"""Apply ``schema.MIGRATIONS`` to a DuckDB connection and read which version a file has.

Kept apart from the ``Store`` so that merge can build an in-memory copy of an *older*
shard at exactly that shard's version and then upgrade it with the same code path
that upgrades a user's database file.
"""

from __future__ import annotations

import duckdb

from monitor.errors import UserInputError
from monitor.store import details, schema, sql

MIGRATIONS_TABLE = "schema_migrations"
# The core schema from which families' detail tables exist (``details.ensure``).
DETAIL_TABLES_SINCE = 7

_CREATE_MIGRATIONS_TABLE = f"""
CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
    version     INTEGER PRIMARY KEY,
    description VARCHAR NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL
)
"""


def latest_version() -> int:
    """The newest version this code knows; read at call time so tests can add migrations."""
    versions = [version for version, _, _ in schema.MIGRATIONS]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"schema.MIGRATIONS must be numbered 1..n in order, got {versions}")
    return versions[-1]


def user_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Base tables in the connection's default database, sorted."""
    rows = con.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_catalog = current_database() AND table_schema = 'main' "
        "AND table_type = 'BASE TABLE' ORDER BY table_name"
    ).fetchall()
    return [name for (name,) in rows]


def installed_version(con: duckdb.DuckDBPyConnection, label: str) -> int:
    """Schema version recorded in the database; 0 for an empty database.

    A database with tables but no migrations table was not made by this project:
    refusing it keeps us from "migrating" somebody else's file.
    """
    tables = user_tables(con)
    if MIGRATIONS_TABLE not in tables:
        if tables:
            raise UserInputError(
                f"{label} is a DuckDB file but not a bias-monitor store "
                f"(no {MIGRATIONS_TABLE} table)"
            )
        return 0
    version = sql.scalar(con, f"SELECT coalesce(max(version), 0) FROM {MIGRATIONS_TABLE}")
    return int(version)


def check_not_newer(version: int, label: str) -> None:
    latest = latest_version()
    if version > latest:
        raise UserInputError(
            f"{label} has schema version {version}, newer than this bias-monitor knows "
            f"({latest}); upgrade bias-monitor to read it"
        )


def apply_migrations(
    con: duckdb.DuckDBPyConnection, label: str, upto: int | None = None
) -> list[int]:
    """Apply pending migrations (up to ``upto``) in ONE transaction; return versions applied.

    The version is re-read inside the transaction, so two processes opening a fresh
    file at once cannot both apply migration 1: the second sees it recorded.
    """
    target = latest_version() if upto is None else upto
    con.begin()
    try:
        current = installed_version(con, label)
        check_not_newer(current, label)
        pending = [m for m in schema.MIGRATIONS if current < m[0] <= target]
        if pending:
            sql.ddl(con, _CREATE_MIGRATIONS_TABLE)
        for version, description, ddl in pending:
            if callable(ddl):
                ddl(con)
            elif ddl.strip():
                sql.ddl(con, ddl)  # on a lake without its keys (DuckLake has none)
            con.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, ?, current_timestamp)",
                [version, description],
            )
        if target >= DETAIL_TABLES_SINCE:
            details.ensure(con, label)
    except BaseException:
        con.rollback()
        raise
    con.commit()
    return [version for version, _, _ in pending]


def is_current(con: duckdb.DuckDBPyConnection, label: str) -> bool:
    """Whether the file needs nothing: the newest core schema, and every installed
    family's detail tables at their newest versions (a newly installed family's tables
    are created on the next writable open)."""
    version = installed_version(con, label)
    return version == latest_version() and details.current(con)
