"""Drift's comparisons of families that live in their own folder, in the terminal and JSON.

The records are generic (``monitor.records.FamilyComparison``): this module renders any
family's the same way and knows none of them. Per compared pair, one line per compared
measure (benchmark/axis, measure, old → new, Δ with its interval, MDE, verdict), and under
it the change in words, every line within the output width; ``--format table-wide`` gets
one table row per measure with its p-values (``family_table``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from monitor.contract.registry import find_family
from monitor.records import FamilyComparison
from monitor.terminal.lines import by_pair, pair_heading, pp, wrap


def _words(family: str) -> str:
    """What a reader calls the family's results ("choice questions"), else its name."""
    spec = find_family(family)
    return (spec.words if spec else "") or family


def _num(c: FamilyComparison, x: float | None, sign: bool = True) -> str:
    if x is None:
        return "—"
    if c.unit == "points":
        return pp(x, sign)
    return f"{x:+.3f}".replace("-", "−") if sign else f"{x:.3f}"


def comparison_line(c: FamilyComparison) -> str:
    """One comparison's numbers and verdict, e.g. ``caste bias_ambig +2.1 → +9.0 Δ +6.9
    [+2.8, +11.1] MDE 5.2 regression``."""
    delta = "Δ —"
    if c.delta is not None:
        delta = f"Δ {_num(c, c.delta)}"
        if c.ci_low is not None and c.ci_high is not None:
            delta += f" [{_num(c, c.ci_low)}, {_num(c, c.ci_high)}]"
    mde = "" if c.mde is None else f" MDE {_num(c, c.mde, sign=False)}"
    values = f"{_num(c, c.value_old, c.signed)} → {_num(c, c.value_new, c.signed)}"
    label = f" {c.label}" if c.label else ""
    return f"{c.axis} {c.measure}:{label} {values} {delta}{mde} {c.verdict.label}"


def family_lines(
    comparisons: Sequence[FamilyComparison], snapshot_of: dict[str, str], width: int
) -> list[str]:
    """Every pair's comparisons: the pair named once, then a line per measure and its
    change in words."""
    lines: list[str] = []
    for (new, base), mine in by_pair(comparisons).items():
        first = mine[0]
        unit = "values and Δ in points" if first.unit == "points" else "raw values"
        what = f"{_words(first.family)}; {unit}; {100 * first.confidence:g}% intervals"
        lines += pair_heading(new, base, snapshot_of, what, width)
        if first.contrast:  # the runs differ by design (e.g. languages): said first
            lines += wrap(f"  {first.contrast}", width, "    ")
        for c in mine:
            lines += wrap(comparison_line(c), width, "    ")
            words = c.verdict.reason if c.verdict.label == "not comparable" else c.change
            lines += wrap("  " + words, width, "    ")
        if first.noise_note:
            lines += wrap(f"  {first.noise_note}", width, "    ")
        if first.attribution:
            lines += wrap(f"  what changed: {first.attribution}", width, "    ")
    return lines


# The fields of a comparison that are in its ``unit``: in JSON, as the terminal shows them.
SCALED = ("value_old", "value_new", "delta", "ci_low", "ci_high", "noise", "mde")


def family_json(c: FamilyComparison, snapshot_of: dict[str, str]) -> dict[str, Any]:
    """One comparison for ``drift --format json``: every field, the numbers in ``SCALED``
    in the comparison's ``unit`` as the terminal prints them (``points``: percentage
    points, i.e. 100 × the stored fraction, for shares, accuracies and bias scores alike;
    ``raw``: as stored), so ``"unit": "points"`` says what the numbers beside it are."""
    d = dataclasses.asdict(c)
    if c.unit == "points":
        d.update({k: None if d[k] is None else 100 * d[k] for k in SCALED})
    d["verdict"] = c.verdict.label
    d["reason"] = c.verdict.reason
    d["flagged"] = c.flagged
    d["snapshot_id"] = snapshot_of.get(c.new_run_id)
    d["baseline_snapshot_id"] = snapshot_of.get(c.baseline_run_id)
    return d


# Left out, in this order, where a table cannot fit the output's width otherwise (the
# verdict rests on p(BH), which stays; JSON keeps them all).
DROPPABLE = ("p", "MDE")


def _least(text: str) -> int:
    """The narrowest a cell can be without cutting a word."""
    return max((len(w) for w in text.split()), default=0)


def family_table(comparisons: Sequence[FamilyComparison], level: str) -> None:
    """``drift --format table-wide`` for any family's generic records: per compared pair of
    runs (named in the title, wrapped between words) a row naming each benchmark and axis,
    the measures under it with their p-values and verdict, then per measure the verdict's
    reason (the change in words, the test, the noise: long sentences, which in a cell
    would squeeze the other columns to a word a line), wrapped. Every line fits the
    output's width with no trailing space: numbers never wrap, Δ and its interval wrap
    between words, names fold, and where even that does not fit (80 columns) p, then the
    MDE, are left out and named under the table."""
    from monitor.fmt import pvalue
    from monitor.terminal.measures import heading, narrow
    from monitor.terminal.output import out, output_width

    width = output_width()
    for (new, base), mine in by_pair(comparisons).items():
        names = [f"  {c.measure} ({c.label})" if c.label else f"  {c.measure}" for c in mine]
        # A measure's name is never cut (its label may wrap below it).
        name_width = max(12, *(len(c.measure) + 2 for c in mine))
        headers = ("old", "new", f"Δ [{level} CI]", "MDE", "p", "p(BH)")
        rows: list[tuple[str, ...]] = []
        for c in mine:
            delta = "—" if c.delta is None else _num(c, c.delta)
            if c.delta is not None and c.ci_low is not None and c.ci_high is not None:
                delta += f" [{_num(c, c.ci_low)}, {_num(c, c.ci_high)}]"
            rows.append(
                (
                    _num(c, c.value_old, c.signed),
                    _num(c, c.value_new, c.signed),
                    delta,
                    "—" if c.mde is None else _num(c, c.mde, sign=False),
                    pvalue(c.p_value),
                    pvalue(c.p_adjusted),
                )
            )
        delta_h = f"Δ [{level} CI]"  # the one numeric cell that may break, between words
        natural = {
            h: max(len(x) for x in (h, *(r[i] for r in rows))) for i, h in enumerate(headers)
        }
        least = {**natural, delta_h: max(_least(x) for x in (delta_h, *(r[2] for r in rows)))}
        labels = [c.verdict.label for c in mine]
        verdict_width = len("improvement")
        heads = [f"{c.benchmark} / {c.axis}" for c in mine]
        name_natural = max(len(x) for x in ("benchmark / axis", *names, *heads))
        name_natural = max(name_natural, name_width)
        verdict_natural = max(len(x) for x in ("verdict", *labels))
        fits = name_natural + sum(natural.values()) + verdict_natural + 3 * (len(headers) + 1)
        dropped: list[str] = []
        widths: dict[str, int] = {}
        if fits > width:  # laid out here, as rich would squeeze a column to nothing
            while True:
                kept = [h for h in headers if h not in dropped]
                rules = 3 * (len(kept) + 1)  # " │ " between each two columns; no outer edge
                others = name_width + verdict_width + rules + sum(natural[h] for h in kept)
                room = width - others + natural[delta_h] if delta_h in kept else 0
                left = [h for h in DROPPABLE if h not in dropped]
                if room >= least[delta_h] or not left:
                    break
                dropped.append(left[0])
            widths = {h: natural[h] for h in kept}
            widths[delta_h] = min(natural[delta_h], max(least[delta_h], room))
            spare = width - (sum(widths.values()) + verdict_width + rules)
            widths["benchmark / axis"] = min(name_natural, max(name_width, spare))
            widths["verdict"] = verdict_width
        kept = [h for h in headers if h not in dropped]
        drawn = max(width, sum(widths.values()) + 3 * (len(kept) + 1)) if widths else width
        title = (
            f"{_words(mine[0].family)}: {base} → {new} (p(BH) over all tests shown; "
            f"{level} intervals)"
        )
        for line in wrap(title, width):  # above the table: rich's own wrapping left spaces
            out.print(line, markup=False)
        table = narrow("")  # the title is printed above, wrapped
        table.add_column(
            "benchmark / axis",
            overflow="fold",
            min_width=name_width,
            width=widths.get("benchmark / axis"),
        )
        for h in kept:
            table.add_column(
                h, justify="right", no_wrap=h != delta_h, overflow="fold", width=widths.get(h)
            )
        table.add_column(
            "verdict", overflow="fold", min_width=verdict_width, width=widths.get("verdict")
        )
        shown = None
        for c, name, row in zip(mine, names, rows, strict=True):
            if (c.benchmark, c.axis) != shown:
                shown = (c.benchmark, c.axis)
                heading(table, f"{c.benchmark} / {c.axis}", *[""] * (len(kept) + 1))
            cells = [cell for h, cell in zip(headers, row, strict=True) if h in kept]
            table.add_row(name, *cells, c.verdict.label)
        out.print_at(table, drawn, rstrip=True)
        lines: list[str] = []
        if dropped:
            lines += wrap(
                f"(left out at {width} columns: {', '.join(dropped)}; a wider COLUMNS "
                "or --format json shows them)",
                width,
                " ",
            )
        for c in mine:  # the reason says the change in words, then the test and the noise
            text = f"{c.benchmark}/{c.axis} {c.measure}: {c.verdict.label}: {c.verdict.reason}"
            lines += wrap(text, width, "  ")
        for line in lines:
            out.print(line, markup=False)
