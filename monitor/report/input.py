"""Drift's findings in the report's own shapes: the ``ReportInput`` the renderers take.

Built in the report room (drift does not know the report exists): besides drift's
comparisons it reads what the report shows (history, quality results, the run list)
through the typed reading protocol (``readmodel.reader``); the renderers (``markdown``,
``html``, ``json_out``) only render the ``ReportInput`` built here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from monitor.drift.compare import AxisComparison
from monitor.drift.provenance_diff import ProvenanceDiff as RunsDiff
from monitor.drift.provenance_diff import diff_runs
from monitor.drift.session import DriftResult
from monitor.metrics.context import score_contexts
from monitor.metrics.families import FAMILIES
from monitor.readmodel.models import TrendSeries
from monitor.readmodel.reader import RunReader
from monitor.report.history import (
    SafeTexts,
    SeriesColumns,
    method_comparisons,
    quarantined_runs,
    repeat_groups,
    series_trend,
)
from monitor.report.model import (
    Comparison,
    ConfigurationChange,
    ContextRate,
    ControlBeside,
    DeltaTestSummary,
    NoiseSide,
    ProvenanceChange,
    ProvenanceDiff,
    QualityResult,
    ReportInput,
    RunSummary,
    ScoreContext,
    Trend,
    UnscoredAxis,
)


def interval_of(lo, hi):
    """A stored interval as the report's pair, None where either end is missing."""
    return None if lo is None or hi is None else (lo, hi)


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
    return DeltaTestSummary(
        method=t.method,
        n_items=t.n_items,
        n_clusters=t.n_clusters,
        mean_shift=t.mean_shift,
        ci=interval_of(t.ci_low, t.ci_high),
        p_value=t.p_value,
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
        flagged=c.flagged,
        control=ControlBeside(
            benchmark=c.control.benchmark,
            axis=c.control.axis,
            rate_old=c.control.rate_old.value,
            rate_new=c.control.rate_new.value,
        )
        if c.control is not None
        else None,
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
        **_noise_fields(c),
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


def series_columns(
    s: TrendSeries,
    flags: dict[tuple[str, str, str], str],
    groups: Sequence[str | None],
    safe: SafeTexts,
) -> SeriesColumns:
    """A stored series as a trend's columns, with drift's flags and configuration keys;
    ``safe`` makes the texts of its kept points safe to show (shared by the series)."""
    size = len(s.run_ids)
    return SeriesColumns(
        run_ids=s.run_ids,
        started_at=s.started_at,
        statuses=("complete",) * size,
        values=s.values,
        ci_lows=s.ci_lows,
        ci_highs=s.ci_highs,
        ns=[n or 0 for n in s.ns],
        flagged=_flagged(s, flags),
        groups=groups,
        runs=(1,) * size,
        first_run_ids=(None,) * size,
        safe=safe,
    )


def _flagged(s: TrendSeries, flags: dict[tuple[str, str, str], str]) -> Sequence[str | None]:
    """Drift's flag of each run of the series: a report flags a few dozen (run, axis)
    pairs among a year's ~150k points, so a series with none is not looked up run by run."""
    if not any(b == s.benchmark and a == s.axis for _, b, a in flags):
        return (None,) * len(s.run_ids)
    return [flags.get((r, s.benchmark, s.axis)) for r in s.run_ids]


def quality_results(view: RunReader, since: datetime | None) -> list[QualityResult]:
    out = []
    for v in view.latest_validations(since):
        failures = tuple(
            str(f.get("reason", f)) if isinstance(f, dict) else str(f)
            for f in v.results.get("failures", [])
        )
        out.append(
            QualityResult(run_id=v.run_id, suite=v.suite, success=v.success, failures=failures)
        )
    return out


def run_summaries(
    view: RunReader, since: datetime | None, named: set[str]
) -> tuple[list[RunSummary], int]:
    """The runs a report lists (every run that is not complete, and the complete runs
    it names), and how many runs of the window it leaves out: a year's history is
    thousands of complete runs, so only the listed ones become models."""
    every = view.runs_since(since)
    return [
        RunSummary(
            run_id=r.run_id,
            snapshot_id=r.snapshot_id,
            started_at=r.started_at,
            status=r.status,
            metric=r.metric,
            reason=r.notes if r.status != "complete" else None,
        )
        for r in every
        if r.status != "complete" or r.run_id in named
    ], len(every)


def _controls() -> dict[str, tuple[str, ...]]:
    """Benchmark -> its neutral controls (the manifest's ``controls``); none if the manifest
    cannot be read, so a report on an old store still renders."""
    from monitor.drift.controls import manifest_controls

    return manifest_controls()


def _context_rate(label: str, r, control=None) -> ContextRate:
    return ContextRate(
        label=label,
        value=r.value,
        ci=interval_of(r.ci_low, r.ci_high),
        k=r.k,
        n=r.n,
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
                ScoreContext(
                    run_id=rid,
                    snapshot_id=run.snapshot_id,
                    benchmark=c.benchmark,
                    axis=c.axis,
                    metric=c.metric,
                    rate=_context_rate(c.metric, c.rate),
                    control_benchmark=c.control_benchmark,
                    control=_context_rate(c.control_benchmark or "", c.control)
                    if c.control
                    else None,
                    panel=tuple(
                        _context_rate(m, r, c.control_panel.get(m)) for m, r in c.panel.items()
                    ),
                    agreement=_context_rate("all three metrics agree", c.agreement)
                    if c.agreement
                    else None,
                )
            )
    return out


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


def _family_fields(
    view: RunReader,
    result: DriftResult,
    *,
    since: datetime | None,
    flags: dict[tuple[str, str, str], str],
    new_runs: list[str],
) -> dict[str, object]:
    """The ``ReportInput`` fields that folder families fill themselves (``report_input``
    hook: the association tests' tests, changes and trends)."""
    fields: dict[str, object] = {}
    for family in FAMILIES.values():
        hook = family.hook("report_input")
        if hook is not None:
            fields |= hook(
                view, result.of_family(family.name), since=since, flags=flags, new_runs=new_runs
            )
    return fields


def _provenance(snapshot_id: str, c, diff: RunsDiff) -> ProvenanceDiff:
    """The report's model of what differs between comparison ``c``'s two runs."""
    return ProvenanceDiff(
        snapshot_id=snapshot_id,
        baseline_run_id=c.baseline_run_id,
        new_run_id=c.new_run_id,
        attribution=c.attribution,
        changes=tuple(
            ProvenanceChange(field=f.field, old=f.old, new=f.new, category=f.category)
            for f in diff.changes
        ),
    )


def build_report_input(
    view: RunReader,
    result: DriftResult,
    *,
    title: str,
    since: datetime | None,
    with_flips: bool = False,
) -> ReportInput:
    # Pair axes, and the comparisons of folder families in their own type (association
    # tests), carry the provenance diff of their runs; both can be flagged in the trends.
    own = result.own_types
    meta = view.runs(c.new_run_id for c in [*result.axes, *own])
    comps, diffs, flags = [], {}, {}
    for c in [*result.axes, *own]:
        m = meta[c.new_run_id]
        if isinstance(c, AxisComparison):
            model = comparison_model(c, m.metric, with_flips=with_flips)
            comps.append(model.model_copy(update={"snapshot_id": m.snapshot_id}))
        if c.verdict.flagged:
            flags[(c.new_run_id, c.benchmark, c.axis)] = f"{c.verdict.label}: {c.verdict.reason}"
        key = (c.baseline_run_id, c.new_run_id)
        if key not in diffs:
            diffs[key] = _provenance(m.snapshot_id, c, c.provenance)
    # Drift's generic comparisons carry the attribution only: their runs' diff is read
    # here, one per pair of runs, so every family's pair says what else changed.
    generic = [
        c for c in result.family_comparisons if (c.baseline_run_id, c.new_run_id) not in diffs
    ]
    generic_runs = view.runs({r for c in generic for r in (c.new_run_id, c.baseline_run_id)})
    for c in generic:
        key = (c.baseline_run_id, c.new_run_id)
        if key not in diffs:
            new, old = generic_runs[c.new_run_id], generic_runs[c.baseline_run_id]
            diffs[key] = _provenance(new.snapshot_id, c, diff_runs(old.fields, new.fields))
    snapshot_of = {p.new_run_id: p.snapshot_id for p in result.pairs}
    unscored = tuple(
        UnscoredAxis(
            snapshot_id=snapshot_of.get(u.new_run_id, ""),
            new_run_id=u.new_run_id,
            baseline_run_id=u.baseline_run_id,
            benchmark=u.benchmark,
            axis=u.axis,
            missing=u.missing,
        )
        for u in result.unscored
    )
    notes = [
        f"{p.snapshot_id}: run {p.new_run_id} has no baseline ({p.reason})"
        for p in result.pairs
        if p.baseline_run_id is None
    ]
    notes += [
        f"{s}: noise floor measured from {'; '.join(groups)}"
        for s, groups in sorted(result.noise_sources.items())
    ]
    controls = _controls()
    compared = [r for c in result.axes for r in (c.new_run_id, c.baseline_run_id)]
    series = trends(view, since, flags)
    latest = [t.points[-1].run_id for t in series if t.points]
    new_runs = [p.new_run_id for p in result.pairs]
    view.prefetch_measures([*compared, *latest, *new_runs])
    contexts = score_contexts_of(view, compared + latest, controls)
    snapshots = sorted({t.snapshot_id for t in series} | {c.snapshot_id for c in comps})
    named = set(compared) | {r for c in own for r in (c.new_run_id, c.baseline_run_id)}
    named |= {r for c in result.family_comparisons for r in (c.new_run_id, c.baseline_run_id)}
    runs, n_runs = run_summaries(view, since, named)
    all_quality = quality_results(view, since)
    quality = [q for q in all_quality if not q.success or q.run_id in named]
    return ReportInput(
        title=title,
        generated_at=datetime.now(UTC),
        since=since,
        comparisons=tuple(comps),
        unscored=unscored,
        contexts=tuple(contexts),
        trends=tuple(_with_controls(series, contexts)),
        provenance=tuple(diffs.values()),
        quality=tuple(quality),
        runs=tuple(runs),
        runs_not_listed=n_runs - len(runs),
        quality_not_listed=len(all_quality) - len(quality),
        notes=tuple(notes),
        repeat_groups=tuple(g for s in snapshots for g in repeat_groups(view, s, since)),
        methods=tuple(method_comparisons(view, series)),
        fdr_note=result.fdr_note(),
        **_family_fields(view, result, since=since, flags=flags, new_runs=new_runs),
        family_comparisons=tuple(result.family_comparisons),
        alpha=result.alpha,
        confidence=result.confidence,
    )
