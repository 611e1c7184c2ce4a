"""The choice-QA family's terminal table (``cli_table`` hook), for ``run`` and ``show``.

One row per category (and the overall row, axis ``all``): accuracy on ambiguous and on
disambiguated questions (percent) and BBQ's two bias scores (signed, −1..+1), each with
its interval on the line below, so the table fits 80 columns. For BharatBBQ the authors'
script's numbers (``reference_*`` measures) follow in a table of their own, category by
category, so a reader can put them beside the corrected ones; any other measure is listed
plainly at the end. Item texts are never shown.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from monitor.cli.output import SafeTable as Table
from monitor.cli.output import output_width
from monitor.fmt import interval, pct
from monitor.records import Measure

COLUMNS = ("acc_ambig", "acc_disambig", "bias_ambig", "bias_disambig")
REFERENCE = "reference_"


def _score(x: float | None) -> str:
    return "—" if x is None else f"{x:+.3f}".replace("-", "−")


def _cell(m: Measure | None) -> str:
    if m is None:
        return "—"
    if m.kind == "rate":
        return f"{pct(m.value)}\n{interval((m.ci_low, m.ci_high))}"
    ci = (
        "—"
        if m.ci_low is None or m.ci_high is None
        else f"[{_score(m.ci_low)}, {_score(m.ci_high)}]"
    )
    return f"{_score(m.value)}\n{ci}"


def _wrapped(text: str) -> Text:
    """A heading wrapped to the output width (the console writes long lines whole)."""
    return Text(textwrap.fill(text, max(output_width(), 40)))


def _subject_order(key: tuple[str, str]) -> tuple[bool, str, str]:
    return (key[1] == "all", key[0], key[1])  # categories first, the overall row last


def cli_table(measures: Sequence[Measure], title: str) -> Group:
    """The family's tables for ``measures`` of one run (see the module docstring)."""
    levels = sorted({f"{m.confidence:.0%}" for m in measures}) or ["95%"]
    by: dict[tuple[str, str], dict[str, Measure]] = {}
    for m in measures:
        by.setdefault((m.benchmark, m.axis), {})[m.measure] = m
    main = Table()
    heading = _wrapped(
        f"{title}: accuracy in %, bias scores −1..+1, {'/'.join(levels)} intervals "
        "(templates resampled)"
    )
    main.add_column("benchmark")
    for col in COLUMNS:
        main.add_column(col, justify="right")
    reference = Table()
    reference_heading = _wrapped(
        "the BharatBBQ authors' script on the same rows (reference_*; each measure's "
        "definition says how it differs)"
    )
    for col in ("benchmark", "measure", "value", "interval", "k/n"):
        reference.add_column(col, justify="left" if col in ("benchmark", "measure") else "right")
    rest = Table(title="other measures", title_justify="left")
    for col in ("benchmark", "measure", "value", "interval"):
        rest.add_column(col, justify="left" if col in ("benchmark", "measure") else "right")
    for key in sorted(by, key=_subject_order):
        ms = by[key]
        # The benchmark id, not the bare category: bbq-religion and bharatbbq-religion
        # are different questions and may be in one run.
        label = key[0] if key[1] != "all" else f"all ({key[0]})"
        if any(c in ms for c in COLUMNS):
            main.add_row(label, *(_cell(ms.get(c)) for c in COLUMNS))
        for name, m in sorted(ms.items()):
            if name in COLUMNS:
                continue
            value, ci = _cell(m).split("\n")
            if name.startswith(REFERENCE):
                n = "—" if m.n is None else (f"{m.k}/{m.n}" if m.k is not None else f"n={m.n}")
                reference.add_row(label, name[len(REFERENCE) :], value, ci, n)
            else:
                rest.add_row(label, name, value, ci)
    parts: list[Text | Table] = [heading, main]
    if reference.row_count:
        parts += [reference_heading, reference]
    if rest.row_count:
        parts.append(rest)
    return Group(*parts)
