"""Generic core records and the families' detail tables, in SQL.

Since schema 7 the core ``items`` and ``scores`` hold only what every family has; the
columns one family needs live in the detail tables it declares
(``monitor.contract.detail``). This module is the one place that knows both halves:

* ``ensure`` creates each registered family's tables and applies their own migrations
  (recorded in ``detail_tables``), on open, inside the store's migration transaction;
* ``insert`` writes a *wide* batch (core columns plus every declared column, what
  ``codec`` builds from the records) into the core table and, for the declaring
  family's rows (an item of one of its kinds; a score of such an item) that carry
  anything beyond the defaults, into each detail table: another family's values never
  land in a table it did not declare;
* ``wide`` is the relation readers select from to get the core row with every family's
  columns (defaults where a row has no detail), so a record reads back as it was written.

Readers that need only core columns (drift's outcomes, the report's measures) keep
reading the core tables: the 20M-row paths join nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import duckdb

from monitor.contract import registry
from monitor.contract.detail import (
    AddColumn,
    DetailColumn,
    DetailTable,
    DropColumn,
    Extends,
    MigrationStep,
    RenameColumn,
)
from monitor.errors import UserInputError
from monitor.records import LEGACY_KIND
from monitor.store import sql

if TYPE_CHECKING:
    from monitor.contract.family import Family

BOOKKEEPING = "detail_tables"
BOOKKEEPING_DDL = f"""
CREATE TABLE {BOOKKEEPING} (
    name        VARCHAR PRIMARY KEY,
    family      VARCHAR NOT NULL,
    extends     VARCHAR NOT NULL,
    version     INTEGER NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
)
"""

# The core tables' columns since schema 7, in table order (``scored_at`` is set on write).
CORE_COLUMNS: dict[str, tuple[str, ...]] = {
    "items": (
        "item_id",
        "benchmark",
        "benchmark_version",
        "axis",
        "region",
        "source_row",
        "template",
        "errata",
        "kind",
        "payload",
    ),
    "scores": (
        "run_id",
        "item_id",
        "metric",
        "metric_version",
        "outcome",
        "delta",
        "details",
        "scored_at",
    ),
}
_KEY_TYPES = {"item_id": "VARCHAR", "run_id": "VARCHAR"}
# The core tables' keys: a PRIMARY KEY on a DuckDB file, checked on write on a lake.
CORE_KEYS: dict[str, tuple[str, ...]] = {"items": ("item_id",), "scores": ("run_id", "item_id")}


def registered() -> tuple[tuple[str, DetailTable], ...]:
    """(family name, table) of every registered family, in registry order; a table name
    or column claimed twice is refused, since the store could not tell whose it is."""
    return tuple((family.name, table) for family, table in _declared())


def _declared() -> tuple[tuple[Family, DetailTable], ...]:
    out: list[tuple[Family, DetailTable]] = []
    names: dict[str, str] = {}
    claimed: dict[tuple[str, str], str] = {}
    for family in registry.families():
        for table in family.detail_tables:
            if table.name in names or table.name in CORE_COLUMNS:
                raise UserInputError(
                    f"detail table {table.name!r} of family {family.name!r} is already "
                    f"taken ({names.get(table.name, 'core')})"
                )
            names[table.name] = family.name
            for column in table.columns:
                slot = (table.extends, column.name)
                if column.name in CORE_COLUMNS[table.extends] or slot in claimed:
                    raise UserInputError(
                        f"column {column.name!r} of detail table {table.name!r} is already "
                        f"a column of {table.extends} ({claimed.get(slot, 'core')})"
                    )
                claimed[slot] = table.name
            out.append((family, table))
    return tuple(out)


def kinds(table: DetailTable) -> tuple[str, ...]:
    """The item kinds whose rows ``table`` holds: its declaring family's."""
    return next((f.item_kinds for f, t in _declared() if t.name == table.name), ())


def table_for(kind: str, extends: Extends) -> DetailTable | None:
    """The detail table that holds rows of items of ``kind`` (its family's), if any."""
    return next((t for f, t in _declared() if t.extends == extends and kind in f.item_kinds), None)


def tables_of(extends: Extends) -> tuple[DetailTable, ...]:
    return tuple(t for _, t in registered() if t.extends == extends)


def detail_columns(extends: Extends) -> tuple[DetailColumn, ...]:
    """Every declared column beyond ``extends``'s core ones, in registry order."""
    return tuple(c for t in tables_of(extends) for c in t.columns)


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """A table's columns in order, as the file has them."""
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_catalog = "
        "current_database() AND table_schema = 'main' AND table_name = ? "
        "ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [name for (name,) in rows]


def columns(con: duckdb.DuckDBPyConnection, extends: Extends) -> list[str]:
    """The wide row's column names: the core table's (as the file has them, later core
    migrations included), then every family's."""
    return table_columns(con, extends) + [c.name for c in detail_columns(extends)]


# -- SQL text ----------------------------------------------------------------------


def literal(value: Any, kind: str) -> str:
    """A declared default as a typed SQL literal."""
    if value is None:
        return f"CAST(NULL AS {kind})"
    if isinstance(value, tuple):
        items = ", ".join(literal(v, "VARCHAR") for v in value)
        return f"CAST([{items}] AS {kind})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return f"CAST({value!r} AS {kind})"
    text = str(value).replace("'", "''")
    return f"CAST('{text}' AS {kind})"


def _column_ddl(column: DetailColumn) -> str:
    default = "" if column.default is None else f" DEFAULT {literal(column.default, column.type)}"
    return f"{column.name} {column.type}{default}"


def create_ddl(table: DetailTable) -> str:
    key = [f"{k} {_KEY_TYPES[k]} NOT NULL" for k in table.key]
    body = ",\n    ".join([*key, *(_column_ddl(c) for c in table.columns)])
    return f"CREATE TABLE {table.name} (\n    {body},\n    PRIMARY KEY ({', '.join(table.key)})\n)"


def _step_ddl(table: str, step: MigrationStep) -> str:
    if isinstance(step, AddColumn):
        return f"ALTER TABLE {table} ADD COLUMN {_column_ddl(step.column)}"
    if isinstance(step, DropColumn):
        return f"ALTER TABLE {table} DROP COLUMN {step.name}"
    if isinstance(step, RenameColumn):
        return f"ALTER TABLE {table} RENAME COLUMN {step.old} TO {step.new}"
    raise TypeError(f"unknown migration step {step!r}")


def carries(table: DetailTable, alias: str, present: Sequence[str] | None = None) -> str:
    """SQL condition: the row holds something beyond the defaults in ``table``'s columns
    (columns the source lacks count as defaults)."""
    terms = [
        f"{alias}.{c.name} IS DISTINCT FROM {literal(c.default, c.type)}"
        for c in table.columns
        if present is None or c.name in present
    ]
    return " OR ".join(terms) if terms else "FALSE"


def wide(extends: Extends) -> str:
    """A parenthesised relation: each core row with every family's columns, a column's
    default where the row has no detail row (what the record had when it was written)."""
    picks = ["c.*"]
    joins = []
    for n, table in enumerate(tables_of(extends)):
        alias = f"d{n}"
        on = " AND ".join(f"{alias}.{k} = c.{k}" for k in table.key)
        joins.append(f"LEFT JOIN {table.name} {alias} ON {on}")
        picks.extend(
            f"CASE WHEN {alias}.{table.key[0]} IS NULL THEN {literal(c.default, c.type)} "
            f"ELSE {alias}.{c.name} END AS {c.name}"
            for c in table.columns
        )
    return f"(SELECT {', '.join(picks)} FROM {extends} c {' '.join(joins)})"


def insert(
    con: duckdb.DuckDBPyConnection,
    extends: Extends,
    source: str,
    present: Sequence[str],
    *,
    scored_at: Any = None,
    where: str = "TRUE",
    params: Sequence[Any] = (),
) -> int:
    """Insert a wide batch (``source``, with columns ``present``) into ``extends`` and its
    detail tables; rows whose key is stored already are left as they are (append-only,
    idempotent). ``scored_at`` (scores only) is bound when the batch lacks the column.
    Returns how many core rows were new."""
    declared = {c.name for c in detail_columns(extends)}
    core = [c for c in present if c not in declared]
    values = list(params)
    if extends == "scores" and "scored_at" not in present:
        core.append("scored_at")
        picks = [c for c in core if c != "scored_at"] + [
            "CAST(? AS TIMESTAMPTZ) AS scored_at"
            if scored_at is not None
            else "current_timestamp AS scored_at"
        ]
        values = ([scored_at] if scored_at is not None else []) + values
    else:
        picks = core
    pick_params = values[: len(values) - len(params)]
    added = sql.insert_absent(
        con,
        extends,
        picks,
        source,
        CORE_KEYS[extends],
        where=where,
        params=params,
        pick_params=pick_params,
        compare=[c for c in core if c in present],
    )
    for table in tables_of(extends):
        cols = [c.name for c in table.columns if c.name in present]
        # A column the batch lacks gets its declared default, named here rather than
        # left to the table's DEFAULT: a lake has none for a list column.
        defaults = [
            f"{literal(c.default, c.type)} AS {c.name}"
            for c in table.columns
            if c.name not in present
        ]
        sql.insert_absent(
            con,
            table.name,
            [*table.key, *cols, *defaults],
            source,
            table.key,
            where=f"({where}) AND ({carries(table, 's', present)}) "
            f"AND ({belongs(table, 's', present)})",
            params=params,
            compare=cols,
        )
    return added


def belongs(table: DetailTable, alias: str, present: Sequence[str] | None = None) -> str:
    """SQL condition: the row is of ``table``'s family. An item by its kind (a row from
    before kinds, schema < 3, was a sentence pair: ``LEGACY_KIND``); a score by its
    item's kind, so the item must be stored first (every writer stores items first)."""
    names = ", ".join(literal(k, "VARCHAR") for k in kinds(table)) or "NULL"
    if table.extends == "items":
        kind = f"{alias}.kind" if present is None or "kind" in present else "NULL"
        return f"coalesce({kind}, {literal(LEGACY_KIND, 'VARCHAR')}) IN ({names})"
    return (
        f"{alias}.item_id IN (SELECT item_id FROM items WHERE "
        f"coalesce(kind, {literal(LEGACY_KIND, 'VARCHAR')}) IN ({names}))"
    )


# -- creating and migrating ------------------------------------------------------------


def _recorded(con: duckdb.DuckDBPyConnection) -> dict[str, int] | None:
    """Table name -> recorded version; None before schema 7 (no bookkeeping table)."""
    present = sql.scalar(
        con,
        "SELECT count(*) FROM information_schema.tables WHERE table_catalog = "
        "current_database() AND table_schema = 'main' AND table_name = ?",
        [BOOKKEEPING],
    )
    if not present:
        return None
    rows = con.execute(f"SELECT name, version FROM {BOOKKEEPING}").fetchall()
    return {name: int(version) for name, version in rows}


def current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether every registered family's table exists at its newest version."""
    recorded = _recorded(con)
    if recorded is None:
        return False
    return all(recorded.get(t.name) == t.version for _, t in registered())


def ensure(con: duckdb.DuckDBPyConnection, label: str) -> None:
    """Create the registered families' tables that are missing and migrate the older
    ones; the caller holds the transaction. A table newer than its family's declaration
    is refused (the store was written by a newer release of that family)."""
    recorded = _recorded(con)
    if recorded is None:
        sql.ddl(con, BOOKKEEPING_DDL)
        recorded = {}
    for family, table in registered():
        have = recorded.get(table.name)
        if have is None:
            sql.ddl(con, create_ddl(table))
            con.execute(
                f"INSERT INTO {BOOKKEEPING} VALUES (?, ?, ?, ?, current_timestamp)",
                [table.name, family, table.extends, table.version],
            )
            continue
        if have > table.version:
            raise UserInputError(
                f"{label}: detail table {table.name} has version {have}, newer than family "
                f"{family!r} declares ({table.version}); upgrade that family to read it"
            )
        for migration in table.migrations:
            if migration.version > have:
                for step in migration.steps:
                    con.execute(_step_ddl(table.name, step))
        if have < table.version:
            con.execute(
                f"UPDATE {BOOKKEEPING} SET version = ?, updated_at = current_timestamp "
                "WHERE name = ?",
                [table.version, table.name],
            )


# -- schema 7: the pair columns leave the core tables ----------------------------------

# The items table's identity columns, the same in every schema: migration 1 creates the
# table with them (``schema.MIGRATIONS``) and schema 7 rebuilds it around them. One text
# for both, so the SQL each released migration runs stays byte-identical
# (tests/test_schema_migrations_frozen.py pins it).
ITEM_IDENTITY_COLUMNS = """\
            item_id           VARCHAR PRIMARY KEY,
            benchmark         VARCHAR NOT NULL,
            benchmark_version VARCHAR NOT NULL,
            axis              VARCHAR NOT NULL,
            region            VARCHAR NOT NULL,
            source_row        INTEGER NOT NULL,"""

_CORE_DDL_7 = {
    "items": f"""
        CREATE TABLE items__7 (
{ITEM_IDENTITY_COLUMNS}
            template          VARCHAR,       -- cluster key: items filled from one template
            errata            VARCHAR[] NOT NULL,
            kind              VARCHAR,
            payload           JSON
        )""",
    "scores": """
        CREATE TABLE scores__7 (
            run_id          VARCHAR NOT NULL,
            item_id         VARCHAR NOT NULL,
            metric          VARCHAR NOT NULL,
            metric_version  VARCHAR NOT NULL,
            outcome         VARCHAR,
            delta           DOUBLE,
            details         JSON,
            scored_at       TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (run_id, item_id)
        )""",
}


def move_to_detail_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Schema 7: create the families' detail tables, copy each family column's values out
    of ``items``/``scores`` into them, then rebuild both core tables without those columns.

    DuckDB cannot drop a column of a table with a PRIMARY KEY (nor alter one an index
    depends on), so each core table is rebuilt: created anew, filled in the old table's
    row order (drift's lists are ordered by rowid), the old one dropped, the new renamed.
    A column no registered family declares would be lost, so it stops the migration.
    """
    ensure(con, "store")
    for extends in ("items", "scores"):
        old = table_columns(con, extends)
        declared = {c.name for c in detail_columns(extends)}
        lost = [c for c in old if c not in CORE_COLUMNS[extends] and c not in declared]
        if lost:
            raise UserInputError(
                f"the store's {extends} table has columns no installed family declares "
                f"({', '.join(lost)}); install the family that wrote them and open it again"
            )
        for table in tables_of(extends):
            cols = [c.name for c in table.columns if c.name in old]
            con.execute(
                f"INSERT INTO {table.name} BY NAME SELECT {', '.join([*table.key, *cols])} "
                f"FROM {extends} s WHERE {carries(table, 's', old)} ORDER BY s.rowid"
            )
        core = ", ".join(CORE_COLUMNS[extends])
        sql.ddl(con, _CORE_DDL_7[extends])
        con.execute(
            f"INSERT INTO {extends}__7 ({core}) SELECT {core} FROM {extends} ORDER BY rowid"
        )
        con.execute(f"DROP TABLE {extends}")
        con.execute(f"ALTER TABLE {extends}__7 RENAME TO {extends}")
