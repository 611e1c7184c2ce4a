"""The association-test family's section of the report (``AssociationSection``): built
from drift's effect comparisons and the stored runs (``build_section``: each new run's
tests, the changes in d, d over time) and drawn in Markdown and HTML as its ``block`` (a
forest plot of d per run, the tests, the changes, the trends), after the pairs' detail.

The report's JSON keeps these fields under their names (``associations``,
``effect_comparisons``, ``effect_trends``: schema version 2, just before
``family_comparisons``); what fills and draws them lives here. Every value is escaped
(``report.markdown.md``, Jinja2 autoescape); terms are never shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from monitor import fmt
from monitor.contract.capabilities import ReportScope
from monitor.families.association import NAME, plots
from monitor.families.association.compare import EffectComparison as DriftEffect
from monitor.metrics.registry import METRICS
from monitor.readmodel.reader import RunReader
from monitor.report.answer import VerdictRef
from monitor.report.history import SafeTexts, series_trend
from monitor.report.html import TrendView, render_folder_template
from monitor.report.input import interval_of, series_columns
from monitor.report.markdown import VERDICT_BADGE, md
from monitor.report.model import (
    VERDICT_ORDER,
    AssociationResult,
    EffectComparison,
    ReportInput,
    Trend,
)
from monitor.report.section import FamilySection, Rendering

_HERE = Path(__file__).parent
_d = plots.d_text  # d with a true minus, as the plots label it


def _own(report: ReportInput) -> AssociationSection:
    """The report's association section (its default where it holds none)."""
    return report.section_of(AssociationSection)


def build_section(
    view: RunReader, comparisons: Sequence[DriftEffect], scope: ReportScope
) -> AssociationSection:
    """The ``Report.build`` hook: the family's section (each new run's tests, the changes
    in d, d over time)."""
    meta = view.runs(c.new_run_id for c in comparisons)
    return AssociationSection(
        associations=tuple(association_results(view, list(scope.new_runs))),
        effect_comparisons=tuple(
            effect_model(c, meta[c.new_run_id].snapshot_id) for c in comparisons
        ),
        effect_trends=tuple(effect_trends(view, scope.since, scope.flags)),
    )


def effect_trends(
    view: RunReader, since: datetime | None, flags: dict[tuple[str, str, str], str]
) -> list[Trend]:
    """d over time per snapshot × test × metric, from complete runs only; 0 is the line
    of no association."""
    safe = SafeTexts()
    return [
        series_trend(
            None,
            series_columns(s, flags, [None] * len(s.run_ids), safe),
            snapshot_id=s.snapshot_id,
            benchmark=s.benchmark,
            axis=s.axis,
            measure="effect_size",
            metric=s.metric,
            reference=0.0,
        )
        for s in view.measure_trend(since, "effect_size")
        if _is_association(s.metric)
    ]


def _is_association(metric: str | None) -> bool:
    """Whether ``metric`` is this family's (a choice-QA bias score is an ``effect_size``
    too, not an association test)."""
    spec = METRICS.get(metric or "")
    return spec is not None and spec.family.name == NAME


def association_results(view: RunReader, run_ids: list[str]) -> list[AssociationResult]:
    """The association tests of the given runs (the new runs a report compares)."""
    out: list[AssociationResult] = []
    for rid in dict.fromkeys(run_ids):
        run = view.run(rid)
        if not _is_association(run.metric):
            continue
        for m in view.measures(rid):
            if m.kind != "effect_size":
                continue
            used = m.details.get("n_used", {})
            out.append(
                AssociationResult(
                    snapshot_id=run.snapshot_id,
                    run_id=rid,
                    started_at=run.started_at,
                    benchmark=m.benchmark,
                    test=m.axis,
                    metric=run.metric,
                    d=m.value,
                    ci=interval_of(m.ci_low, m.ci_high),
                    p_value=m.p_value,
                    p_holm=m.details.get("p_holm"),
                    sizes=tuple(int(used.get(r, 0)) for r in ("X", "Y", "A", "B")),
                    n_missing=int(m.details.get("n_missing", 0)),
                    method=m.method,
                )
            )
    return out


def effect_model(c: DriftEffect, snapshot_id: str) -> EffectComparison:
    """Drift's comparison of one test in the report's shape."""
    return EffectComparison.from_record(
        c,
        snapshot_id=snapshot_id,
        test=c.axis,
        delta_ci=interval_of(c.ci_low, c.ci_high),
        verdict=c.verdict.label,
        reason=c.verdict.reason,
    )


def _associations(report: ReportInput, max_rows: int) -> list[str]:
    """Association tests beside the pairs: each test's d and interval, then what moved."""
    lines: list[str] = []
    if _own(report).associations:
        lines += [
            "### Association tests (WEAT / SEAT)",
            "",
            f"| Snapshot | Test (benchmark) | d [{report.level} bootstrap] | p | p (Holm) "
            "| Missing terms |",
            "|---|---|---|---|---|---|",
        ]
        rows = sorted(_own(report).associations, key=lambda a: (a.snapshot_id, a.benchmark, a.test))
        for a in rows[:max_rows]:
            ci = f" [{_d(a.ci[0])}, {_d(a.ci[1])}]" if a.ci else ""
            lines.append(
                f"| {md(a.snapshot_id, 60)} | {md(a.test, 40)} ({md(a.benchmark, 50)}) | "
                f"{_d(a.d)}{ci} | {fmt.pvalue(a.p_value)} | {fmt.pvalue(a.p_holm)} | "
                f"{a.n_missing} |"
            )
        if len(rows) > max_rows:
            lines.append(f"{len(rows) - max_rows} more tests are in the HTML report.")
        lines.append("")
    if _own(report).effect_comparisons:
        lines += [
            f"| Snapshot | Test | d, baseline → new | Δd (paired {report.level} CI; MDE at 80% "
            "power) | p | p (BH) | Verdict |",
            "|---|---|---|---|---|---|---|",
        ]
        comps = sorted(
            _own(report).effect_comparisons,
            key=lambda c: (VERDICT_ORDER.index(c.verdict), c.snapshot_id, c.benchmark, c.test),
        )
        flagged = sum(c.verdict in ("regression", "improvement") for c in comps)
        for c in comps[: max(max_rows, flagged)]:
            ci = f" [{_d(c.delta_ci[0])}, {_d(c.delta_ci[1])}]" if c.delta_ci else ""
            ci += f"; MDE ±{c.mde:.2f}" if c.mde is not None else ""
            verdict = VERDICT_BADGE[c.verdict]
            if c.verdict == "not comparable" and c.reason:
                verdict += f": {md(c.reason, 100)}"
            lines.append(
                f"| {md(c.snapshot_id, 60)} | {md(c.test, 40)} | {_d(c.d_old)} → {_d(c.d_new)} | "
                f"{_d(c.delta)}{ci} | {fmt.pvalue(c.p_value)} | {fmt.pvalue(c.p_adjusted)} | "
                f"{verdict} |"
            )
        lines.append("")
    return lines


@dataclass(frozen=True)
class _ForestView:
    snapshot_id: str
    run_id: str
    metric: str | None
    plot: plots.ForestPlot
    rows: list
    anchor: str
    caption: str


def _forest_views(report: ReportInput) -> list[_ForestView]:
    runs: dict[str, list] = {}
    for a in _own(report).associations:
        runs.setdefault(a.run_id, []).append(a)
    views = []
    for i, (run_id, rows) in enumerate(runs.items()):
        rows = sorted(rows, key=lambda a: (a.benchmark, a.test))
        views.append(
            _ForestView(
                rows[0].snapshot_id,
                run_id,
                rows[0].metric,
                plots.forest(rows, report.alpha),
                rows,
                f"forest-{i}",
                f"effect size d per association test of {rows[0].snapshot_id}, run {run_id}",
            )
        )
    return views


def _effect_trend_views(report: ReportInput) -> list[TrendView]:
    views = []
    for i, t in enumerate(_own(report).effect_trends):
        plot = plots.trend(t)
        valued = [p for p in t.points if p.value is not None]
        caption = f"effect size d of {t.snapshot_id} on {t.axis} ({t.benchmark}) over time"
        views.append(
            TrendView(t, plot, f"d-trend-{i}", caption, plot.flags, valued[-1] if valued else None)
        )
    return views


def report_headline(report: ReportInput) -> str:
    """The section's ``headline``: the association tests in the report's one-sentence
    verdict (empty when none was compared): what each flag is about, or how many tests
    nothing cleared."""
    comps = _own(report).effect_comparisons
    if not comps:
        return ""
    snapshots = sorted({c.snapshot_id for c in comps})
    where = snapshots[0] if len(snapshots) == 1 else f"{len(snapshots)} snapshots"
    parts = []
    for verdict in ("regression", "improvement"):
        hits = [c for c in comps if c.verdict == verdict]
        if hits:
            listed = ", ".join(f"{c.test} (Δd {_d(c.delta)})" for c in hits)
            parts.append(f"{len(hits)} {verdict}{'s' * (len(hits) != 1)}: {listed}")
    if parts:
        return f"{where} (association tests): " + "; ".join(parts) + "."
    tests = f"{len(comps)} test{'s' * (len(comps) != 1)}"
    return f"{where} (association tests): no flagged change in {tests}."


def report_verdicts(report: ReportInput) -> list[VerdictRef]:
    """The section's ``verdicts``: each compared test's verdict and runs."""
    return [
        VerdictRef(c.snapshot_id, c.new_run_id, c.baseline_run_id, c.verdict)
        for c in _own(report).effect_comparisons
    ]


def report_block(report: ReportInput, how: Rendering) -> str:
    """The section's ``block``: the family's tests where the report places it (after
    the pairs' detail), in Markdown or in HTML, or nothing where the report holds no
    association test (``how``: the format, and for HTML the report's Jinja2 environment,
    which the part extends with this folder)."""
    if how.fmt == "markdown":
        return "\n".join(_associations(report, how.max_rows))
    own = _own(report)
    if not (own.associations or own.effect_comparisons or own.effect_trends):
        return ""  # no association test in this report: no section
    forests = _forest_views(report)
    return render_folder_template(
        how.env,
        _HERE,
        "section.html.j2",
        r=report,
        s=_own(report),
        fmt=fmt,
        forests=forests,
        forest_rows=[a for f in forests for a in f.rows],
        effect_trends=_effect_trend_views(report),
        dfmt=plots.d_text,
    )


class AssociationSection(FamilySection):
    """The association tests in the report: the compared runs' tests, their changes and d
    over time (``Trend`` with measure "effect_size", reference 0). In the JSON (schema 2)
    its fields come just before ``family_comparisons``."""

    family: ClassVar[str] = NAME
    json_before: ClassVar[Mapping[str, str]] = {
        "associations": "family_comparisons",
        "effect_comparisons": "family_comparisons",
        "effect_trends": "family_comparisons",
    }

    associations: tuple[AssociationResult, ...] = ()
    effect_comparisons: tuple[EffectComparison, ...] = ()
    effect_trends: tuple[Trend, ...] = ()

    def shows_trends(self) -> bool:
        return bool(self.effect_trends)

    block = staticmethod(report_block)
    headline = staticmethod(report_headline)
    verdicts = staticmethod(report_verdicts)
