"""A wide table laid out to the reader's width without cutting a number.

rich shrinks a table that is too wide by narrowing its widest columns until the total
fits, whatever they hold: a rate came out as ``38…`` and a change as ``+2…`` at 140
columns, and columns narrowed to nothing at 80. Here the widths are chosen first: a
column is never narrower than its longest word (a rate, an interval bound, an id), a cell
wraps only between words, and when even the longest words do not fit, the columns the
caller marks as droppable are left out, in the order given, and named, so the caller can
say where they are. What still does not fit is printed wider than the terminal rather
than cut.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from monitor.terminal.lines import by_pair, wrap
from monitor.terminal.output import SafeTable, out

C = TypeVar("C")


@dataclass(frozen=True)
class Fitted:
    """The table to print, at ``width`` (the output's, or more when even the longest
    words do not fit: print it with ``out.print(table, width=width)``), and the headers of
    the columns left out to fit."""

    table: SafeTable
    width: int
    dropped: tuple[str, ...]
    output: int = 0  # the output's width the table was fitted to

    def dropped_lines(self) -> list[str]:
        """The columns left out, named under the table and wrapped to the output's width
        (none when every column fits)."""
        if not self.dropped:
            return []
        return wrap(
            f"(left out at {self.output} columns: {', '.join(self.dropped)}; a wider COLUMNS "
            "or --format json shows them)",
            self.output,
            " ",
        )


def _words(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _widths(cells: Sequence[Sequence[str]], budget: int, numeric: Sequence[bool]) -> list[int]:
    """Each column's width (its cells, header first): the widest cell where all fit, else
    the widest columns narrowed in turn, never below their longest word; words wrap
    before numbers do (a rate stays on one line with its interval while a label can
    break)."""
    widest = [max(len(c) for c in col) for col in cells]
    least = [max(_words(c) for c in col) for col in cells]
    widths = list(widest)
    while sum(widths) > budget:
        shrinkable = [i for i, w in enumerate(widths) if w > least[i]]
        words = [i for i in shrinkable if not numeric[i]]
        shrinkable = words or shrinkable
        if not shrinkable:
            break
        top = max(widths[i] for i in shrinkable)
        for i in shrinkable:  # the widest give one column each, evenly
            if widths[i] == top and sum(widths) > budget:
                widths[i] -= 1
    return widths


def fitted_table(
    title: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    right: Sequence[str] = (),
    droppable: Sequence[str] = (),
) -> Fitted:
    """A bordered table of ``rows`` at most ``width`` columns wide where the words allow;
    ``right``: headers of right-aligned (numeric) columns; ``droppable``: headers that may
    be left out, first the first, when the table cannot fit otherwise."""
    dropped: list[str] = []
    while True:
        keep = [i for i, h in enumerate(headers) if h not in dropped]
        cells = [[headers[i], *(r[i] for r in rows)] for i in keep]
        # The default box: a rule left of every column and one at the right edge, and one
        # space of padding each side of a cell.
        budget = width - 3 * len(keep) - 1
        least = sum(max(_words(c) for c in col) for col in cells)
        left = [h for h in droppable if h not in dropped and h in headers]
        if least <= budget or not left:
            break
        dropped.append(left[0])
    numeric = [headers[i] in right for i in keep]
    widths = _widths(cells, budget, numeric)
    # The title wrapped here, between words and to the table's width: rich's own wrapping
    # left a space at the end of each broken line (two run ids joined by " → ").
    drawn = max(width, sum(widths) + 3 * len(keep) + 1)
    table = SafeTable(title="\n".join(wrap(title, drawn)), title_justify="left")
    for i, w in zip(keep, widths, strict=True):
        table.add_column(
            headers[i],
            width=w,
            justify="right" if headers[i] in right else "left",
            overflow="fold",
        )
    for r in rows:
        table.add_row(*(r[i] for i in keep))
    return Fitted(table, drawn, tuple(dropped), width)


def print_pair_tables(
    comparisons: Iterable[C],
    headers: Sequence[str],
    row: Callable[[C], Sequence[str]],
    width: int,
    *,
    droppable: Sequence[str] = (),
) -> None:
    """Per compared pair of runs (``lines.by_pair``), one fitted table titled ``base →
    new``: a row per comparison (``row``: a cell per header, then the verdict's label),
    ``headers`` after the first right-aligned, then a ``verdict`` column; the columns left
    out to fit named under it."""
    for (new, base), mine in by_pair(comparisons).items():
        fitted = fitted_table(
            f"{base} → {new}",
            (*headers, "verdict"),
            [row(c) for c in mine],
            width,
            right=headers[1:],
            droppable=droppable,
        )
        out.print_at(fitted.table, fitted.width)
        for line in fitted.dropped_lines():
            out.print(line, markup=False)
