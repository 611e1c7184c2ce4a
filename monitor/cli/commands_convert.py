"""`db convert`: a store written by a newer DuckDB, copied for the installed one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from monitor.terminal.output import Format, out, print_json


def convert(
    source: Annotated[
        Path, typer.Argument(help="The store to convert (it is only read, never changed).")
    ],
    to: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="The new file (default: beside SOURCE, e.g. monitor-duckdb1.5.duckdb); "
            "must not exist.",
        ),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
) -> None:
    """Copy a store written by a newer DuckDB (e.g. 2.0.0) into a file this bias-monitor's
    DuckDB reads.

    The copy is made by the DuckDB release that wrote SOURCE (installed once, by hash,
    into the cache: the first conversion needs PyPI) and checked here, table by table,
    against the original's row counts before it is put in place. Exit 2, nothing
    written: SOURCE missing, not a DuckDB file, already readable, or --out exists.
    """
    from monitor.store.convert import convert as convert_store

    done = convert_store(source, to)
    if fmt is Format.json:
        print_json(done.to_json())
        return
    out.print(done.summary(), markup=False)
    out.print(
        f"use it with --db {done.out}, or move it over {done.source} once nothing needs "
        f"DuckDB {done.written_by} to read the original",
        markup=False,
    )
