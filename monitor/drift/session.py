"""One drift session: choose which runs to compare, compare them, control the FDR once.

The CLI's ``drift`` and ``report`` commands both go through here, so the verdicts a pull
request gates on are exactly the ones the report shows. Everything is read through a
``StoreView`` (typed models, no SQL here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from monitor.drift.compare import (
    ALPHA,
    CONFIDENCE,
    AxisComparison,
    compare_runs,
    repeat_outcomes,
)
from monitor.drift.effect_size import EffectComparison, compare_effect_sizes
from monitor.drift.stats import NoiseFloor, bh_adjust, noise_floor
from monitor.errors import UserInputError
from monitor.metrics.registry import get_metric
from monitor.store.models import AxisKey
from monitor.store.view import StoreView

# How two runs of each kind of result are compared (``ResultFamily.comparison``). A new
# kind of result registers its comparator here; see ARCHITECTURE.md.
COMPARATORS = {
    "paired-flips": compare_runs,
    "effect-size-difference": compare_effect_sizes,
}


@dataclass(frozen=True)
class Pair:
    new_run_id: str
    baseline_run_id: str | None
    snapshot_id: str
    reason: str | None = None  # why there is no baseline


@dataclass
class DriftResult:
    pairs: list[Pair]
    comparisons: list[AxisComparison] = field(default_factory=list)
    # Association tests (effect sizes), adjusted in the same BH family as the pairs.
    effect_sizes: list[EffectComparison] = field(default_factory=list)
    noise_sources: dict[str, str] = field(default_factory=dict)  # snapshot → repeat group used
    alpha: float = ALPHA
    confidence: float = CONFIDENCE

    @property
    def regressions(self) -> list[AxisComparison | EffectComparison]:
        every = [*self.comparisons, *self.effect_sizes]
        return [c for c in every if c.verdict.label == "regression"]

    def fdr_note(self) -> str:
        every = [*self.comparisons, *self.effect_sizes]
        tested = sum(1 for c in every if c.p_value is not None)
        return (
            f"p (BH) is Benjamini–Hochberg-adjusted over the {tested} paired tests in this "
            f"report (false discovery rate {self.alpha:g}); a drift is flagged only when "
            "p (BH) < the false discovery rate and the flip rate exceeds the snapshot's "
            f"noise floor. Intervals are {self.confidence:.0%}."
        )


def select_pairs(
    view: StoreView,
    *,
    run_ids: Sequence[str] = (),
    snapshots: Sequence[str] = (),
    baseline: str | None = None,
    baseline_snapshot: str | None = None,
) -> list[Pair]:
    """Which new runs to compare with which baselines.

    Default: every snapshot's latest complete run against the previous complete run of the
    same snapshot. ``baseline`` fixes the baseline run; ``baseline_snapshot`` compares with
    another snapshot's latest complete run (the pull-request case: new model vs current).
    Run ids may be given as unique prefixes, as ``show`` takes them.
    """
    if run_ids:
        news = [view.resolve_run(r).run_id for r in run_ids]
    else:
        snaps = list(snapshots) or view.snapshots_with_complete_runs()
        news = []
        for s in snaps:
            rid = view.latest_complete(s)
            if rid is None:
                raise UserInputError(f"snapshot {s!r} has no complete run in the store")
            news.append(rid)
    if baseline is not None and len(news) != 1:
        raise UserInputError("--baseline needs exactly one new run (use --run RUN_ID)")
    pairs: list[Pair] = []
    for rid in news:
        row = view.run(rid)
        if row.status == "quarantined":
            raise UserInputError(f"run {rid} is quarantined and cannot be compared")
        if baseline is not None:
            base: str | None = view.resolve_run(baseline).run_id
        elif baseline_snapshot is not None:
            base = view.latest_complete(baseline_snapshot)
            if base is None:
                raise UserInputError(f"snapshot {baseline_snapshot!r} has no complete run")
        else:
            base = view.default_baseline(rid)
        pairs.append(Pair(rid, base, row.snapshot_id, None if base else _why_none(view, rid)))
    return pairs


def _why_none(view: StoreView, run_id: str) -> str:
    """Why a run has no baseline, truthfully: the only earlier runs of a repeat group are
    its own repeats, which measure the noise floor and are never its baseline."""
    repeats = [r for r in view.repeat_group_runs(run_id) if r != run_id]
    if repeats:
        return (
            f"no complete run outside its repeat group; its {len(repeats)} repeat(s) in the "
            "same command measure the noise floor instead of serving as a baseline"
        )
    return "no earlier complete run of this snapshot"


def snapshot_noise(
    view: StoreView, snapshot_id: str, alpha: float
) -> tuple[str | None, dict[AxisKey, NoiseFloor]]:
    """Noise floor per axis from the snapshot's latest repeat group with ≥2 complete runs.

    The repeats are stored runs, so the floor is recomputed from stored data, never guessed.
    """
    group = view.latest_repeat_group(snapshot_id)
    if group is None:
        return None, {}
    floors: dict[AxisKey, NoiseFloor] = {}
    for key, repeats in repeat_outcomes(view, group[1]).items():
        if (floor := noise_floor(repeats, alpha)) is not None:
            floors[key] = floor
    return group[0], floors


def run_drift(
    view: StoreView,
    pairs: Sequence[Pair],
    *,
    alpha: float = ALPHA,
    confidence: float = CONFIDENCE,
) -> DriftResult:
    """Compare every pair, then BH-adjust across all snapshot × axis tests together
    (pair axes and association tests in one family)."""
    result = DriftResult(pairs=list(pairs), alpha=alpha, confidence=confidence)
    comps: list = []
    for p in pairs:
        if p.baseline_run_id is None:
            continue
        family = get_metric(view.run(p.new_run_id).metric).family
        compare = COMPARATORS.get(family.comparison)
        if compare is None:
            raise UserInputError(
                f"run {p.new_run_id}: no drift comparator for {family.name} results"
            )
        group, floors = snapshot_noise(view, p.snapshot_id, alpha)
        if group:
            result.noise_sources[p.snapshot_id] = group
        comps += compare(
            view,
            p.new_run_id,
            p.baseline_run_id,
            alpha=alpha,
            confidence=confidence,
            noise=floors or None,
        )
    adjusted = bh_adjust([c.p_value for c in comps], alpha)
    every = [c.adjusted(p, alpha) for c, p in zip(comps, adjusted, strict=True)]
    result.comparisons = [c for c in every if isinstance(c, AxisComparison)]
    result.effect_sizes = [c for c in every if isinstance(c, EffectComparison)]
    return result
