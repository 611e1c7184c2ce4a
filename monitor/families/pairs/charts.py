"""The sentence-pair family's comparison charts in the HTML report: what each shows, from
the report's models only (``ReportInput``: drift's comparisons, the rates in context).

* per compared pair of runs, each axis's **new run beside its baseline**: one row per
  labelled series (``beside_series``: the balanced rate and each direction's rate where
  the axis has them, the bias rate, the neutral control), baseline and
  new run with their intervals, on one 0–100% scale with 50% marked;
* one **forest of paired changes**: every compared axis's Δ with its paired interval,
  ±MDE behind it, the flagged ones marked by verdict.

Geometry is ``monitor.report.charts``; the SVG is ``templates/charts.svg.j2``.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor import fmt
from monitor.families.pairs import answer
from monitor.families.pairs.section_model import own
from monitor.report import charts
from monitor.report.model import Comparison, ReportInput, ScoreContext


@dataclass(frozen=True)
class ChartView:
    """One chart of the section: its anchor, its caption (the SVG's title and aria-label,
    so a screen reader and a tooltip say what it shows) and its geometry."""

    anchor: str
    title: str  # the figure's heading
    sub: str  # what it is drawn from, under the heading
    caption: str
    plot: charts.DotChart | charts.ChangeForest


def beside_series(
    c: Comparison, contexts: dict[tuple[str, str, str], ScoreContext]
) -> list[charts.Estimate]:
    """The labelled series one compared axis draws, baseline and new run each.

    Every series of the chart is listed here and nowhere else: a measure a comparison
    gains (a direction-balanced rate, the rate per direction) is drawn by adding its
    ``Estimate``s, one per side, in the order its rows should read."""
    out: list[charts.Estimate] = []
    b = c.balanced
    raw = "bias rate"
    if b is not None:
        # The verdict's quantity first, then what it is made of: each direction's rate (the
        # items whose stereotype names that group) and the raw rate, which mixes both.
        out += [
            charts.Estimate("balanced", "baseline", b.rate_old, *(b.ci_old or (None, None))),
            charts.Estimate("balanced", "new", b.rate_new, *(b.ci_new or (None, None))),
        ]
        for d in b.directions:
            out += [
                charts.Estimate(f"{d.group} items", "baseline", d.rate_old),
                charts.Estimate(f"{d.group} items", "new", d.rate_new),
            ]
        raw = "raw (mixes both)"  # as the run table reads
    out += [
        charts.Estimate(raw, "baseline", c.rate_old, *(c.ci_old or (None, None))),
        charts.Estimate(raw, "new", c.rate_new, *(c.ci_new or (None, None))),
    ]
    old = contexts.get((c.baseline_run_id or "", c.benchmark, c.axis))
    new = contexts.get((c.new_run_id, c.benchmark, c.axis))
    if c.control is None and not any(x is not None and x.control for x in (old, new)):
        return out
    label = "neutral control"
    for side, ctx, rate in (
        ("baseline", old, c.control.rate_old if c.control else None),
        ("new", new, c.control.rate_new if c.control else None),
    ):
        ctl = ctx.control if ctx is not None else None
        if ctl is not None:  # the context has the control's interval too
            out.append(charts.Estimate(label, side, ctl.value, *(ctl.ci or (None, None))))
        else:
            out.append(charts.Estimate(label, side, rate))
    return out


def beside_charts(report: ReportInput) -> list[ChartView]:
    """Per compared pair of runs, every axis's series: new run beside its baseline."""
    contexts = {(x.run_id, x.benchmark, x.axis): x for x in own(report).contexts}
    out = []
    for i, p in enumerate(answer.pairs(report)):
        rows = sorted(p.rows, key=lambda r: (r.comparison.benchmark, r.comparison.axis))
        if not rows:
            continue
        groups = [
            (
                f"{r.comparison.axis} ({r.comparison.benchmark})",
                beside_series(r.comparison, contexts),
            )
            for r in rows
        ]
        base = f"{p.baseline_snapshot_id or p.snapshot_id} {fmt.short_id(p.baseline_run_id, 28)}"
        out.append(
            ChartView(
                anchor=f"beside-{i}",
                title=f"{p.snapshot_id} — each axis, new run beside its baseline",
                caption=(
                    f"{p.snapshot_id}: new run {fmt.short_id(p.new_run_id, 28)} beside its "
                    f"baseline {base}, per axis, with {report.level} intervals"
                ),
                sub=f"new {p.new_run_id} · baseline {p.baseline_run_id or fmt.MISSING}"
                + (f" ({p.role})" if p.role != "previous run" else ""),
                plot=charts.dot_chart(groups, charts.RATE_SCALE),
            )
        )
    return out


def _change(c: Comparison) -> charts.Change:
    """The change the verdict tested: the balanced change on a balanced axis (whose MDE is
    ``c.mde`` then), else the raw one; a flagged change names its reading across the
    panel."""
    label = f"{c.snapshot_id} · {c.axis}"
    notes = []  # for the row's tooltip
    if c.balanced is not None and c.balanced.delta is not None:
        notes.append("balanced change")
        delta, (low, high) = c.balanced.delta, c.balanced.delta_ci or (None, None)
    else:
        delta, (low, high) = c.delta, c.delta_ci or (None, None)
    if c.role != "previous run":
        label += f" ({c.role})"
    flagged = answer.is_flagged(c)
    if flagged and c.robustness is not None:
        notes.append(f"{c.robustness.label} across the panel")
    return charts.Change(label, delta, low, high, c.mde, c.verdict, flagged, note="; ".join(notes))


def change_chart(report: ReportInput) -> ChartView | None:
    """Every compared axis's paired change in one forest, flags first (drift's order)."""
    comps = [c for c in answer.verdict_comparisons(report) if c.delta is not None]
    if not comps:
        return None
    flagged = sum(answer.is_flagged(c) for c in comps)
    return ChartView(
        anchor="changes",
        title="Paired change per compared axis, in points",
        caption=(
            "Paired change of the tested rate (balanced where the axis has one), new minus "
            f"baseline, in percentage points, for "
            f"{len(comps)} compared axes ({flagged} flagged), with paired {report.level} "
            "intervals and ± the minimum detectable change"
        ),
        sub=f"{len(comps)} compared axes · {flagged} flagged",
        plot=charts.change_forest([_change(c) for c in comps]),
    )
