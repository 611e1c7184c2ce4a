"""The pair family's terminal tables: ``run``'s one row per axis (``cli_table``) and
``show``'s every measure of the run (``show_table``), hooks of ``spec.py`` that the CLI
calls as it calls every family's.

Sentences are never printed here; ``show --items --texts`` is the one way to see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text

from monitor.cli.results_view import measures_table
from monitor.fmt import interval, pct


def cli_table(measures: Sequence[Any], title: str) -> RichTable:
    """One row per axis under a row naming its benchmark: the bias rate with its interval,
    the stereo and anti counts among decided items, the ties (never credited to either
    side) and n.

    Laid out as the association tests' table is, so that an 80-column log (a CI job's)
    cuts nothing: no outer edge, numbers never wrap, and only a long name folds. With a
    column each, benchmark and axis were cut to "bhed-reli…" and "caste-con…" there."""
    from monitor.cli.output import SafeTable as Table

    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("benchmark / axis", justify="left", overflow="fold", min_width=8)
    for col in ("bias rate", "95% CI", "stereo", "anti", "ties", "n"):
        table.add_column(col, justify="right", no_wrap=True)
    by_key = {(m.benchmark, m.axis, m.measure): m for m in measures}
    benchmark = None
    for (bench, axis, measure), m in sorted(by_key.items()):
        if measure != "bias_rate":
            continue
        if bench != benchmark:
            benchmark = bench
            table.add_row(Text(bench, style="bold"), *[""] * 6)
        tie = by_key.get((bench, axis, "tie_rate"))
        ties = tie.k if tie else 0
        table.add_row(
            f"  {axis}",
            pct(m.value),
            interval((m.ci_low, m.ci_high)),
            str(m.k),
            str(m.n - m.k),
            str(ties),
            str(m.n + ties),
        )
    return table


def show_table(measures: Sequence[Any], title: str) -> RichTable | None:
    """Every measure of the run with its interval method (the panel's metrics, tie and
    coverage rates, rankings), under its own title; the per-identity rates get ``show``'s
    identity tables instead. None for a run with no measures (a failed run)."""
    return measures_table(measures) if measures else None
