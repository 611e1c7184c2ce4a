"""The pair family's drift comparator: a run against its baseline, axis by axis.

For each (benchmark, axis) the comparison pairs items by id, counts the items that
changed side, tests them with exact McNemar, controls the false discovery rate across
all axes with Benjamini–Hochberg, checks the flip rate and the rate change against the
noise of the runs' repeat groups (``monitor.drift.noise``), says what the comparison
could have detected (``monitor.drift.power``), widens its interval where items share a
template (``monitor.drift.clusters``), adds a paired test on continuous per-item scores
where the metric has them (``monitor.drift.deltas``), and says what in the runs'
provenance and measurement configuration changed. It returns data (flipped item ids
included) and never prints: rendering is the report's job.

The ``compare`` and ``unscored`` hooks of ``spec.PAIR_OUTCOME``; the session
(``monitor.drift.session``) calls them as it calls every family's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from monitor.contract.capabilities import CompareRequest
from monitor.drift.clusters import ClusterSummary, design_effect, widen
from monitor.drift.compare import (
    UnscoredAxis,
    adjust_family,
    with_sign_flips,
)
from monitor.drift.controls import controlled_by, manifest_controls
from monitor.drift.deltas import DeltaTest, SignFlipBatch, paired_delta_test
from monitor.drift.noise import NoiseBook
from monitor.drift.power import DetectableChange, mcnemar_mde
from monitor.drift.provenance_diff import diff_runs
from monitor.drift.stats import (
    Flips,
    PairedDifference,
    count_flips,
    mcnemar_exact,
    paired_difference,
)
from monitor.drift.verdicts import MIN_ITEM_OVERLAP, Verdict, between_runs
from monitor.families.pairs.balanced import NOT_SEPARABLE, directions
from monitor.families.pairs.balanced_change import BalancedChange, balanced_change
from monitor.families.pairs.comparison import AxisComparison, ControlRates, test_key
from monitor.families.pairs.explain import explain
from monitor.families.pairs.panel_check import Change, ChangeOf, PanelCheck, raw_change
from monitor.metrics.intervals import Rate, wilson_rate
from monitor.metrics.registry import METRICS
from monitor.readmodel.configuration import describe_changes, measurement_configuration
from monitor.readmodel.models import AxisKey, AxisOutcomes
from monitor.store.view import StoreView


def _bias_rate(outcomes: Mapping[str, str], confidence: float) -> Rate:
    stereo = sum(1 for o in outcomes.values() if o == "stereo")
    decided = sum(1 for o in outcomes.values() if o in ("stereo", "anti"))
    return wilson_rate(stereo, decided, confidence)


def _paired_extras(
    flips: Flips,
    a_old: AxisOutcomes,
    a_new: AxisOutcomes,
    paired: PairedDifference,
    *,
    alpha: float,
    confidence: float,
    continuous: bool,
    sign_flips: SignFlipBatch,
    key: tuple[str, str, AxisKey],
) -> tuple[tuple[float, float] | None, ClusterSummary, DetectableChange, DeltaTest | None]:
    """The cluster-aware interval (None when no template holds two paired items), the
    MDE and the delta test of one axis (its p left to ``sign_flips`` under ``key``)."""
    d = {i: 0 for i in _decided_both(a_old.outcomes, a_new.outcomes)}
    d.update({i: -1 for i in flips.to_anti})
    d.update({i: 1 for i in flips.to_stereo})
    templates = {**a_old.templates, **a_new.templates}
    clusters = design_effect(d, templates)
    clustered: tuple[float, float] | None = None
    if clusters.design_effect > 1 and paired.delta is not None:
        assert paired.ci_low is not None and paired.ci_high is not None
        clustered = widen(paired.delta, paired.ci_low, paired.ci_high, clusters.design_effect)
    detectable = mcnemar_mde(
        flips.n_paired, flips.b, flips.c, alpha=alpha, design_effect=clusters.design_effect
    )
    delta_test = (
        paired_delta_test(
            a_old.deltas,
            a_new.deltas,
            templates,
            confidence=confidence,
            sign_flips=sign_flips,
            key=key,
        )
        if continuous
        else None
    )
    return clustered, clusters, detectable, delta_test


def _decided_both(old: Mapping[str, str], new: Mapping[str, str]) -> list[str]:
    decided = ("stereo", "anti")
    return [i for i in old if i in new and old[i] in decided and new[i] in decided]


def compare_runs(request: CompareRequest) -> list[AxisComparison]:
    """Paired comparison of the request's new run with its baseline on every axis both
    scored.

    Axes only one run scored are no comparison (see :func:`unscored_axes`), and their
    dataset versions are left out of the provenance diff and the configuration changes:
    a caste comparison does not say "the benchmark version changed" because the baseline
    also scored gender. Controls (``controls``: benchmark → its control benchmarks, by
    default the manifest's) are never compared: each is attached to the comparison of
    the axis it controls (``AxisComparison.control``).

    ``alpha`` is the false discovery rate for the verdicts; ``confidence`` the level of
    the rate and difference intervals. BH is applied across the axes returned here. A
    report that compares several snapshots must call ``adjust_family`` once over all
    their comparisons, so that the false discovery rate is controlled over everything
    it shows.

    The noise contexts come from the runs' repeat groups (``drift.noise``; the request's
    ``noise_book`` shares its reads across a session).

    ``sign_flips``: a session's batch for the delta tests' p-values; the comparisons come
    back with those p-values still NaN, for :func:`with_sign_flips` once every pair is
    compared. Without it the comparisons are complete.
    """
    view, alpha, confidence = request.view, request.alpha, request.confidence
    new_run_id, baseline_run_id, role = request.new_run_id, request.baseline_run_id, request.role
    new, old = view.run(new_run_id), view.run(baseline_run_id)
    axes_new, axes_old = view.axis_outcomes(new_run_id), view.axis_outcomes(baseline_run_id)
    controls = request.controls
    control_of = controlled_by(manifest_controls() if controls is None else controls)
    both = sorted(set(axes_new) & set(axes_old))
    shared = {bench for bench, _ in both}
    old_fields, new_fields = _scored_in(old.fields, shared), _scored_in(new.fields, shared)
    provenance = diff_runs(old_fields, new_fields)
    pinned_local = (
        new.origin == old.origin == "local" and new.snapshot_revision == old.snapshot_revision
    )
    attribution = provenance.attribution(pinned_local=pinned_local)
    contexts = (request.noise_book or NoiseBook(view, alpha=alpha)).for_pair(new, old)
    changes = tuple(
        describe_changes(
            measurement_configuration(old_fields), measurement_configuration(new_fields)
        )
    )
    spec = METRICS.get(new.metric)
    continuous = new.metric == old.metric and spec is not None and "delta" in spec.numbers.required
    empty = AxisOutcomes()
    sign_flips = request.sign_flips
    batch = sign_flips if sign_flips is not None else SignFlipBatch()
    # The same change under the panel's other metrics, for each axis's robustness label.
    panel = PanelCheck.of(view, new, old, confidence=confidence)
    comparisons: list[AxisComparison] = []
    for key in both:
        if key[0] in control_of:
            continue  # read beside the axis it controls, below
        a_new, a_old = axes_new.get(key, empty), axes_old.get(key, empty)
        flips = count_flips(a_old.outcomes, a_new.outcomes)
        paired = paired_difference(flips.both_stereo, flips.b, flips.c, flips.both_anti, confidence)
        blocked = between_runs(
            old,
            new,
            (a_old.benchmark_versions, a_new.benchmark_versions),
            (len(a_old.outcomes), len(a_new.outcomes), flips.n_overlap),
            flips.n_paired,
            MIN_ITEM_OVERLAP,
        )
        clustered, clusters, detectable, delta_test = _paired_extras(
            flips,
            a_old,
            a_new,
            paired,
            alpha=alpha,
            confidence=confidence,
            continuous=continuous and not blocked,
            sign_flips=batch,
            key=test_key(new_run_id, baseline_run_id, key),
        )
        context = contexts.get(key)
        balanced, balanced_note, change_of = (
            (None, None, raw_change)
            if blocked
            else _balanced(view, a_old, a_new, confidence=confidence, alpha=alpha, raw=paired)
        )
        comparisons.append(
            AxisComparison(
                benchmark=key[0],
                axis=key[1],
                new_run_id=new_run_id,
                baseline_run_id=baseline_run_id,
                items_new=len(a_new.outcomes),
                items_old=len(a_old.outcomes),
                items_both=flips.n_overlap,
                rate_old=_bias_rate(a_old.outcomes, confidence),
                rate_new=_bias_rate(a_new.outcomes, confidence),
                paired=paired,
                flipped_to_anti=flips.to_anti,
                flipped_to_stereo=flips.to_stereo,
                p_value=None
                if blocked
                else balanced.p_value
                if balanced
                else mcnemar_exact(flips.b, flips.c),
                p_adjusted=None,
                noise=context.floor if context else None,
                verdict=blocked or Verdict("no significant change", "not yet adjusted"),
                provenance=provenance,
                attribution=attribution,
                noise_context=context,
                detectable=None if blocked else balanced.detectable if balanced else detectable,
                clusters=clusters,
                delta_ci_clustered=clustered,
                delta_test=delta_test,
                configuration_changes=changes,
                role=role,
                started_old=old.started_at,
                started_new=new.started_at,
                control=_control_rates(key[0], control_of, axes_old, axes_new, confidence),
                balanced=balanced,
                balanced_note=balanced_note,
                raw_p_value=None if blocked else mcnemar_exact(flips.b, flips.c),
                # Read across the panel on the quantity the verdict tests (balanced or raw).
                robustness=None
                if blocked
                else replace(panel, change=change_of).robustness(key, a_old, a_new),
            )
        )
    adjusted = adjust_family(comparisons, alpha=alpha)
    return adjusted if sign_flips is not None else with_sign_flips(adjusted, batch)


def _balanced(
    view: StoreView,
    a_old: AxisOutcomes,
    a_new: AxisOutcomes,
    *,
    confidence: float,
    alpha: float,
    raw: PairedDifference,
) -> tuple[BalancedChange | None, str | None, ChangeOf]:
    """The axis's balanced change, or None and why not where its stereotypes name fewer
    than two groups with enough paired items (the groups come from the items' stereotyped
    targets); (None, None) for axes of other kinds of item (identity pairs). The third
    value is the change the panel's other metrics are read on: the balanced change with
    the same directions and templates where the axis has one, else the raw change."""
    ids = set(a_old.outcomes) & set(a_new.outcomes)
    pairs = [it for it in view.items(ids).values() if it.kind == "pair"]
    if not pairs:
        return None, None, raw_change
    direction = directions(pairs)
    templates = {**a_old.templates, **a_new.templates}
    change = balanced_change(
        a_old.outcomes,
        a_new.outcomes,
        direction,
        templates,
        confidence=confidence,
        alpha=alpha,
        raw_delta=raw.delta,
    )
    if change is None:
        return None, NOT_SEPARABLE, raw_change
    return change, None, partial(_balanced_reading, direction=direction, templates=templates)


def _balanced_reading(
    old: AxisOutcomes,
    new: AxisOutcomes,
    confidence: float,
    *,
    direction: Mapping[str, str],
    templates: Mapping[str, str],
) -> Change:
    """One panel metric's balanced change on the axis, for the robustness label: the same
    directions and templates as the verdict's own, so the metrics read one quantity."""
    change = balanced_change(
        old.outcomes, new.outcomes, direction, templates, confidence=confidence
    )
    if change is None:
        return Change(None, None, None, 0)
    return Change(change.delta, change.ci_low, change.ci_high, change.n_paired)


def _control_rates(
    benchmark: str,
    control_of: Mapping[str, str],
    axes_old: Mapping[AxisKey, AxisOutcomes],
    axes_new: Mapping[AxisKey, AxisOutcomes],
    confidence: float,
) -> ControlRates | None:
    """The rates of ``benchmark``'s control in both runs; None when neither scored one."""
    empty = AxisOutcomes()
    for key in sorted(set(axes_old) | set(axes_new)):
        if control_of.get(key[0]) == benchmark:
            return ControlRates(
                benchmark=key[0],
                axis=key[1],
                rate_old=_bias_rate(axes_old.get(key, empty).outcomes, confidence),
                rate_new=_bias_rate(axes_new.get(key, empty).outcomes, confidence),
            )
    return None


def _scored_in(fields: Mapping[str, Any], benchmarks: set[str]) -> dict[str, Any]:
    """A run's provenance with its benchmark list and dataset versions cut to
    ``benchmarks`` (those both runs of a pair scored), so what only one run scored is
    never read as a change of the other's."""
    out = dict(fields)
    versions = out.get("dataset_versions")
    if isinstance(versions, str):
        versions = json.loads(versions)
    if isinstance(versions, Mapping):
        out["dataset_versions"] = {b: v for b, v in versions.items() if b in benchmarks}
    listed = out.get("benchmarks")
    if isinstance(listed, list | tuple):
        out["benchmarks"] = [b for b in listed if b in benchmarks]
    return out


def unscored_axes(request: CompareRequest) -> list[UnscoredAxis]:
    """The axes only one run of the request's pair scored (controls left out: they are
    never an axis of their own), in (benchmark, axis) order."""
    view, controls = request.view, request.controls
    new_run_id, baseline_run_id = request.new_run_id, request.baseline_run_id
    axes_new, axes_old = view.axis_outcomes(new_run_id), view.axis_outcomes(baseline_run_id)
    control_of = controlled_by(manifest_controls() if controls is None else controls)
    return [
        UnscoredAxis(
            benchmark=key[0],
            axis=key[1],
            new_run_id=new_run_id,
            baseline_run_id=baseline_run_id,
            missing="new" if key in axes_old else "baseline",
        )
        for key in sorted(set(axes_new) ^ set(axes_old))
        if key[0] not in control_of
    ]


def explained(
    comparisons: Sequence[AxisComparison], *, alpha: float, n_tests: int
) -> list[AxisComparison]:
    """The family's ``explain`` hook: each axis comparison with its verdict in plain words
    (``explain``), written once the drift session has counted its tests, which the
    paragraph cites ("0.19 after the Benjamini–Hochberg correction for the report's 5
    tests")."""
    return [replace(c, summary=explain(c, alpha=alpha, n_tests=n_tests)) for c in comparisons]
