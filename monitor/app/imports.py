"""Importing published results as runs, as a function: find the importer a family
declared (``monitor.importers.spec.Importer``), check what it reads, validate its
options, open the store and run its work. The outcome says what to show; the caller (the
CLI, or a Python user) renders it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monitor.app.stores import open_store
from monitor.errors import UserInputError
from monitor.importers.spec import Importer, ImportOutcome
from monitor.jobs.options import EventSink


@dataclass(frozen=True)
class ImportRequest:
    """``bias-monitor import <importer> PATHS... --<option> VALUE``: ``options`` by the
    importer's field names (``date``, ``suffix``, ...; its options model validates them)."""

    importer: str
    paths: Sequence[Path]
    options: Mapping[str, Any] = field(default_factory=dict)
    db: Path | None = None


def importers() -> dict[str, Importer]:
    """Every installed family's importers by command name, in the registry's order."""
    from monitor.contract.registry import families

    out: dict[str, Importer] = {}
    for family in families():
        declared = family.importers().declared
        out.update(declared() if declared is not None else {})
    return out


def run_import(request: ImportRequest, on_event: EventSink = lambda _msg: None) -> ImportOutcome:
    """Import the request's paths as runs (runs already stored are skipped); a path that
    is not what the importer reads, or a refused option, is a one-line ``UserInputError``
    before the store is opened."""
    found = importers()
    if request.importer not in found:
        raise UserInputError(
            f"no importer {request.importer!r}; installed: {', '.join(found) or 'none'}"
        )
    importer = found[request.importer]
    paths = list(request.paths)
    for p in paths:
        if importer.reads.kind == "folder" and not p.is_dir():
            raise UserInputError(f"{p}: not a folder")
        if importer.reads.kind == "files" and not p.is_file():
            raise UserInputError(f"{p}: not a file")
    options = importer.options(**request.options)  # a refused value: its UserInputError
    if importer.check is not None:
        importer.check(paths, options)
    store = open_store(request.db, must_exist=False)
    return importer.work(store, paths, options, on_event)
