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

from monitor.cli.commands_db import DbOpt, FmtOpt, _store
from monitor.errors import UserInputError
from monitor.importers.spec import Importer
from monitor.terminal.output import Format, err, out, print_json

import_app = typer.Typer(help="Import results of earlier studies as runs.", no_args_is_help=True)


def _import(importer: Importer, values: dict[str, Any]) -> None:
    """Run ``importer`` with the command's parsed ``values`` and print its outcome."""
    db, fmt = values.pop("db"), values.pop("fmt")
    if importer.reads.kind == "folder":
        paths = [values.pop("folder")]
        if not paths[0].is_dir():
            raise UserInputError(f"{paths[0]}: not a folder")
    else:
        paths = list(values.pop("files"))
        for f in paths:
            if not f.is_file():
                raise UserInputError(f"{f}: not a file")
    options = importer.options(**values)  # a wrong value raises the option's UserInputError
    if importer.check is not None:
        importer.check(paths, options)
    store = _store(db, must_exist=False)
    done = importer.work(store, paths, options, lambda m: err.print(m, markup=False))
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
