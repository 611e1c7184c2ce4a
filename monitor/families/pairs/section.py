"""The sentence-pair family's fields of the report: its ``report_input`` hook.

Drift's per-axis comparisons (``AxisComparison``) become the report's ``Comparison``
models, with each compared run's bias rates in context (the neutral control, the metric
panel), the bias rate over time per snapshot × axis with repeat groups and configuration
breaks, and the method comparisons of those series. Built from the typed read models
(``readmodel.reader``), never the store; the report renders these fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from monitor.drift.compare import AxisComparison
from monitor.metrics.context import score_contexts
from monitor.readmodel.reader import RunReader
from monitor.report.history import (
    SafeTexts,
    method_comparisons,
    quarantined_runs,
    repeat_groups,
    series_trend,
)
from monitor.report.input import interval_of, series_columns
from monitor.report.model import (
    Comparison,
    ConfigurationChange,
    ContextRate,
    ControlBeside,
    DeltaTestSummary,
    NoiseSide,
    ScoreContext,
    Trend,
)


def report_input(
    view: RunReader,
    comparisons: Sequence[Any],
    *,
    since: datetime | None,
    flags: dict[tuple[str, str, str], str],
    new_runs: Sequence[str],
    with_flips: bool = False,
) -> dict[str, Any]:
    """The ``report_input`` hook: the pairs' fields of ``ReportInput`` (``comparisons``,
    ``contexts``, ``trends``, ``repeat_groups``, ``methods``). ``with_flips``: each
    comparison lists the ids of the items whose answer moved (``--show-flips``)."""
    axes = [c for c in comparisons if isinstance(c, AxisComparison)]
    meta = view.runs(c.new_run_id for c in axes)
    comps = [
        comparison_model(c, meta[c.new_run_id].metric, with_flips=with_flips).model_copy(
            update={"snapshot_id": meta[c.new_run_id].snapshot_id}
        )
        for c in axes
    ]
    compared = [r for c in axes for r in (c.new_run_id, c.baseline_run_id)]
    series = trends(view, since, flags)
    latest = [t.points[-1].run_id for t in series if t.points]
    view.prefetch_measures([*compared, *latest, *new_runs])
    contexts = score_contexts_of(view, compared + latest, _controls())
    snapshots = sorted({t.snapshot_id for t in series} | {c.snapshot_id for c in comps})
    return {
        "comparisons": tuple(comps),
        "contexts": tuple(contexts),
        "trends": tuple(_with_controls(series, contexts)),
        "repeat_groups": tuple(g for s in snapshots for g in repeat_groups(view, s, since)),
        "methods": tuple(method_comparisons(view, series)),
    }


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
