"""`bias-monitor import <name>`: published results of earlier studies as runs.

Every import is a family's ``importers`` declaration (``monitor.importers.spec.Importer``:
the caste study's folders, the pairs'; BBQ's and BharatBBQ's prediction files, the choice
questions'), and this module builds one command from each, in one loop: the argument is
what the importer reads, an option per field of its options model, then ``--db`` and
``--format``. The command checks the argument, validates the options, opens the store,
calls the importer's work and prints what it returns. ``register_family_imports`` is
called once the CLI's modules are loaded (``cli.app``).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from monitor.cli.commands_db import DbOpt, FmtOpt
from monitor.importers.spec import Importer
from monitor.terminal.output import Format, err, out, print_json

import_app = typer.Typer(help="Import results of earlier studies as runs.", no_args_is_help=True)


def _import(importer: Importer, values: dict[str, Any]) -> None:
    """Run ``importer`` with the command's parsed ``values`` (``monitor.app.run_import``)
    and print its outcome."""
    from monitor.app.imports import ImportRequest, run_import

    db, fmt = values.pop("db"), values.pop("fmt")
    paths = [values.pop("folder")] if importer.reads.kind == "folder" else values.pop("files")
    request = ImportRequest(importer.name, paths, values, db)
    done = run_import(request, lambda m: err.print(m, markup=False))
    if fmt is Format.json:
        print_json(done.document)
    else:
        for shown in done.shown:
            (err if shown.stderr else out).print(shown.body, style=shown.style, markup=False)
    if done.failed:
        raise typer.Exit(1)  # a quarantined import, like a quarantined run


def _parameters(importer: Importer) -> list[inspect.Parameter]:
    """The command's parameters as typer reads them: the argument, an option per field of
    the importer's options model (``--<field>``, its description as help, required when
    it has no default), ``--db``, ``--format``."""
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    argument = typer.Argument(help=importer.reads.help)
    if importer.reads.kind == "folder":
        params = [inspect.Parameter("folder", keyword, annotation=Annotated[Path, argument])]
    else:
        params = [inspect.Parameter("files", keyword, annotation=Annotated[list[Path], argument])]
    for name, field in importer.options.model_fields.items():
        option = typer.Option(f"--{name.replace('_', '-')}", help=field.description)
        default = inspect.Parameter.empty if field.is_required() else field.default
        annotation = Annotated[field.annotation, option]  # type: ignore[name-defined]
        params.append(inspect.Parameter(name, keyword, default=default, annotation=annotation))
    params.append(inspect.Parameter("db", keyword, default=None, annotation=DbOpt))
    params.append(inspect.Parameter("fmt", keyword, default=Format.table, annotation=FmtOpt))
    return params


def _command(importer: Importer):
    """``bias-monitor import <importer.name>``: typer reads its parameters from the
    signature built here, its help from the declaration."""

    def command(**values: Any) -> None:
        _import(importer, values)

    command.__signature__ = inspect.Signature(_parameters(importer))  # type: ignore[attr-defined]
    command.__doc__ = importer.help
    return command


def register_family_imports() -> None:
    """Register every family's ``import`` commands on ``import_app``, in the registry's
    order (each family's ``importers`` hook, in its declaration's order)."""
    from monitor.contract.registry import families

    for family in families():
        declared = family.importers().declared
        for importer in (declared() if declared is not None else {}).values():
            import_app.command(importer.name)(_command(importer))
