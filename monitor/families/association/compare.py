"""Compare two runs of an association test: the change in d, with a paired interval.

The ``association-test`` family's ``compare`` hook (``spec.py``), called by drift for
every pair of its runs. For each (benchmark, test)
scored by either run, the target words embedded in both runs are paired by item id and
Δd = d_new − d_old gets a paired bootstrap interval and p over those words
(``metrics.paired_difference``): what the words share cancels, so
the interval is about the model, not about which words happen to be in the lists.

The verdict follows the pair comparator's rules: "not comparable" when the runs measure
different things (metric, version, benchmark file, too few shared words); otherwise a
change is flagged only when its Benjamini–Hochberg-adjusted p (adjusted together with
every other test of the drift session) is below the false discovery rate and |Δd|
exceeds the spread of d among the snapshot's repeat runs, when there are any. A rise in
d (towards X–A, Y–B) is a regression, as a rise in the stereotype rate is for pairs. The
provenance diff and its attribution (a pinned local snapshot whose d moved with only
environment changes is "environment drift") are the pair comparator's, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from monitor.contract.capabilities import CompareRequest
from monitor.drift.provenance_diff import ProvenanceDiff
from monitor.drift.run_pair import run_pair
from monitor.drift.verdicts import MIN_ITEM_OVERLAP, Verdict, between_runs
from monitor.families.association.metrics import (
    MDE_METHOD,
    METRIC_DDOF,
    detectable_d_change,
    effect_size,
    paired_difference,
    seed_for,
)
from monitor.readmodel.models import TestTerms
from monitor.records import PairedChange
from monitor.store.view import StoreView

METHOD = "paired bootstrap over the target words both runs embedded (percentile)"


@dataclass(frozen=True)
class EffectComparison(PairedChange):
    """One association test of a new run against its baseline (see the module docstring).

    ``d_old``/``d_new`` are each run's stored d over all its words; ``delta`` and its
    interval are over the words both runs embedded (``n_paired``). ``mde`` is the smallest
    |Δd| the comparison's test would detect with 80% power (``mde_method``): what a "no
    significant change" could have seen.
    """

    benchmark: str
    axis: str  # the test id
    new_run_id: str
    baseline_run_id: str
    metric: str
    n_paired: int
    d_old: float | None
    d_new: float | None
    # delta, its interval, confidence, p and p (BH): ``PairedChange``'s, over paired words
    noise: float | None  # largest |d_i − d_j| among repeat runs, when measured
    verdict: Verdict
    provenance: ProvenanceDiff
    attribution: str
    method: str = METHOD
    family: str = "association-test"
    mde: float | None = None
    mde_method: str = MDE_METHOD

    def adjusted(self, p_adjusted: float | None, alpha: float) -> EffectComparison:
        """This comparison with its BH-adjusted p and the verdict that follows from it."""
        if self.p_value is None or p_adjusted is None or self.delta is None:
            return replace(self, p_adjusted=None)
        signed = f"{self.delta:+.3f}".replace("-", "\u2212")  # a true minus, as printed
        change = f"Δd = {signed} over {self.n_paired} paired target words"
        if p_adjusted >= alpha:
            why = f"{change}; BH-adjusted p = {p_adjusted:.3g} ≥ {alpha:g}"
            return replace(
                self, p_adjusted=p_adjusted, verdict=Verdict("no significant change", why)
            )
        if self.noise is not None and abs(self.delta) <= self.noise:
            why = (
                f"{change}; BH-adjusted p = {p_adjusted:.3g} but |Δd| is within the spread "
                f"of d among repeat runs ({self.noise:.3f})"
            )
            return replace(
                self, p_adjusted=p_adjusted, verdict=Verdict("no significant change", why)
            )
        floor = (
            f"|Δd| > repeat spread {self.noise:.3f}"
            if self.noise is not None
            else "no repeat runs measured for this snapshot"
        )
        label = "regression" if self.delta > 0 else "improvement"
        direction = "stronger" if self.delta > 0 else "weaker"
        why = (
            f"{direction} X–A association: {change}; BH-adjusted p = {p_adjusted:.3g} < "
            f"{alpha:g}; {floor}"
        )
        return replace(self, p_adjusted=p_adjusted, verdict=Verdict(label, why))


def _stored_d(view: StoreView, run_id: str) -> dict[tuple[str, str], float | None]:
    return {
        (m.benchmark, m.axis): m.value for m in view.measures(run_id) if m.kind == "effect_size"
    }


def _repeat_spread(view: StoreView, run_ids: list[str]) -> dict[tuple[str, str], float]:
    """Per test, the largest difference of d within the first repeat group with ≥ 2 runs."""
    for rid in run_ids:
        group = view.repeat_group_runs(rid)
        if len(group) < 2:
            continue
        values: dict[tuple[str, str], list[float]] = {}
        for member in group:
            for key, d in _stored_d(view, member).items():
                if d is not None:
                    values.setdefault(key, []).append(d)
        return {k: max(v) - min(v) for k, v in values.items() if len(v) >= 2}
    return {}


def _paired_values(old: TestTerms, new: TestTerms) -> tuple[list[float], ...]:
    shared = sorted(set(old.targets) & set(new.targets))
    ox = [old.targets[i][1] for i in shared if new.targets[i][0] == "X"]
    oy = [old.targets[i][1] for i in shared if new.targets[i][0] == "Y"]
    nx = [new.targets[i][1] for i in shared if new.targets[i][0] == "X"]
    ny = [new.targets[i][1] for i in shared if new.targets[i][0] == "Y"]
    return ox, oy, nx, ny


def compare_effect_sizes(request: CompareRequest) -> list[EffectComparison]:
    """Every test of either run, compared (p not yet adjusted across the session). The
    request's noise book, sign flips and controls are the pair comparators'; effect sizes
    measure their own noise (the repeat spread of d, from the stored runs)."""
    view, alpha, confidence = request.view, request.alpha, request.confidence
    new_run_id, baseline_run_id = request.new_run_id, request.baseline_run_id
    pair = run_pair(view, new_run_id, baseline_run_id)
    new, old, provenance, attribution = pair.new, pair.old, pair.provenance, pair.attribution
    ddof = METRIC_DDOF.get(new.metric, 1)
    spread = _repeat_spread(view, [new_run_id, baseline_run_id])
    terms_new, terms_old = view.test_terms(new_run_id), view.test_terms(baseline_run_id)
    d_new_all, d_old_all = _stored_d(view, new_run_id), _stored_d(view, baseline_run_id)
    empty = TestTerms()
    out: list[EffectComparison] = []
    for key in sorted(set(terms_new) | set(terms_old)):
        a_new, a_old = terms_new.get(key, empty), terms_old.get(key, empty)
        ox, oy, nx, ny = _paired_values(a_old, a_new)
        both = len(ox) + len(oy)
        blocked = between_runs(
            old,
            new,
            (a_old.benchmark_versions, a_new.benchmark_versions),
            (len(a_old.targets), len(a_new.targets), both),
            min(len(ox), len(oy)),
            MIN_ITEM_OVERLAP,
        )
        delta = interval = p = sd = None
        if blocked is None:
            seed = seed_for("drift", key[0], key[1], new_run_id, baseline_run_id)
            delta, interval, p, sd = paired_difference(
                (ox, oy), (nx, ny), ddof=ddof, seed=seed, confidence=confidence
            )
            if delta is None or effect_size(ox, oy, ddof) is None:
                blocked = Verdict("not comparable", "d is undefined in one of the runs")
        out.append(
            EffectComparison(
                benchmark=key[0],
                axis=key[1],
                new_run_id=new_run_id,
                baseline_run_id=baseline_run_id,
                metric=new.metric,
                n_paired=both,
                d_old=d_old_all.get(key),
                d_new=d_new_all.get(key),
                delta=None if blocked else delta,
                ci_low=interval.low if interval and not blocked else None,
                ci_high=interval.high if interval and not blocked else None,
                confidence=confidence,
                p_value=None if blocked else p,
                p_adjusted=None,
                noise=spread.get(key),
                verdict=blocked or Verdict("no significant change", "not yet adjusted"),
                provenance=provenance,
                attribution=attribution,
                mde=None if blocked else detectable_d_change(sd, alpha),
            )
        )
    return out
