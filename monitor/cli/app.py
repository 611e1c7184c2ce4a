"""`bias-monitor` command line. Each command parses, calls one room, renders, exits.

Exit codes (also in README):
  0  success
  1  a run failed or was quarantined by the quality gate; `drift --fail-on` found a regression
  2  bad input: unknown snapshot or benchmark, malformed config, missing or corrupt data,
     unwritable database (nothing is written to the store)
  3  nothing failed, but some requested snapshots were skipped (weights not obtainable here)
"""

from __future__ import annotations

import contextlib
import errno
import gc
import inspect
import os
import sys
from typing import Annotated

import typer

from monitor.cli import (
    commands_ci,
    commands_convert,
    commands_data,
    commands_db,
    commands_drift,
    commands_import,
    commands_migrate,
    commands_run,
    commands_snapshots,
)
from monitor.contract.registry import FamilyRegistryError
from monitor.errors import MonitorError
from monitor.terminal.output import err

EXIT_CODES = """\
Exit codes: 0 success; 1 a run failed or was quarantined (or drift --fail-on matched);
2 bad input (unknown snapshot/benchmark, malformed config, missing/corrupt data,
unwritable DB; the store is left untouched); 3 some snapshots were skipped because
their weights cannot be obtained here.
"""

app = typer.Typer(
    name="bias-monitor",
    help=(
        "Regression monitor for social bias in language models (caste, religion, race, gender).\n\n"
        "Scores pinned model snapshots on Indian-BhED and CrowS-Pairs, stores every item score "
        "with provenance in DuckDB, and reports per-axis bias rates with 95% Wilson intervals.\n\n"
        + EXIT_CODES
    ),
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

DbOption = commands_db.DbOpt


def _lake_data_probe(lake_data: commands_db.LakeDataOpt = None) -> None:
    """Only the source of the ``--lake-data`` option ``with_lake_data`` adds."""


def with_lake_data(command: typer.main.click.Command) -> typer.main.click.Command:
    """Give every command that takes ``--db`` a ``--lake-data`` option (a DuckLake's data
    path): set for the process as ``$MONITOR_LAKE_DATA`` by its callback, so no command
    function takes one more parameter."""
    probe = typer.Typer()
    probe.command()(_lake_data_probe)
    option = typer.main.get_command(probe).params[0]
    option.expose_value = False
    stack = [command]
    while stack:
        current = stack.pop()
        stack.extend(getattr(current, "commands", {}).values())
        names = {p.name for p in current.params}
        if "db" in names and "lake_data" not in names:
            current.params.append(option)
    return command


def package_version() -> str:
    """The installed distribution's version (what ``pip`` and a release tag name); the
    package's own ``__version__`` when it runs from a checkout that is not installed.
    The release workflow refuses a tag other than ``v`` + this version."""
    import importlib.metadata

    try:
        return importlib.metadata.version("bias-monitor")
    except importlib.metadata.PackageNotFoundError:
        from monitor import __version__

        return __version__


def _print_version(value: bool) -> None:
    """``--version``: print the version and stop, before any command is parsed."""
    if value:
        print(f"bias-monitor {package_version()}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """The options before the command: ``--version``."""


app.add_typer(commands_data.app, name="data")
app.add_typer(commands_db.runs_app, name="runs")
commands_db.db_app.command("convert")(commands_convert.convert)
commands_db.db_app.command("migrate-to")(commands_migrate.migrate_to)
app.add_typer(commands_db.db_app, name="db")
commands_run.snapshots_app.command("add")(commands_snapshots.add)
app.add_typer(commands_run.snapshots_app, name="snapshots")
app.command(
    "run",
    cls=commands_run.RUN_COMMAND,
    help=inspect.cleandoc(commands_run.run.__doc__ or "") + "\n\n" + EXIT_CODES,
)(commands_run.run)
app.command("show")(commands_db.show)
app.command("export")(commands_db.export)
app.command("quality")(commands_drift.quality)
app.command("drift", cls=commands_drift.DRIFT_COMMAND)(commands_drift.drift)
app.command("report", cls=commands_drift.REPORT_COMMAND)(commands_drift.report)
# An installed family that cannot be loaded is the environment's fault, not a bug: the
# CLI still starts, and each command that needs the families says why in one line.
with contextlib.suppress(FamilyRegistryError):
    commands_import.register_family_imports()
app.add_typer(commands_import.import_app, name="import")
app.add_typer(commands_ci.app, name="ci")


GC_YOUNG_THRESHOLD = 50_000


def _environment_failure(exc: BaseException) -> str | None:
    """One line for what the machine, not the code, got wrong: a disk that is full, a
    DuckDB file damaged past its header. Writes are transactions (and exports appear by
    rename), so what was stored before is intact; None for anything else (a bug, shown
    with its traceback)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" writing {exc.filename}" if exc.filename else ""
        return (
            f"no space left on the device{where}; nothing stored was changed, free space and rerun"
        )
    duckdb = sys.modules.get("duckdb")
    if duckdb is not None and isinstance(exc, duckdb.Error):
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if "space left" in first.lower():
            return f"no space left on the device ({first}); free space and rerun"
        return f"the DuckDB store cannot be used: {first} (restore it or rebuild it: db rebuild)"
    return None


def main() -> None:
    """Entry point: turn MonitorErrors into one line on stderr and their exit code."""
    # A command is a short-lived process that builds millions of long-lived objects (a
    # year's report: run rows, item outcomes, trend points) and few reference cycles.
    # CPython's default young-generation threshold (700 allocations) makes the collector
    # re-walk them all repeatedly: 0.58 s of a 6 s report on the year's store; at 50,000,
    # 0.12 s, the same peak memory (bench/store_scale.py).
    gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 20)
    if not err.is_terminal:
        # In a log, library progress bars (Hugging Face's tqdm) redraw with carriage
        # returns that only make sense on a terminal; our own plain progress lines remain.
        # Set before any backend imports huggingface_hub, which reads it once.
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        # transformers' GGUF dequantisation draws a bare tqdm bar; tqdm reads TQDM_*
        # defaults once, at import, which comes later (with the backend).
        os.environ.setdefault("TQDM_DISABLE", "1")
    try:
        # In non-standalone mode click returns the code of a `typer.Exit` instead of exiting.
        code = with_lake_data(typer.main.get_command(app))(standalone_mode=False)
    except MonitorError as exc:
        err.print("error:", style="red", end=" ")
        err.print(str(exc), highlight=False)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err.print("interrupted; rerun the same command to resume")
        sys.exit(130)
    except Exception as exc:
        # Usage errors (typer's vendored click) arrive here in non-standalone mode.
        if callable(getattr(exc, "show", None)) and isinstance(
            getattr(exc, "exit_code", None), int
        ):
            exc.show()
            sys.exit(2)
        message = _environment_failure(exc)
        if message is None:
            raise
        err.print("error:", style="red", end=" ")
        err.print(message, highlight=False)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
