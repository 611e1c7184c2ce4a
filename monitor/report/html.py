"""The self-contained HTML report: one file, inline CSS and SVG, no JavaScript, no network.

Rendered with jinja2 and autoescaping on for every template, so any value from a file or
an API (model names, run ids, reasons) is text, never markup. The page also carries a
Content-Security-Policy that forbids scripts and remote loads, as a second line.

Tables list what a reader acts on: every comparison, every failing quality suite and
every run that is not complete, plus the runs the comparisons name. A year of nightly
runs is otherwise in the plots, not in a thousand-row table, which keeps the file small.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import (
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)
from markupsafe import Markup, escape

from monitor import fmt
from monitor.report import answer, plots
from monitor.report.families import family_parts
from monitor.report.model import QualityResult, ReportInput, RunSummary, Trend, TrendPoint
from monitor.report.text import lake_snapshot_line, summary_line


@lru_cache(maxsize=1)
def environment() -> Environment:
    # default=True: autoescape even a template whose name matches no extension.
    env = Environment(
        loader=PackageLoader("monitor.report", "templates"),
        autoescape=select_autoescape(
            enabled_extensions=("html", "svg", "j2"), default_for_string=True, default=True
        ),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(whisker_lines=whisker_lines, dot_circles=dot_circles)
    return env


def _coordinate(value: object) -> str:
    """A coordinate as ``{{ value }}`` prints it under autoescape: a number's ``str``;
    anything else escaped (a coordinate is always a number, but nothing is trusted)."""
    return str(value) if type(value) in (float, int) else str(escape(value))


def whisker_lines(whiskers: Iterable[plots.Whisker]) -> Markup:
    """A trend plot's per-run intervals, one ``<line>`` each. A year's report draws ~20k
    runs' whiskers and dots: Jinja's attribute lookup and escaping per number was most of
    the HTML's time, for numbers that need no escaping (the output is the same bytes)."""
    return Markup(
        "".join(
            f'<line class="whisker" x1="{x}" x2="{x}" y1="{_coordinate(w.y_high)}" '
            f'y2="{_coordinate(w.y_low)}"/>\n'
            for w in whiskers
            for x in (_coordinate(w.x),)
        )
    )


def dot_circles(dots: Iterable[plots.Marker]) -> Markup:
    """A trend plot's runs, one ``<circle>`` each (see ``whisker_lines``)."""
    return Markup(
        "".join(
            f'<circle class="dot" cx="{_coordinate(d.x)}" cy="{_coordinate(d.y)}" r="2.5"/>\n'
            for d in dots
        )
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


def render_folder_template(
    env: Environment | None, folder: Path, name: str, **context: Any
) -> Markup:
    """Template ``name`` of a family's ``folder``, rendered in the report's environment
    (autoescape, its macros), which the HTML renderer passes to a family's section as
    ``env``: the folder's templates first, the report's own behind them."""
    assert env is not None, "the HTML part renders in the report's environment"
    return Markup(_folder_environment(env, folder).get_template(name).render(**context))


@lru_cache(maxsize=32)
def _folder_environment(env: Environment, folder: Path) -> Environment:
    """The report's environment with ``folder``'s templates in front, one per folder: a
    fresh overlay per part compiled each template it reads again (its cache is keyed by
    its own loader), the report's macros included."""
    return env.overlay(loader=ChoiceLoader([FileSystemLoader(folder), env.loader]))


def _runs_shown(report: ReportInput) -> tuple[list[RunSummary], list[QualityResult], int]:
    named = {r for v in answer.verdict_refs(report) for r in (v.new_run_id, v.baseline_run_id) if r}
    runs = [r for r in report.runs if r.status != "complete" or r.run_id in named]
    quality = [q for q in report.quality if not q.success or q.run_id in named]
    return runs, quality, len(report.runs) - len(runs) + report.runs_not_listed


def render_html(report: ReportInput) -> str:
    """The report as one HTML document (UTF-8 text)."""
    runs, quality, hidden_runs = _runs_shown(report)
    shown = report.model_copy(update={"runs": tuple(runs), "quality": tuple(quality)})
    env = environment()
    template = env.get_template("report.html.j2")
    return template.render(
        r=shown,
        fmt=fmt,
        summary=summary_line(report),
        lake_snapshot=lake_snapshot_line(report.lake_snapshot) if report.lake_snapshot else None,
        headline=answer.headline(report),
        leads=[Markup(s) for s in family_parts(report, "lead", "html", max_rows=0, env=env)],
        counts={v: n for v, n in answer.verdict_counts(report).items() if n},
        hidden_runs=hidden_runs,
        hidden_quality=len(report.quality) - len(quality) + report.quality_not_listed,
        trends_shown=any(s.shows_trends() for s in report.every_section()),
        family_html=[
            Markup(s) for s in family_parts(report, "answer", "html", max_rows=0, env=env)
        ],
        family_blocks=[
            Markup(s) for s in family_parts(report, "block", "html", max_rows=0, env=env)
        ],
        family_appendices=[
            Markup(s) for s in family_parts(report, "appendix", "html", max_rows=0, env=env)
        ],
    )
