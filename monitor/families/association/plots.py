"""Geometry of the association-test plots: a forest plot of d per test and the trend of
d over time, drawn as inline SVG (``templates/forest.svg.j2`` and the trend macro).

Effect sizes live on their own scale (d, signed, 0 = no association), so they get their
own axes rather than the rate plots' 0–100%. Coordinates and labels only; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from monitor import fmt
from monitor.report.charts import IntervalRow
from monitor.report.model import AssociationResult, Trend
from monitor.report.plots import Marker, Tick, TrendPlot, tick_labels, time_ticks

ROW_HEIGHT = 18
LABEL_WIDTH = 210
VALUE_WIDTH = 150


def d_text(x: float | None) -> str:
    return fmt.MISSING if x is None else f"{x:+.2f}".replace("-", fmt.MINUS)


def _range(values: list[float]) -> tuple[float, float]:
    """Symmetric enough to show 0, snapped to halves, never narrower than [-1, 1]."""
    lo = min([-1.0, *values])
    hi = max([1.0, *values])
    return math.floor(lo * 2) / 2, math.ceil(hi * 2) / 2


def _ticks(lo: float, hi: float) -> list[float]:
    step = 0.5 if hi - lo <= 3 else 1.0
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(round((hi - first) / step) + 1)]


@dataclass(frozen=True)
class ForestRow(IntervalRow):
    significant: bool
    text: str


@dataclass
class ForestPlot:
    width: int = 640
    height: int = 60
    x0: float = LABEL_WIDTH
    x1: float = 640 - VALUE_WIDTH
    y0: float = 8
    y1: float = 40
    rows: list[ForestRow] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    zero_x: float = 0.0


def forest(results: list[AssociationResult], alpha: float = 0.05) -> ForestPlot:
    """One row per test: d as a dot, its interval as a bar; filled when Holm's p < alpha."""
    values = [
        v for r in results for v in (r.d, *(r.ci or ())) if v is not None and math.isfinite(v)
    ]
    lo, hi = _range(values)
    plot = ForestPlot()
    plot.y1 = plot.y0 + ROW_HEIGHT * max(len(results), 1)
    plot.height = int(plot.y1 + 26)

    def x(v: float) -> float:
        return round(plot.x0 + (v - lo) / (hi - lo) * (plot.x1 - plot.x0), 1)

    plot.ticks = [Tick(x(t), d_text(t) if t else "0") for t in _ticks(lo, hi)]
    plot.zero_x = x(0.0)
    for i, r in enumerate(results):
        y = round(plot.y0 + ROW_HEIGHT * (i + 0.5), 1)
        ci = r.ci
        p = r.p_holm if r.p_holm is not None else r.p_value
        text = d_text(r.d) + (f" [{d_text(ci[0])}, {d_text(ci[1])}]" if ci else "")
        plot.rows.append(
            ForestRow(
                y=y,
                label=fmt.clip(f"{r.test} ({r.benchmark})", 34),
                x=x(r.d) if r.d is not None else None,
                lo=x(ci[0]) if ci else None,
                hi=x(ci[1]) if ci else None,
                significant=p is not None and p < alpha,
                text=text,
            )
        )
    return plot


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.utcoffset() is None else t.astimezone(UTC)


def trend(t: Trend) -> TrendPlot:
    """The trend of d (with its interval band) in the rate plots' frame, on a d axis."""
    plot = TrendPlot()
    values = [v for p in t.points for v in (p.value, p.ci_low, p.ci_high) if v is not None]
    lo, hi = _range(values)

    def y(v: float) -> float:
        return round(plot.y1 - (v - lo) / (hi - lo) * (plot.y1 - plot.y0), 1)

    plot.y_ticks = [Tick(y(v), d_text(v) if v else "0") for v in _ticks(lo, hi)]
    plot.reference_y = y(0.0)
    pts = t.points
    if not pts:
        return plot
    times = [_utc(p.started_at) for p in pts]
    t0, t1 = times[0], times[-1]
    if t1 - t0 < timedelta(days=1):
        mid = t0 + (t1 - t0) / 2
        t0, t1 = mid - timedelta(days=1), mid + timedelta(days=1)
    span = (t1 - t0).total_seconds()

    def x(moment: datetime) -> float:
        return round(plot.x0 + (moment - t0).total_seconds() / span * (plot.x1 - plot.x0), 1)

    ticks = time_ticks(t0, t1)
    plot.x_ticks = [Tick(x(k), s) for k, s in zip(ticks, tick_labels(ticks), strict=True)]
    banded = [(m, p) for m, p in zip(times, pts, strict=True) if p.ci_low is not None]
    if banded:
        upper = [f"{x(m)},{y(p.ci_high)}" for m, p in banded]
        lower = [f"{x(m)},{y(p.ci_low)}" for m, p in reversed(banded)]
        if len(banded) == 1:
            cx = x(banded[0][0])
            p = banded[0][1]
            upper = [f"{cx - 2},{y(p.ci_high)}", f"{cx + 2},{y(p.ci_high)}"]
            lower = [f"{cx + 2},{y(p.ci_low)}", f"{cx - 2},{y(p.ci_low)}"]
        plot.bands.append(" ".join(upper + lower))
    valued = [(m, p) for m, p in zip(times, pts, strict=True) if p.value is not None]
    if valued:
        plot.lines.append(" ".join(f"{x(m)},{y(p.value)}" for m, p in valued))
        plot.dots = [Marker(x(m), y(p.value), "") for m, p in valued]
        m, p = valued[-1]
        plot.last = Marker(x(m), y(p.value), d_text(p.value))
    plot.flags = [
        Marker(
            x(m),
            y(p.value) if p.value is not None else plot.y1,
            f"{fmt.day(p.started_at)} {fmt.short_id(p.run_id, 20)}: d {d_text(p.value)} — "
            f"{p.flagged}",
            p.flagged.split(":", 1)[0].strip() if p.flagged else "",
        )
        for m, p in zip(times, pts, strict=True)
        if p.flagged
    ]
    plot.empty = not valued
    return plot
