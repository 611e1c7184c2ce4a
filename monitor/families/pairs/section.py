"""The sentence-pair family's section of the report (``PairsSection``): built, and drawn.

``build_section`` (``Report.build``): drift's per-axis comparisons (``AxisComparison``)
become the report's ``Comparison`` models, with each compared run's bias rates in context (the
neutral control, the metric panel), the bias rate over time per snapshot × axis with
repeat groups and configuration breaks, and the method comparisons of those series. Built
from the typed read models (``readmodel.reader``), never the store.

``block``: the detail the report shows after every family's answer, in
Markdown (PR comment, job summary) or HTML: trends (HTML), every paired comparison with
its test and the FDR note, each rate in context, what the verdicts mean.
``appendix``: the repeat groups and the methods side by side, after what
changed between the compared runs. Every value is escaped (``report.markdown.md``, Jinja2
autoescape); item texts are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from monitor import fmt
from monitor.contract.capabilities import ReportScope
from monitor.families.pairs import answer, charts
from monitor.families.pairs.comparison import AxisComparison
from monitor.families.pairs.drift_output import held_note
from monitor.families.pairs.section_history import method_comparisons, repeat_groups
from monitor.families.pairs.section_model import PairsData, own
from monitor.metrics.context import score_contexts
from monitor.metrics.panel import PANEL_METRICS
from monitor.readmodel.reader import RunReader
from monitor.report import plots
from monitor.report.history import SafeTexts, quarantined_runs, series_trend
from monitor.report.html import TrendView, render_folder_template
from monitor.report.input import interval_of, series_columns
from monitor.report.markdown import VERDICT_BADGE, md
from monitor.report.model import (
    BalancedSummary,
    Comparison,
    ConfigurationChange,
    ContextRate,
    ControlBeside,
    DeltaTestSummary,
    DirectionChangeSummary,
    NoiseSide,
    PanelReading,
    ReportInput,
    Robustness,
    ScoreContext,
    Trend,
    TrendPoint,
)
from monitor.report.section import Rendering

_HERE = Path(__file__).parent
MAX_ITEM_IDS = 200  # flipped item ids listed per comparison (HTML)
HTML_SUMMARIES = 40  # comparisons explained in words in the HTML (drifts first)


def build_section(view: RunReader, comparisons: Sequence[Any], scope: ReportScope) -> PairsSection:
    """The ``Report.build`` hook: the pairs' section (``comparisons``, ``contexts``,
    ``trends``, ``repeat_groups``, ``methods``). ``scope.with_flips``: each comparison lists the
    ids of the items whose answer moved (``--show-flips``)."""
    axes = [c for c in comparisons if isinstance(c, AxisComparison)]
    meta = view.runs(c.new_run_id for c in axes)
    comps = [
        comparison_model(c, meta[c.new_run_id].metric, with_flips=scope.with_flips).model_copy(
            update={"snapshot_id": meta[c.new_run_id].snapshot_id}
        )
        for c in axes
    ]
    compared = [r for c in axes for r in (c.new_run_id, c.baseline_run_id)]
    series = trends(view, scope.since, scope.flags)
    latest = [t.points[-1].run_id for t in series if t.points]
    view.prefetch_measures([*compared, *latest, *scope.new_runs])
    contexts = score_contexts_of(view, compared + latest, _controls())
    snapshots = sorted({t.snapshot_id for t in series} | {c.snapshot_id for c in comps})
    return PairsSection(
        comparisons=tuple(comps),
        contexts=tuple(contexts),
        trends=tuple(_with_controls(series, contexts)),
        repeat_groups=tuple(g for s in snapshots for g in repeat_groups(view, s, scope.since)),
        methods=tuple(method_comparisons(view, series)),
    )


def _noise_fields(c: AxisComparison) -> dict:
    ctx = c.noise_context
    if ctx is None:
        return {}
    return {
        "noise": tuple(
            NoiseSide(
                side=s.side,
                description=s.description,
                group_key=s.group_key,
                n_runs=s.floor.n_runs,
                pair_flip_rates=s.floor.pair_rates,
                flip_floor=s.floor.upper,
                bias_rates=s.rates,
            )
            for s in ctx.sides
        ),
        "noise_unknown": ctx.unknown,
        "rate_noise": ctx.rate_bound,
    }


def _delta_test(c: AxisComparison) -> DeltaTestSummary | None:
    t = c.delta_test
    if t is None:
        return None
    return DeltaTestSummary.from_record(t, ci=interval_of(t.ci_low, t.ci_high))


def _robustness(c: AxisComparison) -> Robustness | None:
    r = c.robustness
    if r is None:
        return None
    return Robustness.from_record(
        r,
        words=r.words(),
        metrics=tuple(
            PanelReading.from_record(m, ci=interval_of(m.ci_low, m.ci_high), n_paired=m.n)
            for m in r.readings
        ),
    )


def comparison_model(c: AxisComparison, metric: str | None, *, with_flips: bool) -> Comparison:
    return Comparison(
        snapshot_id="",  # filled by the caller, which knows the run's snapshot
        benchmark=c.benchmark,
        axis=c.axis,
        new_run_id=c.new_run_id,
        baseline_run_id=c.baseline_run_id,
        n_paired=c.n_paired,
        rate_old=c.rate_old.value,
        ci_old=interval_of(c.rate_old.ci_low, c.rate_old.ci_high),
        rate_new=c.rate_new.value,
        ci_new=interval_of(c.rate_new.ci_low, c.rate_new.ci_high),
        delta=c.paired.delta,
        # Where items share a template the interval shown is the cluster-aware one.
        delta_ci=c.delta_ci_clustered or interval_of(c.paired.ci_low, c.paired.ci_high),
        b_to_anti=c.b,
        c_to_stereo=c.c,
        p_value=c.p_value,
        p_adjusted=c.p_adjusted,
        noise_floor=c.noise.upper if c.noise else None,
        verdict=c.verdict.label,
        reason=c.verdict.reason,
        interval_note=held_note(c),
        flagged=c.flagged,
        control=ControlBeside(
            benchmark=c.control.benchmark,
            axis=c.control.axis,
            rate_old=c.control.rate_old.value,
            rate_new=c.control.rate_new.value,
        )
        if c.control is not None
        else None,
        robustness=_robustness(c),
        metric=metric,
        flipped_item_ids=(c.flipped_to_anti + c.flipped_to_stereo) if with_flips else None,
        role=c.role,
        mde=c.detectable.mde if c.detectable else None,
        mde_n=c.detectable.n_effective if c.detectable else None,
        flip_rate=c.flip_rate,
        design_effect=c.clusters.design_effect if c.clusters else None,
        n_clusters=c.clusters.n_clusters if c.clusters else None,
        delta_test=_delta_test(c),
        configuration_changes=tuple(
            ConfigurationChange(label=label, old=old, new=new)
            for label, old, new in c.configuration_changes
        ),
        summary=c.summary,
        balanced=_balanced_model(c),
        balanced_note=c.balanced_note,
        **_noise_fields(c),
    )


def _balanced_model(c: AxisComparison) -> BalancedSummary | None:
    """The report's view of an axis's balanced change (``AxisComparison.balanced``)."""
    b = c.balanced
    if b is None:
        return None
    old, new = b.rate_old, b.rate_new
    return BalancedSummary(
        rate_old=old.value if old else None,
        ci_old=interval_of(old.ci_low, old.ci_high) if old else None,
        rate_new=new.value if new else None,
        ci_new=interval_of(new.ci_low, new.ci_high) if new else None,
        delta=b.delta,
        delta_ci=interval_of(b.ci_low, b.ci_high),
        p_value=b.p_value,
        mde=b.detectable.mde,
        raw_delta=b.raw_delta,
        name_preference_part=b.name_preference_part,
        favoured=(new or old).favoured if (new or old) else None,
        name_preference_old=old.name_preference if old else None,
        name_preference_new=new.name_preference if new else None,
        directions=tuple(
            DirectionChangeSummary.from_record(d, delta_ci=interval_of(d.ci_low, d.ci_high))
            for d in b.directions
        ),
        n_outside=b.n_outside,
    )


def trends(
    view: RunReader, since: datetime | None, flags: dict[tuple[str, str, str], str]
) -> list[Trend]:
    """Bias rate over time per snapshot × benchmark axis, from complete runs only, with
    repeat groups, configuration breaks and quarantined runs (``report.history``),
    condensed to what a plot can show (``history.condense``)."""
    series = view.measure_trend(since, "bias_rate")
    runs = view.runs(rid for s in series for rid in s.run_ids)
    keys = {rid: r.configuration_key for rid, r in runs.items()}
    apart = quarantined_runs(view, since)
    safe = SafeTexts()
    return [
        series_trend(
            runs,
            series_columns(s, flags, [keys.get(r) for r in s.run_ids], safe),
            apart,
            snapshot_id=s.snapshot_id,
            benchmark=s.benchmark,
            axis=s.axis,
            metric=s.metric,
        )
        for s in series
    ]


def _controls() -> dict[str, tuple[str, ...]]:
    """Benchmark -> its neutral controls (the manifest's ``controls``); none if the manifest
    cannot be read, so a report on an old store still renders."""
    from monitor.drift.controls import manifest_controls

    return manifest_controls()


def _context_rate(label: str, r, control=None) -> ContextRate:
    return ContextRate.from_record(
        r,
        label=label,
        ci=interval_of(r.ci_low, r.ci_high),
        control=control.value if control is not None else None,
    )


def score_contexts_of(
    view: RunReader, run_ids: list[str], controls: dict[str, tuple[str, ...]]
) -> list[ScoreContext]:
    """Each run's bias rates beside their neutral control and metric panel (see
    ``monitor.metrics.context``), for the report's context table and trend control lines."""
    out: list[ScoreContext] = []
    meta = view.runs(run_ids)
    for rid in dict.fromkeys(run_ids):
        run = meta[rid]
        for c in score_contexts(view.measures(rid), run.metric, controls):
            out.append(
                ScoreContext.from_record(
                    c,
                    run_id=rid,
                    snapshot_id=run.snapshot_id,
                    rate=_context_rate(c.metric, c.rate),
                    control=_context_rate(c.control_benchmark or "", c.control)
                    if c.control
                    else None,
                    panel=tuple(
                        _context_rate(m, r, c.control_panel.get(m)) for m, r in c.panel.items()
                    ),
                    agreement=_context_rate(_agree_label(len(c.panel)), c.agreement)
                    if c.agreement
                    else None,
                )
            )
    return out


def _agree_label(n: int) -> str:
    """What the agreement counts: both metrics of a default panel (cll, ull), all three
    where the run also scored cll-reference."""
    return "both metrics agree" if n <= 2 else f"all {n} metrics agree"


def context_metrics(report: ReportInput) -> tuple[str, ...]:
    """The panel metrics some run in the report's context table holds, in the panel's
    order: a column each (a run without one shows a dash there), none for a metric no run
    scored (``cll-reference`` since it left the default panel)."""
    held = {p.label for c in own(report).contexts for p in c.panel}
    return tuple(m for m in PANEL_METRICS if m in held)


def _with_controls(trends: list[Trend], contexts: list[ScoreContext]) -> list[Trend]:
    """A trend's control line: the neutral control of its latest run that has one."""
    by = {(c.run_id, c.benchmark, c.axis): c for c in contexts}
    out = []
    for t in trends:
        ctl = next(
            (
                by[(p.run_id, t.benchmark, t.axis)].control
                for p in reversed(t.points)
                if (p.run_id, t.benchmark, t.axis) in by
                and by[(p.run_id, t.benchmark, t.axis)].control is not None
            ),
            None,
        )
        out.append(t.model_copy(update={"control": ctl.value}) if ctl is not None else t)
    return out


def report_block(report: ReportInput, how: Rendering) -> str:
    """The section's ``block``: the pairs' detail in Markdown or HTML, after every
    family's answer (an empty string where the report holds no pair results). In Markdown
    every flag is listed and quiet comparisons fill up to ``how.max_rows``; the HTML extends
    the report's Jinja2 environment (``how.env``) with this folder."""
    if how.fmt == "markdown":
        return "\n".join(_markdown(report, how.max_rows))
    if not (own(report).comparisons or own(report).contexts or own(report).trends):
        return ""  # no pair results in this report (e.g. choice questions only): no section
    comparisons = answer.verdict_comparisons(report)
    return render_folder_template(
        how.env,
        _HERE,
        "section.html.j2",
        r=report,
        s=own(report),
        fmt=fmt,
        panel_metrics=context_metrics(report),
        fdr=fdr_text(report),
        beside=charts.beside_charts(report),
        changes=charts.change_chart(report),
        trends=_trend_views(report),
        singles=_single_runs(report),
        strip_ticks=plots.strip_ticks(),
        strip_width=plots.STRIP_WIDTH,
        strip_height=plots.STRIP_HEIGHT,
        comparisons=comparisons,
        any_noise=any(c.noise_floor is not None or c.noise_unknown for c in comparisons),
        summaries=[c for c in comparisons if c.summary][:HTML_SUMMARIES],
        max_ids=MAX_ITEM_IDS,
    )


def report_appendix(report: ReportInput, how: Rendering) -> str:
    """The section's ``appendix``: the repeat groups with their noise and the methods
    side by side, reference material the report places after what changed between the
    compared runs (a long history's repeat groups would otherwise push that past the
    Markdown's length limit). Empty when the report has neither."""
    if how.fmt == "markdown":
        out: list[str] = []
        for title, lines in (
            ("Repeat groups (noise floors)", _repeat_groups(report)),
            ("Methods side by side", _methods(report)),
        ):
            if lines:
                out += [f"### {title}", "", *lines, ""]
        return "\n".join(out)
    if not own(report).repeat_groups and not own(report).methods:
        return ""
    return render_folder_template(
        how.env, _HERE, "appendix.html.j2", r=report, s=own(report), fmt=fmt
    )


def _markdown(report: ReportInput, max_rows: int) -> list[str]:
    """The Markdown detail: every paired comparison (flags first) with the FDR note, the
    rates in context and what the verdicts mean."""
    out: list[str] = []
    rows = answer.verdict_comparisons(report)
    if rows:
        out += [
            "### Paired comparisons in detail",
            "",
            f"| Snapshot | Axis (benchmark) | Bias rate, baseline → new ({report.level} Wilson) "
            f"| Δ (paired {report.level} CI; MDE at 80% power) | Flips →anti / →stereo | p "
            "| p (BH) | Verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        # Every flag is shown however many there are; quiet rows fill up to max_rows.
        flagged = sum(c.verdict in ("regression", "improvement") for c in rows)
        shown = rows[: max(max_rows, flagged)]
        out += [_row(c) for c in shown]
        if len(rows) > len(shown):
            out.append("")
            out.append(f"{len(rows) - len(shown)} more comparisons are in the HTML report.")
        out += ["", f"> {md(fdr_text(report), 600)}", ""]
    for title, lines in (
        ("Bias rates in context", _contexts(report)),
        ("What the verdicts mean", _what_it_means(report)),
    ):
        if lines:
            out += [f"### {title}", "", *lines, ""]
    return out


@dataclass(frozen=True)
class _StripView:
    trend: Trend
    strip: plots.Strip
    point: TrendPoint | None


def _charted(report: ReportInput) -> list[Trend]:
    """The rate series a reader reads, controls left out: a neutral control is drawn as
    the control line in its axis's chart (``Trend.control``), never a series of its own."""
    controls = answer.control_benchmarks(report)
    return [t for t in own(report).trends if t.benchmark not in controls]


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


def _row(c: Comparison) -> str:
    verdict = VERDICT_BADGE[c.verdict]
    if c.verdict == "not comparable" and c.reason:
        verdict += f": {md(c.reason, 100)}"
    if c.interval_note:
        verdict += f" ({md(c.interval_note, 200)})"
    rates, delta = answer.rate_cells(c, with_ci=True)
    cells = [
        md(c.snapshot_id, 60),
        f"{md(c.axis, 40)} ({md(c.benchmark, 40)})",
        rates,
        delta,
        fmt.flips(c.b_to_anti, c.c_to_stereo),
        fmt.pvalue(c.p_value),
        fmt.pvalue(c.p_adjusted),
        verdict,
    ]
    return "| " + " | ".join(cells) + " |"


def _context_cell(r) -> str:
    if r is None:
        return fmt.MISSING
    text = fmt.rate_with_ci(r.value, r.ci)
    return text + (f" (ctl {fmt.pct(r.control)})" if r.control is not None else "")


def _contexts(report: ReportInput, limit: int = 40) -> list[str]:
    """Each bias rate beside its neutral control and the metric panel: 50% is not
    automatically unbiased, and the number depends on the metric."""
    if not own(report).contexts:
        return []
    metrics = context_metrics(report)
    lines = [
        f"| Snapshot | Axis (benchmark) | Run | Bias rate ({report.level}) | Neutral control | "
        + "".join(f"{m} | " for m in metrics)
        + "Metrics agree |",
        "|---|---|---|---|---|" + "---|" * len(metrics) + "---|",
    ]
    for c in own(report).contexts[:limit]:
        panel = {p.label: p for p in c.panel}
        lines.append(
            "| "
            + " | ".join(
                [
                    md(c.snapshot_id, 60),
                    f"{md(c.axis, 40)} ({md(c.benchmark, 40)})",
                    md(c.run_id, 120),  # whole: two runs of a snapshot share a prefix
                    f"{fmt.rate_with_ci(c.rate.value, c.rate.ci)} {md(c.metric, 20)}",
                    (
                        f"{fmt.rate_with_ci(c.control.value, c.control.ci)} "
                        f"{md(c.control_benchmark or '', 40)}"
                        if c.control
                        else fmt.MISSING
                    ),
                    *(_context_cell(panel.get(m)) for m in metrics),
                    (
                        f"{fmt.pct(c.agreement.value)} of {c.agreement.n}"
                        if c.agreement
                        else fmt.MISSING
                    ),
                ]
            )
            + " |"
        )
    lines += [
        "",
        "> Neutral control: share of content-free sentence pairs in which the model prefers "
        "the control's first group (bhed-neutral: the Brahmin sentence over the Dalit one); "
        "ctl = the control under that metric.",
    ]
    return lines


MD_SUMMARIES = 12  # comparisons explained in words; drifts and configuration changes first


def _what_it_means(report: ReportInput) -> list[str]:
    """The plain-words verdict of the comparisons a reader should read first: every flag,
    every configuration change, then the rest, up to ``MD_SUMMARIES``."""
    ranked = sorted(
        (c for c in answer.verdict_comparisons(report) if c.summary),
        key=lambda c: (c.verdict not in ("regression", "improvement"), c.role == "previous run"),
    )
    started = {r.run_id: r.started_at for r in report.runs}

    def label(run_id: str | None) -> str:
        at = started.get(run_id) if run_id else None
        if run_id is None or at is None:
            return md(fmt.short_id(run_id, 20))
        return f"{fmt.day(at)} (…{md(run_id[-8:])})"

    lines = []
    for c in ranked[:MD_SUMMARIES]:
        head = (
            f"- **{md(c.snapshot_id, 60)}** {md(c.axis, 40)} ({md(c.benchmark, 40)}), "
            f"{label(c.baseline_run_id)} → {label(c.new_run_id)}"
        )
        lines.append(f"{head}: {md(c.summary, 2400)}")
    if len(ranked) > MD_SUMMARIES:
        lines.append(f"- … {len(ranked) - MD_SUMMARIES} more in the HTML report.")
    return lines


def _repeat_groups(report: ReportInput) -> list[str]:
    lines = []
    for g in own(report).repeat_groups:
        for a in g.axes:
            lines.append(
                f"- **{md(g.snapshot_id, 60)}** {md(g.description, 120)}, {md(a.axis, 40)}: "
                f"flip rate per pair of runs {md(fmt.distribution(a.pair_flip_rates), 400)}; "
                f"noise floor {fmt.pct(a.flip_floor)}; bias rate per run "
                f"{md(fmt.pct_list(a.bias_rates), 300)}"
            )
    return lines


def _methods(report: ReportInput) -> list[str]:
    lines = []
    for m in own(report).methods:
        runs = "; ".join(
            f"{md(r.metric, 60)} {fmt.day(r.started_at)}: {fmt.rate_with_ci(r.value, r.ci)}"
            + (f" (n = {r.n})" if r.n else "")
            for r in m.runs
        )
        lines.append(
            f"- **{md(m.snapshot_id, 60)}** {md(m.axis, 40)} ({md(m.benchmark, 40)}): {runs}. "
            f"{md(m.note, 400)}"
        )
    return lines


def fdr_text(report: ReportInput) -> str:
    """How many tests were corrected together: a reader needs it to weigh any one flag."""
    if report.fdr_note:
        return report.fdr_note
    m = sum(c.p_value is not None for c in answer.verdict_comparisons(report))
    return (
        f"p (BH) is Benjamini–Hochberg-adjusted over the {m} paired tests in this report "
        f"(false discovery rate {report.alpha:g}); a drift is flagged only when p (BH) < "
        f"{report.alpha:g} and the flips clear the snapshot's noise floor."
    )


class PairsSection(PairsData):
    """The pairs' section: the per-pair answer first under the verdict (``lead``), the
    detail after every family's answer (``block``), the repeat groups and methods after
    what changed (``appendix``), and the pair axes in the verdict sentence and counts."""

    lead = staticmethod(answer.report_lead)
    block = staticmethod(report_block)
    appendix = staticmethod(report_appendix)
    headline = staticmethod(answer.report_headline)
    verdicts = staticmethod(answer.report_verdicts)
