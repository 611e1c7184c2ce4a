"""Geometry of the report's comparison charts, drawn as inline SVG by ``templates/charts.svg.j2``.

Two kinds, both made for reading a new run against its baseline at a glance:

* a **dot chart** (``dot_chart``): per group (an axis, a question category) one row per
  labelled series, the baseline as an open grey dot and the new run as a filled one,
  each with its interval, on one shared scale with its reference line (50% for a bias
  rate, 0 for a signed score). The series are a generic list of ``Estimate`` (label,
  side, value, interval), so a family adds a series by adding estimates, not by
  changing the chart;
* a **forest** of paired changes (``change_forest``): one row per compared axis, the
  change with its paired interval, the band of changes the test could not have seen (±
  its minimum detectable effect) behind it, flagged changes marked by verdict.

Hand-drawn SVG for the reason the trend plots are (``plots``): a few lines and dots per
chart, text that stays text, autoescaped labels and no dependency. This module only
computes coordinates and labels; it does no I/O and renders nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from monitor import fmt

WIDTH = 640
LABEL_WIDTH = 200  # left column: series and row labels
VALUE_WIDTH = 150  # right column: the numbers, so the chart is readable without hovering
ROW = 20  # px per series row
HEADER = 18  # px for a group's title row
TOP, AXIS = 8, 24  # top margin; room under the plot area for the tick labels

Side = Literal["baseline", "new"]


@dataclass(frozen=True)
class Estimate:
    """One labelled value of one run with its interval: what a dot chart draws.

    ``label`` names the series ("bias rate", "neutral control"); the chart puts the
    baseline's and the new run's estimate of one label on one row. ``low``/``high`` are
    the interval's ends (None: no interval known, the dot is drawn alone)."""

    label: str
    side: Side
    value: float | None
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class Tick:
    """One labelled tick of an axis, at ``pos`` px (the report's charts and trend plots)."""

    pos: float
    label: str


@dataclass(frozen=True)
class Mark:
    """One run's dot and interval on a row, in px."""

    x: float
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class DotRow:
    y: float
    label: str
    baseline: Mark | None
    new: Mark | None
    text: str  # "38.7% → 61.3%": the numbers, always shown beside the dots
    title: str  # the numbers with their intervals, for the row's tooltip and screen readers


@dataclass(frozen=True)
class GroupTitle:
    y: float
    label: str


@dataclass
class _Frame:
    """A chart's canvas and plot area in pixels, and where a value lands in it: what the
    dot chart and the forest share, so both place a value by one rule."""

    width: int = WIDTH
    height: int = 60
    x0: float = LABEL_WIDTH
    x1: float = WIDTH - VALUE_WIDTH
    y0: float = TOP
    y1: float = TOP + ROW

    def place(self, v: float, lo: float, hi: float) -> float:
        """The x of ``v`` on a value axis from ``lo`` to ``hi``, rounded to 0.1 px; a value
        past an end (an interval past the scale) is cut at that edge."""
        v = min(max(v, lo), hi)
        return round(self.x0 + (v - lo) / (hi - lo) * (self.x1 - self.x0), 1)


@dataclass
class DotChart(_Frame):
    """Everything ``dots_svg`` needs, in pixel coordinates rounded to 0.1 px."""

    rows: list[DotRow] = field(default_factory=list)
    titles: list[GroupTitle] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    reference_x: float | None = None
    reference_label: str = ""


@dataclass(frozen=True)
class Scale:
    """A value axis: its ends, where its ticks go, how a value and an interval read."""

    lo: float
    hi: float
    ticks: tuple[float, ...]
    value: Callable[[float | None], str]
    interval: Callable[[tuple[float, float] | None], str]
    reference: float | None = None
    reference_label: str = ""
    tick: Callable[[float], str] = lambda v: f"{100 * v:.0f}%"


RATE_SCALE = Scale(
    0.0, 1.0, (0.0, 0.25, 0.5, 0.75, 1.0), fmt.pct, fmt.interval, 0.5, "50%: no preference"
)
ACCURACY_SCALE = Scale(0.0, 1.0, (0.0, 0.25, 0.5, 0.75, 1.0), fmt.pct, fmt.interval)


def _points(x: float | None) -> str:
    """A signed score (BBQ's bias scores, −1 to 1) in points, as the choice tables show it."""
    return fmt.MISSING if x is None else f"{100 * x:+.1f}".replace("-", fmt.MINUS)


def _points_interval(ci: tuple[float, float] | None) -> str:
    return fmt.MISSING if ci is None else f"[{_points(ci[0])}, {_points(ci[1])}]"


SCORE_SCALE = Scale(
    -1.0,
    1.0,
    (-1.0, -0.5, 0.0, 0.5, 1.0),
    _points,
    _points_interval,
    0.0,
    "0: no bias",
    tick=lambda v: "0" if v == 0 else f"{100 * v:+.0f}".replace("-", fmt.MINUS),
)


def _interval(e: Estimate | None) -> tuple[float, float] | None:
    if e is None or e.low is None or e.high is None:
        return None
    return (e.low, e.high)


def dot_chart(groups: Sequence[tuple[str, Sequence[Estimate]]], scale: Scale) -> DotChart:
    """A dot chart of ``groups`` (title, estimates): per group one row per label, in the
    order the labels first come, baseline and new run on the row. A group titled "" has
    no title row (a chart of one group, named by its caption)."""
    chart = DotChart()

    def x(v: float) -> float:
        return chart.place(v, scale.lo, scale.hi)

    def mark(e: Estimate | None) -> Mark | None:
        if e is None or e.value is None or not math.isfinite(e.value):
            return None
        ci = _interval(e)
        return Mark(x(e.value), x(ci[0]) if ci else None, x(ci[1]) if ci else None)

    y = float(TOP)
    for title, estimates in groups:
        if title:
            chart.titles.append(GroupTitle(round(y + HEADER - 5, 1), fmt.clip(title, 60)))
            y += HEADER
        by_label: dict[str, dict[str, Estimate]] = {}
        for e in estimates:
            by_label.setdefault(e.label, {})[e.side] = e
        for label, sides in by_label.items():
            old, new = sides.get("baseline"), sides.get("new")
            v_old = scale.value(old.value if old else None)
            v_new = scale.value(new.value if new else None)
            text = f"{v_old} → {v_new}"
            title_text = (
                f"{label}: baseline {v_old} {scale.interval(_interval(old))}, "
                f"new {v_new} {scale.interval(_interval(new))}"
            )
            chart.rows.append(
                DotRow(
                    y=round(y + ROW / 2, 1),
                    label=fmt.clip(label, 34),
                    baseline=mark(old),
                    new=mark(new),
                    text=text,
                    title=title_text,
                )
            )
            y += ROW
    chart.y1 = max(y, TOP + ROW)
    chart.height = math.ceil(chart.y1 + AXIS)
    chart.ticks = [Tick(x(t), scale.tick(t)) for t in scale.ticks]
    if scale.reference is not None:
        chart.reference_x = x(scale.reference)
        chart.reference_label = scale.reference_label
    return chart


# --- the forest of paired changes -------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One compared axis's paired change, as the forest draws it (proportions, signed)."""

    label: str
    delta: float | None
    low: float | None
    high: float | None
    mde: float | None  # the smallest change the test detects with 80% power
    verdict: str  # drift's verdict, e.g. "regression"
    flagged: bool
    note: str = ""  # said after the verdict in the row's tooltip ("balanced change", ...)


@dataclass(frozen=True)
class IntervalRow:
    """One row of a forest, in pixels: its y, its label, and where the estimate and its
    interval's ends land (None: not known). The report's forest of paired changes and the
    association tests' forest of d (drawn by that family) add what they mark."""

    y: float
    label: str
    x: float | None
    lo: float | None
    hi: float | None


@dataclass(frozen=True)
class ForestRow(IntervalRow):
    mde_lo: float | None  # the band of changes the test would usually not see
    mde_hi: float | None
    kind: str  # "regression" | "improvement" | "" (not flagged)
    text: str
    title: str


@dataclass
class ChangeForest(_Frame):
    rows: list[ForestRow] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    zero_x: float = 0.0


def _change_range(changes: Sequence[Change]) -> float:
    """Half-width of a symmetric change axis in proportions: every interval and MDE band
    fits, snapped to 5 or 10 points, never under ±10 points (a few points of change must
    not fill the chart)."""
    ends = [
        abs(v)
        for c in changes
        for v in (c.delta, c.low, c.high, c.mde)
        if v is not None and math.isfinite(v)
    ]
    top = max([0.1, *ends])
    step = 0.05 if top <= 0.3 else 0.1
    return min(1.0, math.ceil(top / step - 1e-9) * step)


def _kind(c: Change) -> str:
    return c.verdict if c.flagged and c.verdict in ("regression", "improvement") else ""


def change_forest(changes: Sequence[Change]) -> ChangeForest:
    """One row per change: Δ as a dot, its paired interval as a bar, ±MDE as a grey band
    behind it; a flagged change is a diamond in its verdict's colour."""
    plot = ChangeForest()
    half = _change_range(changes)
    plot.y1 = TOP + ROW * max(len(changes), 1)
    plot.height = plot.y1 + AXIS

    def x(v: float) -> float:
        return plot.place(v, -half, half)

    step = half / 2 if half <= 0.2 else (0.1 if half <= 0.5 else 0.25)
    n = round(half / step)
    plot.ticks = [
        Tick(x(k * step), "0" if k == 0 else f"{100 * k * step:+.0f}".replace("-", fmt.MINUS))
        for k in range(-n, n + 1)
    ]
    plot.zero_x = x(0.0)
    for i, c in enumerate(changes):
        ci = None if c.low is None or c.high is None else (c.low, c.high)
        kind = _kind(c)
        text = f"{fmt.pp(c.delta)} {fmt.pp_interval(ci)}" if c.delta is not None else fmt.MISSING
        plot.rows.append(
            ForestRow(
                y=round(TOP + ROW * (i + 0.5), 1),
                label=fmt.clip(c.label, 34),
                x=x(c.delta) if c.delta is not None else None,
                lo=x(ci[0]) if ci else None,
                hi=x(ci[1]) if ci else None,
                mde_lo=x(-c.mde) if c.mde is not None else None,
                mde_hi=x(c.mde) if c.mde is not None else None,
                kind=kind,
                text=text,
                title=f"{c.label}: {text}, MDE {fmt.mde(c.mde)}, {c.verdict}"
                + (f" ({c.note})" if c.note else ""),
            )
        )
    return plot
