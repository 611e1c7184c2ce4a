"""Rendering helpers shared by the commands and the families' tables: rich tables for people,
JSON for machines.

Progress and notices go to stderr so that ``--format json`` on stdout stays parseable.
Everything printed passes through ``monitor.display.safe_text``: stored strings (a
trigger, a model name an API reported, a note) cannot drive the terminal with escape
sequences or show a credential.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from monitor.display import json_visible, safe_text
from monitor.redaction import redact


class SafeConsole(Console):
    """A console that shows text, never runs it: strings are made safe before printing."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(safe_text(o) if isinstance(o, str) else o for o in objects), **kwargs)

    def print_at(self, renderable: Any, width: int, *, rstrip: bool = False) -> None:
        """``renderable`` laid out ``width`` columns wide, even when that is wider than the
        console (``print(width=...)`` never exceeds it): a table whose numbers would
        otherwise be cut runs past the edge instead (``monitor.terminal.fit``). ``rstrip``:
        each line without its trailing spaces (a table with no right edge pads its last
        column to the column's width, which a CI log keeps as trailing whitespace)."""
        from rich.segment import Segment, Segments

        lines = self.render_lines(renderable, self.options.update(width=width), pad=False)
        if rstrip:
            lines = [_rstripped(line) for line in lines]
        self.print(Segments([s for line in lines for s in (*line, Segment.line())]), end="")


def _rstripped(line: list[Any]) -> list[Any]:
    """A rendered line (rich segments) without its trailing spaces, styles kept."""
    from rich.segment import Segment

    line = list(line)
    while line and not line[-1].control and not line[-1].text.rstrip(" "):
        line.pop()
    if line and not line[-1].control:
        last = line[-1]
        line[-1] = Segment(last.text.rstrip(" "), last.style)
    return line


class SafeTable(Table):
    """A table whose title and cells are made safe as they are added."""

    def __init__(self, *args: Any, title: str | None = None, **kwargs: Any) -> None:
        # "left" pads a title to the table's width when the table is laid out within the
        # width (soft_wrap off); "default" is left-aligned with no trailing spaces.
        if kwargs.get("title_justify") == "left":
            kwargs["title_justify"] = "default"
        super().__init__(*args, title=None if title is None else safe_text(title), **kwargs)

    def add_row(self, *cells: Any, **kwargs: Any) -> None:
        super().add_row(*(safe_text(c) if isinstance(c, str) else c for c in cells), **kwargs)


DEFAULT_WIDTH = 140  # wide enough for the summary tables in a file or CI log (not a tty)


def output_width() -> int:
    """The width to write stdout for: ``COLUMNS`` when it is a positive number (a CI log
    can say how wide it is), else the terminal's, else ``DEFAULT_WIDTH``."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return DEFAULT_WIDTH


def _stdout_width() -> int | None:
    """None lets rich follow a terminal's resizes; otherwise ``output_width``."""
    columns = os.environ.get("COLUMNS", "")
    if sys.stdout.isatty() and not (columns.isdigit() and int(columns) > 0):
        return None
    return output_width()


# markup=False: messages carry file names, API errors and ids with brackets, never markup.
out = SafeConsole(highlight=False, markup=False, soft_wrap=True, width=_stdout_width())
# soft_wrap: a message is one line however long, so a log or a `2>` file keeps it whole.
err = SafeConsole(
    stderr=True,
    highlight=False,
    markup=False,
    soft_wrap=True,
    width=None if sys.stderr.isatty() else 140,
)


class Format(StrEnum):
    table = "table"
    json = "json"


def _default(o: Any) -> Any:
    if isinstance(o, datetime | date):
        return o.isoformat()
    if isinstance(o, set | frozenset | tuple):
        return sorted(o) if isinstance(o, set | frozenset) else list(o)
    return str(o)


def _clean(o: Any) -> Any:
    """JSON has no NaN: undefined rates (n = 0) become null."""
    if isinstance(o, float) and (math.isnan(o) or math.isinf(o)):
        return None
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_clean(v) for v in o]
    return o


def print_json(data: Any) -> None:
    text = json.dumps(_clean(data), indent=2, default=_default, ensure_ascii=False)
    print(json_visible(redact(text)))


PLAIN_PROGRESS_EVERY_S = 30.0  # a line at least this often when stderr is not a terminal


@contextmanager
def progress_bars() -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """Yield a factory: ``factory(label, total)`` adds a bar and returns its advance function.

    On a terminal these are live rich bars. In a log (CI, ``2> file``) a redrawn bar
    becomes ``\r``-joined lines that appear only at the end, so plain lines are printed
    instead: one at every tenth of the work and at least every 30 seconds.
    """
    if not err.is_terminal:
        yield _plain_progress
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("items"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    ) as progress:

        def factory(label: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(safe_text(label), total=total)

            def advance(n: int) -> None:
                progress.advance(task, n)

            return advance

        yield factory


def _plain_progress(label: str, total: int) -> Callable[[int], None]:
    started = last = time.monotonic()
    done = 0
    next_tenth = 1

    def advance(n: int) -> None:
        nonlocal done, last, next_tenth
        done += n
        now = time.monotonic()
        reached = total > 0 and done * 10 >= next_tenth * total
        if reached or now - last >= PLAIN_PROGRESS_EVERY_S or done >= total:
            while total > 0 and done * 10 >= next_tenth * total:
                next_tenth += 1
            last = now
            share = f" ({100 * done / total:.0f}%)" if total else ""
            err.print(f"{label}: {done}/{total} items{share}, {now - started:.0f} s")

    err.print(f"{label}: {total} items to score")
    return advance


def print_listing(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A listing whose first column is an id a user types into another command (a run,
    a snapshot, a benchmark): a table where it fits the output's width, every cell on
    one line; otherwise each entry is its id on a line of its own, then the other
    columns as "name value" words below it, wrapped. A table squeezed into an 80-column
    log cut the ids ("gemma-3-27…") or shrank every other column to a letter a line."""
    from monitor.terminal.lines import wrap

    natural = sum(max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header))
    width = output_width()
    if natural + 3 * len(header) + 1 <= width:
        table = SafeTable()
        for col in header:
            table.add_column(col, no_wrap=True)
        for row in rows:
            table.add_row(*row)
        out.print(table)
        return
    for row in rows:
        out.print(row[0], markup=False)
        words = " · ".join(f"{h} {v}" for h, v in zip(header[1:], row[1:], strict=True) if v)
        for line in wrap(words, width - 2, fold=True):  # a long pin folds, never cut
            out.print(f"  {line}", markup=False)
