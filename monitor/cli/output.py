"""Rendering helpers shared by commands: rich tables for people, JSON for machines.

Progress and notices go to stderr so that ``--format json`` on stdout stays parseable.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable, Iterator
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

# Wide enough for the summary tables when output goes to a file or CI log (not a tty).
# markup=False: messages carry file names, API errors and ids with brackets, never markup.
out = Console(
    highlight=False, markup=False, soft_wrap=True, width=None if sys.stdout.isatty() else 140
)
err = Console(
    stderr=True, highlight=False, markup=False, width=None if sys.stderr.isatty() else 140
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
    print(json.dumps(_clean(data), indent=2, default=_default, ensure_ascii=False))


def pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def interval(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "—"
    return f"[{100 * lo:.1f}, {100 * hi:.1f}]"


@contextmanager
def progress_bars() -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """Yield a factory: ``factory(label, total)`` adds a bar and returns its advance function."""
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
            task = progress.add_task(label, total=total)

            def advance(n: int) -> None:
                progress.advance(task, n)

            return advance

        yield factory
