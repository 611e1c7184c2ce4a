"""The pair family's terminal tables: ``run``'s one row per axis (``cli_table``) and
``show``'s every measure of the run (``show_table``), hooks of ``spec.py`` that the CLI
calls as it calls every family's.

Sentences are never printed here; ``show --items --texts`` is the one way to see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table as RichTable

from monitor.cli.results_view import measures_table
from monitor.fmt import interval, pct


def cli_table(measures: Sequence[Any], title: str) -> RichTable:
    """One row per (benchmark, axis): the bias rate with its interval, the stereo and anti
    counts among decided items, the ties (never credited to either side) and n."""
    from monitor.cli.output import SafeTable as Table

    table = Table(title=title, title_justify="left")
    for col in ("benchmark", "axis", "bias rate", "95% CI", "stereo", "anti", "ties", "n"):
        table.add_column(col, justify="left" if col in ("benchmark", "axis") else "right")
    by_key = {(m.benchmark, m.axis, m.measure): m for m in measures}
    for (bench, axis, measure), m in sorted(by_key.items()):
        if measure != "bias_rate":
            continue
        tie = by_key.get((bench, axis, "tie_rate"))
        ties = tie.k if tie else 0
        table.add_row(
            bench,
            axis,
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
