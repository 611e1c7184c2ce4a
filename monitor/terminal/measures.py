"""Rendering a run's measures for `show`, whatever its family: a measure as JSON, and the
table of every measure with its interval and method (a family's own tables, e.g. the
pairs' bias rates in context, are its ``show_tables`` hook, built on these helpers).

Only numbers are shown here: benchmark texts stay behind `show --items --texts`.

Every table fits an 80-column log (a CI job's) without cutting anything: no outer edge,
numbers never wrap, a name folds rather than ending in "…", and what would be a column per
benchmark and axis is a row naming them, with the rows that belong to it indented below.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict
from typing import Any

from rich.text import Text

from monitor.fmt import interval, pct
from monitor.records import Measure
from monitor.terminal.output import SafeTable as Table


def _method(m: Measure) -> str:
    return m.method.split(" (")[0].split(";")[0]


def measure_json(run_id: str, m: Measure) -> dict[str, Any]:
    """A measure as ``show --format json`` prints it: its stored row, run id first and
    ``details`` null when empty (the store writes no empty details)."""
    return {"run_id": run_id, **asdict(m), "details": m.details or None}


def measure_value(m: Measure) -> tuple[str, str]:
    """(value, interval) as text: rates in percent, ranking scores as signed log-odds."""
    if m.kind == "rate":
        return pct(m.value), interval((m.ci_low, m.ci_high))
    if m.value is None:
        return "—", "—"
    ci = "—" if m.ci_low is None or m.ci_high is None else f"[{m.ci_low:+.2f}, {m.ci_high:+.2f}]"
    return f"{m.value:+.3f}", ci


def narrow(title: str) -> Table:
    """A table laid out for an 80-column log: no outer edge, no edge padding."""
    return Table(title=title, title_justify="left", show_edge=False, pad_edge=False)


def heading(table: Table, text: str, *cells: str) -> None:
    """A row naming what the indented rows below it belong to (a benchmark and axis)."""
    table.add_row(Text(text, style="bold"), *cells)


def measures_table(measures: Sequence[Measure], leave_out: Collection[str] = ()) -> Table:
    """Every measure (but those named in ``leave_out``, which the family shows in tables
    of their own), under a row naming its benchmark and axis, in the order stored."""
    levels = sorted({f"{m.confidence:.0%}" for m in measures}) or ["95%"]
    table = narrow(f"per-axis measures ({'/'.join(levels)} intervals; method per row)")
    rows = [m for m in measures if m.measure not in leave_out]
    # A measure's name is never folded (the method is, where something must give).
    names = max((len(m.measure) + 2 for m in rows), default=12)
    table.add_column("benchmark / axis", overflow="fold", min_width=max(12, names))
    for col in ("value", "interval", "k", "n"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("method", overflow="fold", min_width=6)
    shown = None
    for m in rows:
        if (m.benchmark, m.axis) != shown:
            shown = (m.benchmark, m.axis)
            heading(table, f"{m.benchmark} / {m.axis}", *[""] * 5)
        value, ci = measure_value(m)
        # "cluster-bootstrap-percentile" as words, so that a narrow log wraps it between
        # them (the JSON keeps the stored name)
        method = _method(m).replace("-", " ")
        table.add_row(f"  {m.measure}", value, ci, str(m.k), str(m.n), method)
    return table
