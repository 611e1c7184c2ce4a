"""Geometry of the longitudinal trend plots, drawn as inline SVG by ``templates/trend.svg.j2``.

Why a small template instead of matplotlib's SVG backend: a report holds one plot per
snapshot × axis, and a year of nightly runs of a few snapshots is a dozen plots of ~365
points. matplotlib writes every glyph and marker as a path (tens of KB a plot even with
``svg.fonttype='none'``) and pulls a ~40 MB dependency into the CI image; the plot needed
here is one line, one band, a reference line and a few markers, which is a polyline and a
polygon per plot (~15 KB for a year). Text stays text (searchable, scales with the page),
and the template is autoescaped like the rest of the report.

This module only computes coordinates and labels; it does no I/O and renders nothing.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from monitor import fmt
from monitor.report.charts import Tick
from monitor.report.model import Trend, TrendPoint

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 46, 14, 12, 30  # margins in px
MAX_X_TICKS = 8
# Above this many points individual dots are noise; the line and band carry the series.
MAX_DOTS = 60
# Runs closer than this on a time axis are drawn run by run instead (up to MAX_BY_RUN).
MIN_GAP = 10  # px
MAX_BY_RUN = 24
EDGE_PAD = 0.03  # share of the time span left free at each end
NOISE_PAD = 8  # px a noise band reaches past its group's first and last run

_DAY_STEPS = (1, 2, 7, 14)
_MONTH_STEPS = (1, 2, 3, 6, 12)


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    label: str
    kind: str = ""  # "regression" | "improvement" | "" (drawn in a neutral colour)


@dataclass(frozen=True)
class NoiseBand:
    """A repeat group's spread: a band from its lowest to its highest run's value, across
    the group's runs. Runs with nothing changed between them differ by this much; a
    change inside the band is noise."""

    x0: float
    x1: float
    y_low: float
    y_high: float
    label: str


@dataclass(frozen=True)
class Whisker:
    """One run's interval, drawn at the run (a band alone hides where each run is)."""

    x: float
    y_low: float
    y_high: float


@dataclass
class TrendPlot:
    """Everything the SVG template needs, in pixel coordinates, rounded to 0.1 px."""

    width: int = WIDTH
    height: int = HEIGHT
    x0: float = LEFT
    x1: float = WIDTH - RIGHT
    y0: float = TOP
    y1: float = HEIGHT - BOTTOM
    lines: list[str] = field(default_factory=list)  # polyline "x,y x,y ..." per unbroken run
    bands: list[str] = field(default_factory=list)  # polygon per unbroken run of intervals
    dots: list[Marker] = field(default_factory=list)
    flags: list[Marker] = field(default_factory=list)
    last: Marker | None = None
    # Each run's interval at its dot (short series; a long one has the band only).
    whiskers: list[Whisker] = field(default_factory=list)
    # Each repeat group's noise band: its runs' values from lowest to highest.
    groups: list[NoiseBand] = field(default_factory=list)
    # Configuration changes: a dashed vertical line between the last run before and the
    # first run after, labelled with what changed.
    breaks: list[Marker] = field(default_factory=list)
    # Quarantined runs: a cross on the bottom edge at their time, never on the line.
    quarantined: list[Marker] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    reference_y: float | None = None
    control_y: float | None = None
    empty: bool = True


def _utc(t: datetime) -> datetime:
    if t.tzinfo is UTC:  # what the store gives; ~100k calls for a year's plots
        return t
    return t.replace(tzinfo=UTC) if t.utcoffset() is None else t.astimezone(UTC)


def _add_months(t: datetime, months: int) -> datetime:
    m = t.month - 1 + months
    return t.replace(year=t.year + m // 12, month=m % 12 + 1, day=1)


def time_ticks(t0: datetime, t1: datetime, max_ticks: int = MAX_X_TICKS) -> list[datetime]:
    """Calendar-aligned ticks (days, weeks, month starts) with at most ``max_ticks`` in range."""
    midnight = t0.replace(hour=0, minute=0, second=0, microsecond=0)
    for step in _DAY_STEPS:
        start = midnight if midnight >= t0 else midnight + timedelta(days=1)
        n = math.floor((t1 - start) / timedelta(days=step)) + 1
        if n <= max_ticks:
            return [start + timedelta(days=step * i) for i in range(max(n, 0))]
    for step in _MONTH_STEPS:
        first = midnight.replace(day=1)
        if first < t0:
            first = _add_months(first, 1)
        while (first.month - 1) % step:
            first = _add_months(first, 1)
        ticks = []
        t = first
        while t <= t1:
            ticks.append(t)
            t = _add_months(t, step)
        if len(ticks) <= max_ticks:
            return ticks
    return [t0, t1]


def tick_labels(ticks: list[datetime]) -> list[str]:
    """ "3 Jul" for day ticks, "Jul 2024" for month starts, "2024" for years."""
    step = ticks[1] - ticks[0] if len(ticks) >= 2 else timedelta(0)
    if step > timedelta(days=300):
        return [f"{t:%Y}" for t in ticks]
    if step >= timedelta(days=28):
        return [f"{t:%b %Y}" for t in ticks]
    return [f"{t.day} {t:%b}" for t in ticks]


def value_range(trend: Trend) -> tuple[float, float]:
    """A y-range that holds every interval and the reference lines, snapped to a grid.

    Not a fixed 0–100%: nightly drift of a few points must be visible. Never narrower
    than 20 points, so sampling noise does not look like a cliff.
    """
    vals = [v for p in trend.points for v in (p.value, p.ci_low, p.ci_high) if v is not None] + [
        v for v in (trend.reference, trend.control) if v is not None
    ]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    if hi - lo < 0.2:
        mid = (hi + lo) / 2
        lo, hi = mid - 0.1, mid + 0.1
    step = 0.1 if hi - lo > 0.3 else 0.05
    lo = max(0.0, math.floor(lo / step + 1e-9) * step)
    hi = min(1.0, math.ceil(hi / step - 1e-9) * step)
    return lo, hi


def _flag_kind(flagged: str) -> str:
    head = flagged.split(":", 1)[0].strip().lower()
    return head if head in ("regression", "improvement") else ""


def _flag_label(p: TrendPoint) -> str:
    ci = "" if p.ci_low is None or p.ci_high is None else f" {fmt.interval((p.ci_low, p.ci_high))}"
    run = fmt.short_id(p.run_id, 20)
    return f"{fmt.day(p.started_at)} {run}: {fmt.pct(p.value)}{ci} — {p.flagged}"


def _crowded(times: list[datetime], t0: datetime, t1: datetime, width: float) -> bool:
    """Whether two consecutive runs would land closer than ``MIN_GAP`` px on a time axis
    (two runs of one afternoon, a rerun minutes later): their dots would be one dot."""
    span = (t1 - t0).total_seconds()
    ordered = sorted(set(times))
    return any(
        (b - a).total_seconds() / span * width < MIN_GAP for a, b in itertools.pairwise(ordered)
    )


def _run_labels(times: list[datetime]) -> list[str]:
    """A label per labelled run of a run-by-run axis: its day, or its time where the run
    labelled before it has the same day (two runs of one day must not read alike)."""
    out: list[str] = []
    for i, t in enumerate(times):
        same_day = i > 0 and times[i - 1].date() == t.date()
        out.append(f"{t:%H:%M}" if same_day else f"{t.day} {t:%b}")
    return out


def layout(trend: Trend) -> TrendPlot:
    """Every run of ``trend`` as a dot with its interval on the line, each repeat group's
    spread as a noise band behind it, breaks, quarantined runs and flags.

    The x axis is time; where runs would crowd on it (a few runs of one day) it is the
    runs in order, evenly spaced and labelled by their day or time, so every run shows."""
    plot = TrendPlot()
    lo, hi = value_range(trend)
    step = 0.1 if hi - lo > 0.3 else 0.05

    def y(v: float) -> float:
        return round(plot.y1 - (v - lo) / (hi - lo) * (plot.y1 - plot.y0), 1)

    n_steps = round((hi - lo) / step)
    levels = [lo + i * step for i in range(n_steps + 1)]
    plot.y_ticks = [Tick(y(v), f"{100 * v:.0f}%") for v in levels]
    if trend.reference is not None and lo <= trend.reference <= hi:
        plot.reference_y = y(trend.reference)
    if trend.control is not None and lo <= trend.control <= hi:
        plot.control_y = y(trend.control)

    pts = trend.points
    if not pts:
        return plot
    times = [_utc(p.started_at) for p in pts] + [_utc(q.started_at) for q in trend.quarantined]
    t0, t1 = min(times), max(times)
    if t1 - t0 < timedelta(days=1):  # one night: centre it in a two-day window
        mid = t0 + (t1 - t0) / 2
        t0, t1 = mid - timedelta(days=1), mid + timedelta(days=1)
    pad = (t1 - t0) * EDGE_PAD  # the first and last runs' dots clear of the frame
    t0, t1 = t0 - pad, t1 + pad
    span = (t1 - t0).total_seconds()
    width = plot.x1 - plot.x0

    xs: dict[datetime, float] = {}
    if len(set(times)) <= MAX_BY_RUN and _crowded(times, t0, t1, width):
        ordered = sorted(set(times))
        gap = width / len(ordered)
        xs = {t: round(plot.x0 + gap * (i + 0.5), 1) for i, t in enumerate(ordered)}
        labelled = ordered[:: math.ceil(len(ordered) / MAX_X_TICKS)]
        labels = _run_labels(labelled)
        plot.x_ticks = [Tick(xs[t], s) for t, s in zip(labelled, labels, strict=True)]

    def x(t: datetime) -> float:
        # Each shown time is placed several times (band, line, dot): computed once.
        t = _utc(t)
        pos = xs.get(t)
        if pos is None:
            pos = xs[t] = round(plot.x0 + (t - t0).total_seconds() / span * width, 1)
        return pos

    if not plot.x_ticks:
        ticks = time_ticks(t0, t1)
        plot.x_ticks = [Tick(x(t), s) for t, s in zip(ticks, tick_labels(ticks), strict=True)]

    after_break = {b.after_run_id for b in trend.breaks}
    # Each point's position, computed once: the band, the line, the dot and the whisker
    # all place it (a year's report lays out ~20k points).
    px = [x(p.started_at) for p in pts]
    py = [y(p.value) if p.value is not None else None for p in pts]
    py_low = [y(p.ci_low) if p.ci_low is not None else None for p in pts]
    py_high = [y(p.ci_high) if p.ci_high is not None else None for p in pts]
    with_ci = [lo is not None and hi is not None for lo, hi in zip(py_low, py_high, strict=True)]

    def segments(ok: list[bool]) -> list[list[int]]:
        """Unbroken runs of the points that pass ``ok`` (their indices); a configuration
        change starts a new one."""
        out: list[list[int]] = [[]]
        for i, p in enumerate(pts):
            if (not ok[i] or p.run_id in after_break) and out[-1]:
                out.append([])
            if ok[i]:
                out[-1].append(i)
        return [seg for seg in out if seg]

    for seg in segments(with_ci):
        upper = [f"{px[i]},{py_high[i]}" for i in seg]
        lower = [f"{px[i]},{py_low[i]}" for i in reversed(seg)]
        if len(seg) == 1:  # a lone interval: give it a visible width
            cx, i = px[seg[0]], seg[0]
            upper = [f"{cx - 4},{py_high[i]}", f"{cx + 4},{py_high[i]}"]
            lower = [f"{cx + 4},{py_low[i]}", f"{cx - 4},{py_low[i]}"]
        plot.bands.append(" ".join(upper + lower))
    for seg in segments([v is not None for v in py]):
        plot.lines.append(" ".join(f"{px[i]},{py[i]}" for i in seg))

    valued = [p for p in pts if p.value is not None]
    if len(valued) <= MAX_DOTS:
        plot.dots = [Marker(px[i], v, "") for i, v in enumerate(py) if v is not None]
        plot.whiskers = [
            Whisker(px[i], py_low[i], py_high[i]) for i, ok in enumerate(with_ci) if ok
        ]
    by_id = {p.run_id: p for p in pts}
    for g in trend.groups:
        members = [by_id[r] for r in g.run_ids if r in by_id]
        values = [p.value for p in members if p.value is not None]
        if not values:
            continue
        left = min(x(p.started_at) for p in members) - NOISE_PAD
        right = max(x(p.started_at) for p in members) + NOISE_PAD
        low, high = y(min(values)), y(max(values))
        if low - high < 2:  # identical runs: a band of no height would not show
            low, high = round((low + high) / 2 + 1, 1), round((low + high) / 2 - 1, 1)
        plot.groups.append(
            NoiseBand(
                round(max(left, plot.x0), 1),
                round(min(right, plot.x1), 1),
                low,
                high,
                f"{g.label}: {len(values)} runs of one configuration, "
                f"{fmt.pct(min(values))}–{fmt.pct(max(values))} (their noise)",
            )
        )
    when = {p.run_id: _utc(p.started_at) for p in pts}
    for b in trend.breaks:
        # Just before the first run of the new configuration (when exactly the change
        # happened between the two runs is not known; the label gives both dates).
        before, after = x(when[b.before_run_id]), x(when[b.after_run_id])
        bx = round(max(before + (after - before) / 2, after - 6), 1)
        plot.breaks.append(
            Marker(
                bx,
                plot.y0,
                f"configuration change between {fmt.day(when[b.before_run_id])} and "
                f"{fmt.day(when[b.after_run_id])}: " + ", ".join(b.changes),
            )
        )
    plot.quarantined = [
        Marker(
            x(q.started_at),
            plot.y1 - 6,
            f"{fmt.day(q.started_at)} {fmt.short_id(q.run_id, 20)}: quarantined"
            + (f" — {q.reason}" if q.reason else ""),
        )
        for q in trend.quarantined
    ]
    plot.flags = [
        Marker(
            x(p.started_at),
            y(p.value) if p.value is not None else plot.y1,
            _flag_label(p),
            _flag_kind(p.flagged),
        )
        for p in pts
        if p.flagged
    ]
    if valued:
        last = valued[-1]
        plot.last = Marker(x(last.started_at), y(last.value), fmt.pct(last.value))
    plot.empty = not valued
    return plot


# One-run series: a row of points on one shared 0–100% scale instead of a chart each
# (a chart of one point has no line, and per-chart y-ranges made rates look alike).
STRIP_WIDTH, STRIP_HEIGHT, STRIP_PAD = 360, 18, 16


def strip_x(rate: float) -> float:
    """A rate's x on the shared strip scale (0% at the left pad, 100% at the right)."""
    return round(STRIP_PAD + min(max(rate, 0.0), 1.0) * (STRIP_WIDTH - 2 * STRIP_PAD), 1)


@dataclass(frozen=True)
class Strip:
    """One series' single point: dot, its interval and the reference / control ticks."""

    x: float | None
    lo: float | None
    hi: float | None
    reference_x: float | None
    control_x: float | None
    kind: str  # flag colour of the point: "regression" | "improvement" | ""


def strip(trend: Trend) -> Strip:
    """The last valued point of a one-run series on the shared scale."""
    valued = [p for p in trend.points if p.value is not None]
    p = valued[-1] if valued else None
    has_ci = p is not None and p.ci_low is not None and p.ci_high is not None
    return Strip(
        x=strip_x(p.value) if p is not None else None,
        lo=strip_x(p.ci_low) if has_ci else None,
        hi=strip_x(p.ci_high) if has_ci else None,
        reference_x=strip_x(trend.reference) if trend.reference is not None else None,
        control_x=strip_x(trend.control) if trend.control is not None else None,
        kind=_flag_kind(p.flagged) if p is not None and p.flagged else "",
    )


def strip_ticks() -> list[Tick]:
    return [Tick(strip_x(v / 100), f"{v}%") for v in (0, 25, 50, 75, 100)]
