"""Compare a run with its baseline, axis by axis, with paired tests and a verdict.

For each (benchmark, axis) the comparison pairs items by id, counts the items that
changed side, tests them with exact McNemar, controls the false discovery rate across
all axes with Benjamini–Hochberg, checks the flip rate against the snapshot's noise
floor and says what in the runs' provenance changed. It returns data (flipped item
ids included) and never prints: rendering is the report's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from monitor.drift.provenance_diff import ProvenanceDiff, diff_runs
from monitor.drift.stats import (
    NoiseFloor,
    PairedDifference,
    bh_adjust,
    count_flips,
    mcnemar_exact,
    noise_floor,
    paired_difference,
)
from monitor.drift.verdicts import MIN_ITEM_OVERLAP, Verdict, comparability, decide
from monitor.metrics.intervals import Rate, wilson_rate
from monitor.store.models import AxisKey, AxisOutcomes
from monitor.store.view import StoreView

ALPHA = 0.05  # false discovery rate of a drift session (Benjamini–Hochberg)
CONFIDENCE = 0.95  # level of every interval drift shows; not tied to ALPHA


@dataclass(frozen=True)
class AxisComparison:
    """One (benchmark, axis) of a new run against its baseline.

    ``rate_old``/``rate_new`` are each run's own bias rate (stereo among decided) over all
    its decided items; ``paired`` is the change over items decided in both. ``b``:
    stereo→anti flips, ``c``: anti→stereo. ``p_value`` is exact McNemar, ``p_adjusted``
    its Benjamini–Hochberg value within the family the comparison was adjusted in; both
    are None when the runs are not comparable.
    """

    benchmark: str
    axis: str
    new_run_id: str
    baseline_run_id: str
    items_new: int
    items_old: int
    items_both: int
    rate_old: Rate
    rate_new: Rate
    paired: PairedDifference
    flipped_to_anti: tuple[str, ...]
    flipped_to_stereo: tuple[str, ...]
    p_value: float | None
    p_adjusted: float | None
    noise: NoiseFloor | None
    verdict: Verdict
    provenance: ProvenanceDiff
    attribution: str

    @property
    def b(self) -> int:
        return len(self.flipped_to_anti)

    @property
    def c(self) -> int:
        return len(self.flipped_to_stereo)

    @property
    def n_paired(self) -> int:
        return self.paired.n

    @property
    def flip_rate(self) -> float | None:
        return (self.b + self.c) / self.paired.n if self.paired.n else None

    def adjusted(self, p_adjusted: float | None, alpha: float) -> AxisComparison:
        """This comparison with its BH-adjusted p (from whichever family it was adjusted
        in) and the verdict that follows; not-comparable axes keep theirs."""
        if self.p_value is None or p_adjusted is None:
            return replace(self, p_adjusted=None)
        verdict = decide(
            b=self.b,
            c=self.c,
            n_paired=self.n_paired,
            p_adjusted=p_adjusted,
            alpha=alpha,
            noise=self.noise,
        )
        return replace(self, p_adjusted=p_adjusted, verdict=verdict)


def _bias_rate(outcomes: Mapping[str, str], confidence: float) -> Rate:
    stereo = sum(1 for o in outcomes.values() if o == "stereo")
    decided = sum(1 for o in outcomes.values() if o in ("stereo", "anti"))
    return wilson_rate(stereo, decided, confidence)


def repeat_outcomes(view: StoreView, run_id: str) -> dict[AxisKey, list[dict[str, str]]]:
    """Outcomes of every complete run in ``run_id``'s repeat group (including itself).

    Empty when the run has no repeat group. Repeats share snapshot, metric and items by
    construction, so their disagreements are the measurement's own noise.
    """
    out: dict[AxisKey, list[dict[str, str]]] = {}
    for rid in view.repeat_group_runs(run_id):
        for key, axis in view.axis_outcomes(rid).items():
            out.setdefault(key, []).append(axis.outcomes)
    return out


def _noise_floors(
    view: StoreView, run_ids: Sequence[str], alpha: float
) -> dict[AxisKey, NoiseFloor]:
    """Noise floor per axis from the first of ``run_ids`` whose repeat group has ≥2 runs."""
    out: dict[AxisKey, NoiseFloor] = {}
    for rid in run_ids:
        for key, repeats in repeat_outcomes(view, rid).items():
            if key not in out and (floor := noise_floor(repeats, alpha)) is not None:
                out[key] = floor
    return out


def compare_runs(
    view: StoreView,
    new_run_id: str,
    baseline_run_id: str,
    *,
    alpha: float = ALPHA,
    confidence: float = CONFIDENCE,
    min_overlap: float = MIN_ITEM_OVERLAP,
    noise: Mapping[AxisKey, NoiseFloor] | None = None,
) -> list[AxisComparison]:
    """Paired comparison of ``new_run_id`` with ``baseline_run_id`` on every axis of either run.

    ``alpha`` is the false discovery rate for the verdicts; ``confidence`` the level of
    the rate and difference intervals. BH is applied across the axes returned here. A
    report that compares several snapshots must call ``adjust_family`` once over all
    their comparisons, so that the false discovery rate is controlled over everything
    it shows.

    ``noise`` overrides the noise floors; by default they are measured from the new
    run's repeat group, else the baseline's (axes with neither have no floor).
    """
    new, old = view.run(new_run_id), view.run(baseline_run_id)
    provenance = diff_runs(old.fields, new.fields)
    pinned_local = (
        new.origin == old.origin == "local" and new.snapshot_revision == old.snapshot_revision
    )
    attribution = provenance.attribution(pinned_local=pinned_local)
    floors = (
        dict(noise)
        if noise is not None
        else _noise_floors(view, [new_run_id, baseline_run_id], alpha)
    )
    axes_new, axes_old = view.axis_outcomes(new_run_id), view.axis_outcomes(baseline_run_id)
    empty = AxisOutcomes()
    comparisons: list[AxisComparison] = []
    for key in sorted(set(axes_new) | set(axes_old)):
        a_new, a_old = axes_new.get(key, empty), axes_old.get(key, empty)
        flips = count_flips(a_old.outcomes, a_new.outcomes)
        paired = paired_difference(flips.both_stereo, flips.b, flips.c, flips.both_anti, confidence)
        blocked = comparability(
            metric_old=(old.metric, old.metric_version),
            metric_new=(new.metric, new.metric_version),
            versions_old=a_old.benchmark_versions,
            versions_new=a_new.benchmark_versions,
            items_old=len(a_old.outcomes),
            items_new=len(a_new.outcomes),
            items_both=flips.n_overlap,
            n_paired=flips.n_paired,
            min_overlap=min_overlap,
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
                p_value=None if blocked else mcnemar_exact(flips.b, flips.c),
                p_adjusted=None,
                noise=floors.get(key),
                verdict=blocked or Verdict("no significant change", "not yet adjusted"),
                provenance=provenance,
                attribution=attribution,
            )
        )
    return adjust_family(comparisons, alpha=alpha)


def adjust_family(
    comparisons: Sequence[AxisComparison], *, alpha: float = ALPHA
) -> list[AxisComparison]:
    """BH-adjust the McNemar p-values of all ``comparisons`` together and redo their verdicts.

    Not-comparable axes (p_value None) are left out of the family and keep their verdict.
    """
    adjusted = bh_adjust([c.p_value for c in comparisons], alpha)
    return [c.adjusted(p, alpha) for c, p in zip(comparisons, adjusted, strict=True)]
