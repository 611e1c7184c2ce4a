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

import duckdb

from monitor.drift import inputs
from monitor.drift.provenance_diff import ProvenanceDiff, diff_runs
from monitor.drift.stats import (
    NoiseFloor,
    PairedDifference,
    Rate,
    bh_adjust,
    count_flips,
    mcnemar_exact,
    noise_floor,
    paired_difference,
    wilson,
)
from monitor.drift.verdicts import MIN_ITEM_OVERLAP, Verdict, comparability, decide

ALPHA = 0.05


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


def _bias_rate(outcomes: Mapping[str, str], alpha: float) -> Rate:
    stereo = sum(1 for o in outcomes.values() if o == "stereo")
    decided = sum(1 for o in outcomes.values() if o in ("stereo", "anti"))
    return wilson(stereo, decided, alpha)


def _noise_floors(
    con: duckdb.DuckDBPyConnection, run_ids: Sequence[str], alpha: float
) -> dict[inputs.AxisKey, NoiseFloor]:
    """Noise floor per axis from the first of ``run_ids`` whose repeat group has ≥2 runs."""
    out: dict[inputs.AxisKey, NoiseFloor] = {}
    for rid in run_ids:
        for key, repeats in inputs.repeat_outcomes(con, rid).items():
            if key not in out and (floor := noise_floor(repeats, alpha)) is not None:
                out[key] = floor
    return out


def compare_runs(
    con: duckdb.DuckDBPyConnection,
    new_run_id: str,
    baseline_run_id: str,
    *,
    alpha: float = ALPHA,
    min_overlap: float = MIN_ITEM_OVERLAP,
    noise: Mapping[inputs.AxisKey, NoiseFloor] | None = None,
) -> list[AxisComparison]:
    """Paired comparison of ``new_run_id`` with ``baseline_run_id`` on every axis of either run.

    BH is applied across the axes returned here. A report that compares several
    snapshots must call ``adjust_family`` once over all their comparisons, so that the
    false discovery rate is controlled over everything it shows.

    ``noise`` overrides the noise floors; by default they are measured from the new
    run's repeat group, else the baseline's (axes with neither have no floor).
    """
    new, old = inputs.run_row(con, new_run_id), inputs.run_row(con, baseline_run_id)
    provenance = diff_runs(old, new)
    pinned_local = (
        new["origin"] == old["origin"] == "local"
        and new["snapshot_revision"] == old["snapshot_revision"]
    )
    attribution = provenance.attribution(pinned_local=pinned_local)
    floors = (
        dict(noise)
        if noise is not None
        else _noise_floors(con, [new_run_id, baseline_run_id], alpha)
    )
    axes_new, axes_old = (
        inputs.axis_outcomes(con, new_run_id),
        inputs.axis_outcomes(con, baseline_run_id),
    )
    empty = inputs.AxisOutcomes()
    comparisons: list[AxisComparison] = []
    for key in sorted(set(axes_new) | set(axes_old)):
        a_new, a_old = axes_new.get(key, empty), axes_old.get(key, empty)
        flips = count_flips(a_old.outcomes, a_new.outcomes)
        paired = paired_difference(flips.both_stereo, flips.b, flips.c, flips.both_anti, alpha)
        blocked = comparability(
            metric_old=(old["metric"], old["metric_version"]),
            metric_new=(new["metric"], new["metric_version"]),
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
                rate_old=_bias_rate(a_old.outcomes, alpha),
                rate_new=_bias_rate(a_new.outcomes, alpha),
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
    out: list[AxisComparison] = []
    for comp, p_adj in zip(comparisons, adjusted, strict=True):
        if comp.p_value is None or p_adj is None:
            out.append(replace(comp, p_adjusted=None))
            continue
        verdict = decide(
            b=comp.b,
            c=comp.c,
            n_paired=comp.n_paired,
            p_adjusted=p_adj,
            alpha=alpha,
            noise=comp.noise,
        )
        out.append(replace(comp, p_adjusted=p_adj, verdict=verdict))
    return out
