"""`bias-monitor import <name>`: published results of earlier studies as runs.

The commands are the families': a family whose published files have a shape of their own
writes its command in its folder (``import_commands`` hook: the caste study's results and
history folders, the pairs'), and a family that imports per-item prediction files
declares them as data (``importers`` hook: BBQ, BharatBBQ), for which this module builds
one command each. ``register_family_imports`` is called once the CLI's modules are
loaded (``cli.app``), so a family's command module can use them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.commands_db import DbOpt, FmtOpt
from monitor.cli.output import Format, err, out, print_json

import_app = typer.Typer(help="Import results of earlier studies as runs.", no_args_is_help=True)


# Published per-item predictions of a family that lives in its own folder: each family's
# ``importers`` hook declares its commands (name, help, default date, the work); they are
# registered here in one loop, and a run's summary is the family's own ``cli_table``.


def _import_predictions(
    family_name: str,
    name: str,
    files: list[Path],
    on_date: str | None,
    suffix: str | None,
    columns: list[str] | None,
    db: Path | None,
    fmt: Format,
) -> None:
    from monitor.app.imports import ImportRequest, import_predictions

    request = ImportRequest(family_name, name, files, on_date, suffix, columns, db)
    result = import_predictions(request, on_event=lambda m: err.print(m, markup=False))
    done, runs = result.done, result.runs
    if fmt is Format.json:
        print_json(
            {
                "run_ids": done.run_ids,
                "new": done.new,
                "skipped": done.skipped,
                "runs": [
                    {
                        "run_id": r.run_id,
                        "snapshot_id": r.snapshot_id,
                        "status": r.status,
                        "notes": r.notes,
                        "import": done.facts[r.run_id],
                    }
                    for r in runs
                ],
            }
        )
    else:
        _print_imported(result)
    if result.quarantined:
        raise typer.Exit(1)  # a quarantined import, like a quarantined run


def _print_imported(result) -> None:
    """Each skipped file's run, then each new run's line and its family's table."""
    done, runs = result.done, result.runs
    for rid in done.skipped:  # the same rows, whatever the date or line endings
        out.print(f"{done.snapshots[rid]}: already imported as {rid}", markup=False)
    if done.skipped and not runs:
        out.print(f"nothing new: all {len(done.skipped)} runs are already in the store")
    table = result.family.hook("cli_table")
    for run in runs:
        facts = done.facts[run.run_id]
        out.print(
            f"imported run {run.run_id} ({run.snapshot_id}, {run.metric}): {run.status}; "
            f"{facts['rows']} rows, {facts['unmatched']} predictions naming no option",
            markup=False,
        )
        if run.status != "complete":
            err.print(f"  {run.notes}", style="red", markup=False)
        elif table is not None:
            out.print(table(result.measures[run.run_id], f"{run.snapshot_id}  run {run.run_id}"))


def _family_import_command(family_name: str, spec) -> None:
    """Register ``bias-monitor import <spec.name>`` for a folder family's importer.

    The options' help comes from the family's declaration, so the annotations are built
    here as objects (this module's annotations are otherwise strings, which typer would
    evaluate without ``spec`` in scope)."""

    def command(files, on_date=None, suffix=None, column=None, db=None, fmt=Format.table):
        _import_predictions(family_name, spec.name, files, on_date, suffix, column, db, fmt)

    date_help = "When the predictions were made (YYYY-MM-DD); default: the files' commit"
    command.__annotations__ = {
        "files": Annotated[list[Path], typer.Argument(help=spec.files_help)],
        "on_date": Annotated[
            str | None, typer.Option("--date", help=f"{date_help} ({spec.default_date}).")
        ],
        "suffix": Annotated[
            str | None,
            typer.Option(
                "--suffix",
                help="Each column's run is filed under the snapshot <model><suffix> "
                f"(default {spec.default_suffix}).",
            ),
        ],
        "column": Annotated[list[str] | None, typer.Option("--column", help=spec.columns_help)],
        "db": DbOpt,
        "fmt": FmtOpt,
        "return": None,
    }
    command.__doc__ = spec.summary
    import_app.command(spec.name)(command)


def register_family_imports() -> None:
    """Register every family's ``import`` commands on ``import_app``, in the registry's
    order: the commands a family writes itself (``import_commands`` hook: the caste
    study's folders), then its published predictions (``importers`` hook)."""
    from monitor.metrics.families import FAMILIES

    for family in FAMILIES.values():
        commands = family.hook("import_commands")
        for name, command in (commands() if commands is not None else {}).items():
            import_app.command(name)(command)
        hook = family.hook("importers")
        for spec in (hook() if hook is not None else {}).values():
            _family_import_command(family.name, spec)
