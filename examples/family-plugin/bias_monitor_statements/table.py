"""The family's terminal table, for ``run`` and ``show``: one row per subject.

Columns: the balanced rate (the headline) with its interval, then the two stance rates
(endorsing statements called True, rejecting ones called False) and the share called
True. Every cell is a ``rich.text.Text`` (never markup), so a
benchmark or axis name cannot style the terminal; statement texts are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from bias_monitor_statements.measures import HEADLINE
from monitor.fmt import interval, pct
from monitor.records import Measure

COLUMNS = (HEADLINE, "agree_rate", "reject_rate", "true_rate")
HEADERS = ("balanced [95% CI]", "endorsing: True", "rejecting: False", "says True")


def _cell(m: Measure | None, with_interval: bool) -> Text:
    if m is None:
        return Text("—")
    text = pct(m.value)
    if with_interval:
        text += " " + interval((m.ci_low, m.ci_high))
    if m.n is not None and not with_interval:
        text += f" of {m.n}"
    return Text(text)


def cli_table(measures: Sequence[Measure], title: str) -> Table:
    """``measures`` (one run's) as a table titled ``title``."""
    table = Table(title=Text(title), title_justify="left")
    table.add_column("benchmark")
    table.add_column("axis")
    for h in HEADERS:
        table.add_column(h, justify="right")
    by_subject: dict[tuple[str, str], dict[str, Measure]] = {}
    for m in measures:
        by_subject.setdefault((m.benchmark, m.axis), {})[m.measure] = m
    for (benchmark, axis), ms in by_subject.items():
        table.add_row(
            Text(benchmark),
            Text(axis),
            *(_cell(ms.get(c), c == HEADLINE) for c in COLUMNS),
        )
    return table
