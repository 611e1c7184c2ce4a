"""What a family's ``bias-monitor import <name>`` is, as data: one typed ``Importer``.

A family that reads published results (the caste study's folders, BBQ's and BharatBBQ's
prediction files) declares each import as an ``Importer``: its name and help, what it
reads (a folder, or one or more files), a pydantic model of its own options (one
``--option`` per field, named after the field, its help the field's description) and the
work, a function that writes the runs through ``jobs.lifecycle`` and returns what to show,
printing nothing. The CLI builds every ``import`` command from these in one loop
(``monitor.cli.commands_import``), so a family never imports the CLI, and a Python caller
can run an import without it.

The declarations are read whenever the CLI starts (``--help`` included), so a family's
``work`` imports the store, the lifecycle and the quality gate inside its body.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from rich.console import RenderableType

    from monitor.store.db import Store


class ImportOptions(BaseModel):
    """The base of every importer's options: frozen, and no option it does not declare.

    A field ``snapshot`` is the command's ``--snapshot``; a field without a default is a
    required option. A validator that finds a value wrong raises ``UserInputError`` (which
    pydantic passes through), so the user reads one line naming the option."""

    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class Reads:
    """The one argument of an import: a folder, or one or more files. The CLI checks that
    it is a folder or that each is a file before anything else is done."""

    kind: Literal["folder", "files"]
    help: str


@dataclass(frozen=True)
class Shown:
    """One thing ``--format table`` prints, in order: a line, or a family's rich table."""

    body: str | RenderableType
    stderr: bool = False  # a quarantined run's notes go to stderr
    style: str | None = None


@dataclass(frozen=True)
class ImportOutcome:
    """What an import did, as the CLI shows it: ``document`` for ``--format json``,
    ``shown`` for the table format, and whether a newly imported run was quarantined
    (the command then exits 1, like a quarantined run)."""

    document: dict[str, Any]
    shown: list[Shown]
    failed: bool


EventSink = Callable[[str], None]  # progress and notices (the CLI prints them on stderr)


OptionsT = TypeVar("OptionsT", bound=ImportOptions)


@dataclass(frozen=True)
class Importer(Generic[OptionsT]):
    """One ``bias-monitor import <name>`` of a family.

    ``work(store, paths, options, on_event)`` does the import: ``paths`` is the folder
    (one path) or the files the user named, already checked to exist; ``options`` the
    validated ``options`` model. ``check(paths, options)``, where given, finds what the
    user got wrong that the model cannot see (a history folder given a ``--date``) before
    the store is opened, so a mistake creates no store."""

    name: str
    help: str  # the command's help: a summary line, a blank line, the details
    reads: Reads
    options: type[OptionsT]
    work: Callable[[Store, list[Path], OptionsT, EventSink], ImportOutcome]
    check: Callable[[list[Path], OptionsT], None] | None = None
