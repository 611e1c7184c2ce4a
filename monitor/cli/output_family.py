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


def family_table(comparisons: Sequence[FamilyComparison], level: str) -> None:
    """``drift --format table-wide`` for any family's generic records: per compared pair of
    runs (named in the title, whole) a row naming each benchmark and axis, the measures
    under it with their p-values and verdict, then per measure the verdict's reason (the
    change in words, the test, the noise: long sentences, which in a cell would squeeze
    the other columns to a word a line). Numbers never wrap; names fold."""
    from monitor.fmt import pvalue
    from monitor.terminal.measures import heading, narrow
    from monitor.terminal.output import out

    for (new, base), mine in by_pair(comparisons).items():
        table = narrow(
            f"{_words(mine[0].family)}: {base} → {new} (p(BH) over all tests shown; "
            f"{level} intervals)"
        )
        names = [f"  {c.measure} ({c.label})" if c.label else f"  {c.measure}" for c in mine]
        # A measure's name is never cut (its label may wrap below it).
        width = max(len(c.measure) + 2 for c in mine)
        table.add_column("benchmark / axis", overflow="fold", min_width=max(12, width))
        for col in ("old", "new", f"Δ [{level} CI]", "MDE", "p", "p(BH)"):
            table.add_column(col, justify="right", no_wrap=True)
        table.add_column("verdict", overflow="fold", min_width=len("improvement"))
        shown = None
        for c, name in zip(mine, names, strict=True):
            if (c.benchmark, c.axis) != shown:
                shown = (c.benchmark, c.axis)
                heading(table, f"{c.benchmark} / {c.axis}", *[""] * 7)
            delta = "—" if c.delta is None else _num(c, c.delta)
            if c.delta is not None and c.ci_low is not None and c.ci_high is not None:
                delta += f" [{_num(c, c.ci_low)}, {_num(c, c.ci_high)}]"
            table.add_row(
                name,
                _num(c, c.value_old, c.signed),
                _num(c, c.value_new, c.signed),
                delta,
                "—" if c.mde is None else _num(c, c.mde, sign=False),
                pvalue(c.p_value),
                pvalue(c.p_adjusted),
                c.verdict.label,
            )
        out.print(table)
        for c in mine:  # the reason says the change in words, then the test and the noise
            out.print(
                f"{c.benchmark}/{c.axis} {c.measure}: {c.verdict.label}: {c.verdict.reason}",
                markup=False,
            )
