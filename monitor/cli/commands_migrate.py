"""`db migrate-to`: move a file store (or the history branch's run exports) into a lake.

Its own module because it renders drift's JSON to check the move (``commands_drift``,
which itself imports ``commands_db``'s options): ``app`` registers it under ``db``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.commands_db import DbOpt, FmtOpt
from monitor.terminal.output import Format, err, out, print_json

RunsPerCommitOpt = Annotated[
    int,
    typer.Option(
        "--runs-per-commit",
        min=1,
        help="Runs copied per lake commit (memory stays bounded whatever the store's "
        "size; an interrupted move keeps the commits made, and a rerun finishes it).",
    ),
]


def migrate_to(
    lake: Annotated[
        str,
        typer.Argument(
            metavar="LAKE_URL",
            help="The lake to fill: ducklake:sqlite:FILE or ducklake:postgres:'dbname=... "
            "host=...' (its data path in --lake-data or $MONITOR_LAKE_DATA).",
        ),
    ],
    db: DbOpt = None,
    from_export: Annotated[
        Path | None,
        typer.Option(
            "--from-export",
            help="Move the run exports under this folder (a checkout of the results "
            "branch, as `db rebuild` reads it) instead of the --db file.",
        ),
    ] = None,
    runs_per_commit: RunsPerCommitOpt = 200,
    fmt: FmtOpt = Format.table,
) -> None:
    """Move a DuckDB file store (--db) or a history of run exports into a lake.

    Every run, item, score, measure and verdict is copied by the lake's DuckDB from the
    file attached read-only, --runs-per-commit runs a commit (a progress line each on
    stderr), the source never written (an older file is upgraded in a temporary copy).
    Then each table's row count and `drift --format json` must read the same from both
    stores. Exit 2, nothing written, when the lake already holds other runs; runs the lake
    holds already (an interrupted move's) are checked and skipped, so running the
    command again finishes a move; a lake holding exactly the same runs is left as it is.
    """
    from monitor.app.migrate_to import migrate_to as move

    done = move(
        lake,
        db,
        _drift_text,
        from_export=from_export,
        runs_per_commit=runs_per_commit,
        on_event=lambda m: err.print(m, markup=False, highlight=False),
    )
    report = done.report
    if fmt is Format.json:
        print_json(_json_of(done))
        return
    out.print(report.summary(), markup=False)
    out.print(
        "row counts equal in every table; drift --format json the same from both "
        f"({done.drift_pairs} pair(s) of runs)",
        markup=False,
    )
    if done.drift_note:
        out.print(f"drift: {done.drift_note}", markup=False)


def _json_of(done) -> dict:
    """The move's summary as ``--format json`` prints it."""
    report = done.report
    return {
        "summary": report.summary(),
        "moved": not report.already_there,
        "source": report.source,
        "lake": report.lake,
        "runs": report.runs,
        "tables": report.tables,
        "drift_pairs": done.drift_pairs,
    }


def _drift_text(done) -> str:
    """``drift --format json``'s document for ``done``, as text to compare."""
    import json

    from monitor.cli.commands_drift import _drift_json

    return json.dumps(_drift_json(done.result, False, done.snapshot_of), default=str, indent=2)
