"""The self-contained HTML report: one file, inline CSS and SVG, no JavaScript, no network.

Rendered with jinja2 and autoescaping on for every template, so any value from a file or
an API (model names, run ids, reasons) is text, never markup. The page also carries a
Content-Security-Policy that forbids scripts and remote loads, as a second line.

Tables list what a reader acts on: every comparison, every failing quality suite and
every run that is not complete, plus the runs the comparisons name. A year of nightly
runs is otherwise in the plots, not in a thousand-row table, which keeps the file small.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from monitor import fmt
from monitor.metrics.panel import PANEL_METRICS
from monitor.report import answer, plots
from monitor.report.families import family_blocks, family_sections
from monitor.report.model import QualityResult, ReportInput, RunSummary, Trend, TrendPoint
from monitor.report.text import fdr_text, summary_line

MAX_ITEM_IDS = 200  # flipped item ids listed per comparison
MAX_SUMMARIES = 40  # comparisons explained in words (drifts first)


@lru_cache(maxsize=1)
def environment() -> Environment:
    # default=True: autoescape even a template whose name matches no extension.
    return Environment(
        loader=PackageLoader("monitor.report", "templates"),
        autoescape=select_autoescape(
            enabled_extensions=("html", "svg", "j2"), default_for_string=True, default=True
        ),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


@dataclass(frozen=True)
class TrendView:
    """What the trend macro draws for one series (the rate trends, and a family's own,
    e.g. the association tests' d over time)."""

    trend: Trend
    plot: plots.TrendPlot
    anchor: str
    caption: str
    flags: list[plots.Marker]
    latest: TrendPoint | None


@dataclass(frozen=True)
class _StripView:
    trend: Trend
    strip: plots.Strip
    point: TrendPoint | None


def _charted(report: ReportInput) -> list[Trend]:
    """The rate series a reader reads, controls left out: a neutral control is drawn as
    the control line in its axis's chart (``Trend.control``), never a series of its own."""
    controls = answer.control_benchmarks(report)
    return [t for t in report.trends if t.benchmark not in controls]


def _single_runs(report: ReportInput) -> list[_StripView]:
    """Series of one run: one row each on a shared scale, not a chart each."""
    return [
        _StripView(t, plots.strip(t), t.points[0]) for t in _charted(report) if len(t.points) == 1
    ]


def _trend_views(report: ReportInput) -> list[TrendView]:
    views = []
    for i, t in enumerate(_charted(report)):
        if len(t.points) == 1:
            continue  # drawn in the single-run strip
        plot = plots.layout(t)
        caption = f"{t.measure} of {t.snapshot_id} on {t.axis} ({t.benchmark}) over time"
        valued = [p for p in t.points if p.value is not None]
        views.append(
            TrendView(t, plot, f"trend-{i}", caption, plot.flags, valued[-1] if valued else None)
        )
    return views


def _runs_shown(report: ReportInput) -> tuple[list[RunSummary], list[QualityResult], int]:
    named = {c.new_run_id for c in report.comparisons} | {
        c.baseline_run_id for c in report.comparisons if c.baseline_run_id
    }
    named |= {c.new_run_id for c in report.effect_comparisons} | {
        c.baseline_run_id for c in report.effect_comparisons
    }
    named |= {r for c in report.family_comparisons for r in (c.new_run_id, c.baseline_run_id)}
    runs = [r for r in report.runs if r.status != "complete" or r.run_id in named]
    quality = [q for q in report.quality if not q.success or q.run_id in named]
    return runs, quality, len(report.runs) - len(runs) + report.runs_not_listed


def render_html(report: ReportInput) -> str:
    """The report as one HTML document (UTF-8 text)."""
    runs, quality, hidden_runs = _runs_shown(report)
    shown = report.model_copy(update={"runs": tuple(runs), "quality": tuple(quality)})
    template = environment().get_template("report.html.j2")
    return template.render(
        r=shown,
        fmt=fmt,
        panel_metrics=PANEL_METRICS,
        summary=summary_line(report),
        headline=answer.headline(report),
        pairs=answer.pairs(report),
        counts={v: n for v, n in answer.verdict_counts(report).items() if n},
        fdr=fdr_text(report),
        trends=_trend_views(report),
        singles=_single_runs(report),
        strip_ticks=plots.strip_ticks(),
        strip_width=plots.STRIP_WIDTH,
        strip_height=plots.STRIP_HEIGHT,
        comparisons=(comparisons := answer.verdict_comparisons(report)),
        any_noise=any(c.noise_floor is not None or c.noise_unknown for c in comparisons),
        summaries=[c for c in comparisons if c.summary][:MAX_SUMMARIES],
        max_ids=MAX_ITEM_IDS,
        hidden_runs=hidden_runs,
        hidden_quality=len(report.quality) - len(quality) + report.quality_not_listed,
        family_html=[Markup(s) for s in family_sections(report, "html")],
        family_blocks=[
            Markup(s) for s in family_blocks(report, "html", max_rows=0, env=environment())
        ],
    )
