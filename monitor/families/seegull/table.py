"""The family's terminal table, for ``run`` and ``show``: one row per subject.

Per language (benchmark), the subjects ``all``, each identity kind and each
offensiveness band; columns: the frame-1 stereotype rate (the headline) with its 95%
interval, the second frame's rate beside it, the rate balanced by direction, and the
decided items; for a chat API run (no second frame) its refusals of every answer. Every
cell is a ``rich.text.Text`` (never markup), so a benchmark or subject name cannot style
the terminal; identities and attributes are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from monitor.families.seegull.measures import BALANCED, FRAME2, HEADLINE, REFUSALS
from monitor.fmt import interval, pct
from monitor.records import Measure

COLUMNS = (HEADLINE, FRAME2, BALANCED)
HEADERS = ("frame 1 [95% CI]", "frame 2 [95% CI]", "balanced [95% CI]")


def _cell(m: Measure | None) -> Text:
    if m is None or m.value is None:
        return Text("—")
    return Text(pct(m.value) + " " + interval((m.ci_low, m.ci_high)))


def cli_table(measures: Sequence[Measure], title: str) -> Table:
    """``measures`` (one run's) as a table titled ``title``."""
    table = Table(title=Text(title), title_justify="left")
    table.add_column("language / subject")
    # A chat API run's refusals get a column (a local run's table is unchanged).
    columns, headers = COLUMNS, HEADERS
    if any(m.measure == REFUSALS for m in measures):
        columns, headers = (*COLUMNS, REFUSALS), (*HEADERS, "refusals [95% CI]")
    for h in headers:
        table.add_column(h, justify="right")
    table.add_column("n", justify="right")
    by_subject: dict[tuple[str, str], dict[str, Measure]] = {}
    for m in measures:
        by_subject.setdefault((m.benchmark, m.axis), {})[m.measure] = m
    shown: set[str] = set()
    for (benchmark, axis), ms in by_subject.items():
        if benchmark not in shown:
            shown.add(benchmark)
            table.add_row(Text(benchmark), *(Text("") for _ in range(len(columns) + 1)))
        head = ms.get(HEADLINE)
        table.add_row(
            Text("  " + axis),
            *(_cell(ms.get(c)) for c in columns),
            Text(str(head.n) if head is not None and head.n is not None else "—"),
        )
    return table
