"""Lines at the reader's width: what every family's `drift` output (and a long listing) is
written with.

A CI log is read top to bottom in a browser that does not scroll sideways, so each
compared pair of runs is named once, with its snapshot names (never cut), and every line
is wrapped to the width, which comes from ``COLUMNS`` or the terminal (140 when neither
says). A family draws its own comparisons (its ``drift_lines`` hook, or
``monitor.cli.output_family`` for the generic records) with these helpers: percentage points,
wrapping, a run named by snapshot and id, comparisons grouped by pair, a pair's heading
and what changed between its runs.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

C = TypeVar("C", bound=Any)  # a comparison with new_run_id and baseline_run_id


def pp(x: float | None, sign: bool = True) -> str:
    """A proportion as percentage points (one decimal), signed with a true minus."""
    if x is None or x != x:
        return "—"
    text = f"{100 * x:+.1f}" if sign else f"{100 * x:.1f}"
    return text.replace("-", "−")


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


def named_run(role: str, snapshot: str, run_id: str, width: int, note: str = "") -> list[str]:
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


def change_lines(c, width: int) -> list[str]:
    """What changed between the two runs with the values (``--format table-wide``): the
    attribution, then each changed field with its old and new value (each cut at 60
    characters), wrapped; a value with no space to break at (a commit pin) folds."""
    lines = wrap(f"what changed {c.baseline_run_id} → {c.new_run_id}: {c.attribution}", width, "  ")
    provenance = getattr(c, "provenance", None)  # generic records carry the words only
    for f in provenance.changes if provenance is not None else ():
        if f.category != "run":
            text = f"  [{f.category}] {f.field}: {f.old!s:.60} → {f.new!s:.60}"
            lines += wrap(text, width, "    ", fold=True)
    return lines
