"""`drift`'s default output: the answer first, one line per axis, at the reader's width.

A CI log is read top to bottom in a browser that does not scroll sideways, so each
compared pair is written as: the two runs, named once with their snapshot names (never
cut), then one line per axis (axis, old → new, Δ with its interval, MDE, verdict), the
axis's control on the line under it, and the axes only one run scored. The width comes
from ``COLUMNS`` or the terminal (140 when neither says); what gives way when a line does
not fit is the axis label (abbreviated) and the long verdict words (a short code and a
legend line), never a model's or a run's name. The full table stays available as
``--format table-wide``; this module only turns drift's data into lines of text.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from monitor.fmt import pct

C = TypeVar("C", bound=Any)  # a comparison with new_run_id and baseline_run_id

MIN_LABEL = 6  # an axis label is never abbreviated below this many characters

# Verdict words that give way to a code when a line would not fit; "regression" and
# "improvement" are short and are the words a reader looks for, so they stay whole.
CODES = {"no significant change": "n.s.", "not comparable": "n/c"}


def pp(x: float | None, sign: bool = True) -> str:
    """A proportion as percentage points (one decimal), signed with a true minus."""
    if x is None or x != x:
        return "—"
    text = f"{100 * x:+.1f}" if sign else f"{100 * x:.1f}"
    return text.replace("-", "−")


@dataclass(frozen=True)
class AxisLine:
    """One axis of a pair, in the words of a line (``verdict`` is the full label)."""

    label: str
    rates: str
    delta: str
    mde: str
    verdict: str
    # The axis's and its control's new rates, then their old rates (``control_sentence``).
    control: tuple[str, str, str, str] | None = None
    why: str | None = None  # why not comparable


def axis_labels(keys: Sequence[tuple[str, str]]) -> list[str]:
    """The axis as a reader names it; ``benchmark/axis`` only where two benchmarks of one
    pair share an axis name."""
    axes = [a for _, a in keys]
    return [a if axes.count(a) == 1 else f"{b}/{a}" for b, a in keys]


def abbreviate(label: str, width: int) -> str:
    return label if len(label) <= width else label[: max(width - 1, 1)] + "…"


def control_sentence(label: str, rates: tuple[str, str, str, str]) -> str:
    """ "caste 38.7% with its control at 25.0%, was 41.0% with 5.8%": ``rates`` are the
    axis's and its control's new rate, then the axis's and the control's old rate."""
    new, control_new, old, control_old = rates
    return f"{label} {new} with its control at {control_new}, was {old} with {control_old}"


def axis_line(c, label: str) -> AxisLine:
    """One drift ``AxisComparison`` as the cells of its line."""
    d = c.paired
    low, high = c.delta_ci_clustered or (d.ci_low, d.ci_high)  # clusters widen it
    delta = "—" if d.delta is None else f"{pp(d.delta)} [{pp(low)}, {pp(high)}]"
    mde = c.detectable.mde if c.detectable is not None else None
    return AxisLine(
        label=label,
        rates=f"{pct(c.rate_old.value)} → {pct(c.rate_new.value)}",
        delta=delta,
        mde="—" if mde is None else f"±{pp(mde, sign=False)}",
        verdict=c.verdict.label,
        control=None
        if c.control is None
        else (
            pct(c.rate_new.value),
            pct(c.control.rate_new.value),
            pct(c.rate_old.value),
            pct(c.control.rate_old.value),
        ),
        why=c.verdict.reason if c.verdict.label == "not comparable" else None,
    )


def _fit(rows: list[AxisLine], width: int, level: str) -> tuple[list[str], set[str]]:
    """The header and axis lines of one pair, each within ``width`` if at all possible:
    long verdict words become codes first, then labels are abbreviated."""
    header = AxisLine("axis", "old → new", f"Δ pp [{level} CI]", "MDE", "verdict")

    def render(codes: bool, label_w: int) -> tuple[list[str], set[str]]:
        used: set[str] = set()
        cells = []
        for r in [header, *rows]:
            verdict = r.verdict
            if codes and verdict in CODES:
                used.add(verdict)
                verdict = CODES[verdict]
            cells.append((abbreviate(r.label, label_w), r.rates, r.delta, r.mde, verdict))
        widths = [max(len(row[i]) for row in cells) for i in range(4)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True))
            + "  "
            + row[4]
            for row in cells
        ]
        return [line.rstrip() for line in lines], used

    longest = max(len(r.label) for r in [header, *rows])
    for codes in (False, True):
        lines, used = render(codes, longest)
        if max(map(len, lines)) <= width:
            return lines, used
    label_w = longest
    while label_w > MIN_LABEL:
        label_w -= 1
        lines, used = render(True, label_w)
        if max(map(len, lines)) <= width:
            break
    return lines, used


def wrap(text: str, width: int, indent: str = "", *, fold: bool = False) -> list[str]:
    """``text`` wrapped at spaces to ``width``; a word longer than a line (a run id) is
    kept whole rather than cut, or with ``fold`` (a file pin with its sha256) continued
    on the next line."""
    return textwrap.wrap(
        text,
        width=max(width, 20),
        subsequent_indent=indent,
        break_long_words=fold,
        break_on_hyphens=False,
    ) or [""]


def _named(role: str, snapshot: str, run_id: str, width: int, note: str = "") -> list[str]:
    """A run named by its snapshot and its id: on one line when it fits, else the id on
    the next line; neither is ever cut."""
    head = f"{role:<9} {snapshot}"
    one = f"{head}  run {run_id}{note}"
    if len(one) <= width:
        return [one]
    return [head, *wrap(f"{' ' * 10}run {run_id}{note}", width, " " * 10)]


def by_pair(comparisons: Iterable[C]) -> dict[tuple[str, str], list[C]]:
    """Comparisons grouped by their (new run, baseline run), in first-seen order."""
    pairs: dict[tuple[str, str], list[C]] = {}
    for c in comparisons:
        pairs.setdefault((c.new_run_id, c.baseline_run_id), []).append(c)
    return pairs


def pair_heading(
    new: str, base: str, snapshot_of: Mapping[str, str], what: str, width: int
) -> list[str]:
    """A blank line, then the compared runs named once with what the lines under them
    measure: the heading of a family's or the association tests' block."""
    head = f"{snapshot_of.get(new, new)} {new} vs {snapshot_of.get(base, base)} {base} ({what})"
    return ["", *wrap(head, width, "  ")]


def pair_block(
    pair,
    comparisons: Sequence,
    unscored: Sequence,
    snapshot_of: Mapping[str, str],
    *,
    width: int,
    level: str,
) -> tuple[list[str], set[str]]:
    """The lines of one compared pair and the verdict codes they use."""
    base = pair.baseline_run_id
    note = " (last run before a configuration change)" if pair.role != "previous run" else ""
    lines = [
        *_named("new", snapshot_of.get(pair.new_run_id, pair.snapshot_id), pair.new_run_id, width),
        *_named("baseline", snapshot_of.get(base, "?"), base, width, note),
    ]
    keys = [(c.benchmark, c.axis) for c in comparisons] + [(u.benchmark, u.axis) for u in unscored]
    labels = axis_labels(keys)
    rows = [axis_line(c, label) for c, label in zip(comparisons, labels, strict=False)]
    used: set[str] = set()
    if rows:
        fitted, used = _fit(rows, width, level)
        lines.append(fitted[0])
        for row, line in zip(rows, fitted[1:], strict=True):
            lines.append(line)
            if row.control is not None:
                # The sentence is ~57 characters besides the label and the arrow.
                shown = abbreviate(row.label, max(MIN_LABEL, width - 61))
                lines += wrap("  ↳ " + control_sentence(shown, row.control), width, "    ")
    # Unscored axes line up with the compared ones (the label column of the lines above).
    column = fitted[0].index("old → new") - 2 if rows else 0
    for u, label in zip(unscored, labels[len(rows) :], strict=True):
        shown = abbreviate(label, max(MIN_LABEL, width - 2 - len(u.words)))
        lines.append(f"{shown.ljust(column)}  {u.words}")
    for row in rows:
        if row.why:
            lines += wrap(f"  {row.label}: not comparable: {row.why}", width, "    ")
    return lines, used


def provenance_lines(c, width: int) -> list[str]:
    """What changed between the two runs: the attribution, then the changed fields by
    category, wrapped (values are in ``--format table-wide`` and JSON)."""
    changes = [f for f in c.provenance.changes if f.category != "run"]
    lines = wrap(f"what changed: {c.attribution}", width, "  ")
    by: dict[str, list[str]] = {}
    for f in changes:
        by.setdefault(f.category, []).append(f.field)
    for category, fields in by.items():
        lines += wrap(f"  {category}: {', '.join(fields)}", width, "    ")
    return lines


def legend(used: set[str], width: int) -> list[str]:
    if not used:
        return []
    parts = [f"{CODES[v]} = {v}" for v in CODES if v in used]
    return wrap("verdicts: " + "; ".join(parts), width, "  ")
