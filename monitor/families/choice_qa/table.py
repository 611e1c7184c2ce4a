"""The choice-QA family's terminal table (``cli_table`` hook), for ``run`` and ``show``.

One row per category (and the overall row, axis ``all``) in two tables: BBQ's two bias
scores (signed, in points from −100 to +100 as the BBQ paper reports them, the interval
on the line below) first, then accuracy on ambiguous and on disambiguated questions
(percent, the interval beside it). Points are the one unit of bias scores in every output
(drift, its JSON, the report), stored measures keep the fraction their definition names.
Two tables keep every benchmark id whole in an 80-column log. For BharatBBQ the authors'
script's numbers (``reference_*`` measures) follow in a table of their own, category by
category, so a reader can put them beside the corrected ones, each category headed by the
rows the script kept (a table resting on a handful of rows says so); any other measure is
listed plainly at the end. Item texts are never shown.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from rich.console import Group
from rich.text import Text

from monitor.fmt import interval, pct
from monitor.records import Measure
from monitor.terminal.output import SafeTable as Table
from monitor.terminal.output import output_width

BIAS_COLUMNS = ("bias_ambig", "bias_disambig")
ACCURACY_COLUMNS = ("acc_ambig", "acc_disambig")
COLUMNS = BIAS_COLUMNS + ACCURACY_COLUMNS
REFERENCE = "reference_"


FEW_ROWS = 30  # a reference table on fewer kept rows than this says it is too few to read


def _score(x: float | None) -> str:
    """A bias score (a fraction in [−1, 1]) in points, e.g. ``+48.5``."""
    return "—" if x is None else f"{100 * x:+.1f}".replace("-", "−")


def _rate(m: Measure | None) -> str:
    """A share on one line: ``44.4% [25.0, 60.0]``."""
    return "—" if m is None else f"{pct(m.value)} {interval((m.ci_low, m.ci_high))}"


def _signed(m: Measure | None) -> str:
    """A bias score over its interval (two lines: a signed interval is 16 characters)."""
    if m is None:
        return "—"
    ci = (
        "—"
        if m.ci_low is None or m.ci_high is None
        else f"[{_score(m.ci_low)}, {_score(m.ci_high)}]"
    )
    return f"{_score(m.value)}\n{ci}"


def _kept(ms: dict[str, Measure]) -> str:
    """What the authors' script kept of a category's rows ("12 of 40 rows kept")."""
    details = next((m.details for n, m in ms.items() if n.startswith(REFERENCE)), {})
    kept, rows = details.get("rows_kept"), details.get("rows_scored")
    if kept is None or rows is None:
        return ""
    few = " (too few)" if kept < FEW_ROWS else ""
    return f"{int(kept)} of {int(rows)} rows kept{few}"


def _cell(m: Measure) -> tuple[str, str]:
    """(value, interval) of any measure, for the one-line tables."""
    if m.kind == "rate":
        return pct(m.value), interval((m.ci_low, m.ci_high))
    value, ci = _signed(m).split("\n")
    return value, ci


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
    # With fewer than 10 templates the intervals are not a bootstrap (measures.py).
    how = (
        "templates as clusters; with fewer than 10, Wilson on the effective n"
        if any(m.details.get("few_clusters") for m in measures)
        else "templates resampled"
    )
    heading = _wrapped(f"{title}: {'/'.join(levels)} intervals ({how})")
    # Bias first (the answer), accuracy below it, in two tables so that the longest
    # benchmark id (bharatbbq-physical-appearance) stays whole in an 80-column log.
    bias = Table(title="bias scores in points, −100..+100 (0: no preference)", title_justify="left")
    accuracy = Table(title="accuracy", title_justify="left")
    for table, cols in ((bias, BIAS_COLUMNS), (accuracy, ACCURACY_COLUMNS)):
        table.add_column("benchmark", no_wrap=True)
        for col in cols:
            table.add_column(col, justify="right")
    reference = Table()
    reference_heading = _wrapped(
        "the BharatBBQ authors' script on the same rows (reference_*; each measure's "
        "definition says how it differs)"
    )
    # The benchmark as a row of its own above its measures: a benchmark column beside
    # the authors' long measure names would not fit 80 columns.
    for col in ("benchmark / measure", "value", "interval", "k/n"):
        left = col.startswith("benchmark")
        reference.add_column(col, justify="left" if left else "right", no_wrap=left)
    rest = Table(title="other measures", title_justify="left")
    for col in ("benchmark", "measure", "value", "interval"):
        rest.add_column(col, justify="left" if col in ("benchmark", "measure") else "right")
    shown_in_reference: set[str] = set()
    for key in sorted(by, key=_subject_order):
        ms = by[key]
        # The benchmark id, not the bare category: bbq-religion and bharatbbq-religion
        # are different questions and may be in one run.
        label = key[0] if key[1] != "all" else f"all ({key[0]})"
        if any(c in ms for c in BIAS_COLUMNS):
            bias.add_row(label, *(_signed(ms.get(c)) for c in BIAS_COLUMNS))
        if any(c in ms for c in ACCURACY_COLUMNS):
            accuracy.add_row(label, *(_rate(ms.get(c)) for c in ACCURACY_COLUMNS))
        for name, m in sorted(ms.items()):
            if name in COLUMNS:
                continue
            value, ci = _cell(m)
            if name.startswith(REFERENCE):
                if label not in shown_in_reference:
                    shown_in_reference.add(label)
                    if reference.row_count:
                        reference.add_section()
                    reference.add_row(label, "", "", "")
                    if kept := _kept(ms):
                        reference.add_row("  " + kept, "", "", "")
                n = "—" if m.n is None else (f"{m.k}/{m.n}" if m.k is not None else f"n={m.n}")
                reference.add_row("  " + name[len(REFERENCE) :], value, ci, n)
            else:
                rest.add_row(label, name, value, ci)
    parts: list[Text | Table] = [heading]
    parts += [t for t in (bias, accuracy) if t.row_count]
    if reference.row_count:
        parts += [reference_heading, reference]
    if rest.row_count:
        parts.append(rest)
    return Group(*parts)
