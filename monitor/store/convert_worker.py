"""The conversion step that must run on the DuckDB that wrote a store (``db convert``).

Run as a script by ``monitor.store.convert`` under an interpreter whose ``duckdb`` is the
newer release (``python -S convert_worker.py SRC DST STORAGE``, that release alone on
``PYTHONPATH``); it imports nothing but DuckDB and the standard library. It attaches the
source read-only, writes every schema, table, constraint and row into a new file in the
older storage format (``STORAGE_VERSION``) with ``COPY FROM DATABASE``, and prints, as one
JSON object, each table's row count in the source and in the copy as this DuckDB reads
them, for the caller to check again with its own DuckDB.
"""

from __future__ import annotations

import json
import sys

import duckdb

_TABLES = (
    "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = ? "
    "AND NOT internal ORDER BY schema_name, table_name"
)


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _counts(con: duckdb.DuckDBPyConnection, database: str) -> dict[str, int]:
    counts = {}
    for schema, table in con.execute(_TABLES, [database]).fetchall():
        name = table if schema == "main" else f"{schema}.{table}"
        (rows,) = con.execute(f'SELECT count(*) FROM {database}."{schema}"."{table}"').fetchone()
        counts[name] = int(rows)
    return counts


def main(source: str, target: str, storage: str) -> None:
    con = duckdb.connect(":memory:")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute(f"ATTACH {_sql_string(source)} AS src (READ_ONLY)")
    con.execute(f"ATTACH {_sql_string(target)} AS dst (STORAGE_VERSION {_sql_string(storage)})")
    con.execute("COPY FROM DATABASE src TO dst")
    report = {
        "duckdb": duckdb.__version__,
        "source": _counts(con, "src"),
        "copy": _counts(con, "dst"),
    }
    con.execute("DETACH dst")
    con.execute("DETACH src")
    con.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:4])
