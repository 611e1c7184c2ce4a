"""Drift for a family of stereo / anti outcomes: two runs paired by item, per benchmark.

The one home of the paired comparison that SeeGULL and the plug-in example
(``examples/family-plugin``) share, and any family whose items each end on the
stereotype's side (``stereo``), the other side (``anti``) or neither (a tie) may call:
a family says what it compares and how its words read (``OutcomeComparison``), and its
``Drift(compare=...)`` is that declaration's ``compare``. Per benchmark both runs scored,
over every item both runs decided (a tie in either run is left out of the pair), the
compared measure is the share of ``stereo`` among decided items. Everything statistical
is drift's:

* pairing and the 2 × 2 of flips (``stats.count_flips``): ``b`` items that moved away
  from the stereotype, ``c`` items that moved to it;
* the exact McNemar p (``mcnemar_exact``), Δ with Newcombe's paired interval
  (``paired_difference``), the exact minimum detectable change (``power``);
* "not comparable" when the metrics, metric versions or benchmark files differ, or too
  few items were scored by both (``verdicts.comparability``);
* the noise floor: the largest spread of the share among the repeat runs the session's
  ``NoiseBook`` picks for the pair; Benjamini–Hochberg over every test of the session
  and the verdict (``FamilyComparison.adjusted``) are the session's.

Where a family's items share a cluster (SeeGULL's identities), it names each item's
cluster (``OutcomeComparison.clusters``): the paired interval is widened by the design
effect of that clustering (``clusters``), the MDE is computed at the effective n, the
exact McNemar p is left as it is, and the design effect is in ``details``. A flagged
change towards the stereotype (c > b) is a regression.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from monitor.contract.capabilities import CompareRequest
from monitor.drift.clusters import design_effect, widen
from monitor.drift.estimate import NOT_YET_ADJUSTED, PairedEstimate, unadjusted
from monitor.drift.noise import NoiseBook
from monitor.drift.power import mcnemar_mde
from monitor.drift.run_pair import run_pair
from monitor.drift.stats import (
    DECIDED,
    Flips,
    PairedDifference,
    count_flips,
    mcnemar_exact,
    paired_difference,
)
from monitor.drift.verdicts import MIN_ITEM_OVERLAP, comparability
from monitor.readmodel.models import AxisOutcomes, StoredRun
from monitor.records import ComparisonVerdict, FamilyComparison
from monitor.store.view import StoreView

MDE_METHOD = "exact McNemar power at the observed discordance"


def pooled(axes: Mapping[tuple[str, str], AxisOutcomes], benchmark: str) -> AxisOutcomes:
    """One run's outcomes on every axis of ``benchmark``, as one subject."""
    out = AxisOutcomes()
    for (b, _axis), a in axes.items():
        if b == benchmark:
            out.outcomes.update(a.outcomes)
            out.benchmark_versions |= a.benchmark_versions
    return out


def share(outcomes: Mapping[str, str]) -> float | None:
    """The share of ``stereo`` among decided items (None when none was decided)."""
    decided = [o for o in outcomes.values() if o in DECIDED]
    return decided.count("stereo") / len(decided) if decided else None


def moves(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, int]:
    """Item → the paired change of its ``stereo`` outcome (−1, 0, 1), over items decided
    in both runs: what the design effect of clustering is computed on. In item-id order,
    so the design effect's sums, and the interval widened by it, are the same bits in
    every process (a set's order follows the string hash, which differs per process)."""
    return {
        i: int(new[i] == "stereo") - int(old[i] == "stereo")
        for i in sorted(old.keys() & new.keys())
        if old[i] in DECIDED and new[i] in DECIDED
    }


def _noise(
    book: NoiseBook, new: StoredRun, old: StoredRun, benchmark: str
) -> tuple[float | None, str]:
    """The repeat runs' largest spread of the share, and what it was judged against."""
    sources = book.repeat_sources(new, old)
    if not sources:
        if new.origin == old.origin == "local":
            return None, (
                "no repeat group: a pinned local snapshot reruns bit-identically, so no "
                "noise is assumed"
            )
        return None, "noise unknown: no repeat group of this configuration"
    spread: float | None = None
    described = []
    for _side, group, members in sources:
        described.append(f"{len(members)} repeat runs ({group.key})")
        values = [share(pooled(book.outcomes(r), benchmark).outcomes) for r in members]
        real = [v for v in values if v is not None]
        if len(real) >= 2:
            spread = max(spread or 0.0, max(real) - min(real))
    return spread, "judged against " + "; ".join(described)


@dataclass(frozen=True)
class _Interval:
    """Δ's interval and the n the MDE is computed at, after any clustering."""

    ci_low: float | None
    ci_high: float | None
    n_eff: int
    details: dict[str, float | int]


@dataclass(frozen=True)
class OutcomeComparison:
    """What a family of stereo / anti outcomes says of its paired comparison; the
    statistics are this module's.

    ``measure`` and ``method`` are the records' own; ``scope`` and ``axis`` word a
    benchmark (``axis`` is what drift's line names); ``words`` says the change of a pair
    whose Δ is defined (from the old and new shares, the n paired and the flips),
    ``undefined`` what it says when no item was decided in both runs. ``clusters``,
    where the family's items are not independent, maps item ids to their cluster (read
    from the store's items)."""

    family: str
    measure: str
    method: str
    scope: Callable[[str], str]
    axis: Callable[[str], str]
    words: Callable[[float, float, int, Flips], str]
    undefined: str
    clusters: Callable[[StoreView, Iterable[str]], Mapping[str, str]] | None = None

    def _interval(
        self,
        view: StoreView,
        diff: PairedDifference,
        flips: Flips,
        a_old: AxisOutcomes,
        a_new: AxisOutcomes,
    ) -> _Interval:
        """Newcombe's interval as it is, or widened by the design effect of ``clusters``
        (the MDE then at the effective n, the design effect in the details)."""
        counts: dict[str, float | int] = {"b": flips.b, "c": flips.c, "n_overlap": flips.n_overlap}
        if self.clusters is None:
            return _Interval(diff.ci_low, diff.ci_high, diff.n, counts)
        paired = moves(a_old.outcomes, a_new.outcomes)
        summary = design_effect(paired, self.clusters(view, paired))
        ci_low, ci_high = diff.ci_low, diff.ci_high
        if diff.delta is not None and ci_low is not None and ci_high is not None:
            ci_low, ci_high = widen(diff.delta, ci_low, ci_high, summary.design_effect)
        n_eff = int(diff.n / summary.design_effect) if diff.n else 0
        counts |= {
            "design_effect": round(summary.design_effect, 4),
            "identities": summary.n_clusters,
        }
        return _Interval(ci_low, ci_high, n_eff, counts)

    def compare(self, request: CompareRequest) -> list[FamilyComparison]:
        """The family's ``Drift.compare``: one comparison per benchmark both runs scored
        (p not yet BH-adjusted). The request's ``sign_flips`` and ``controls`` (other
        families' delta tests and control sets) are unused here: McNemar needs no
        sign-flip batch, and such benchmarks have no control set."""
        view, alpha, confidence = request.view, request.alpha, request.confidence
        new_run_id, baseline_run_id = request.new_run_id, request.baseline_run_id
        pair = run_pair(view, new_run_id, baseline_run_id)
        new, old, attribution = pair.new, pair.old, pair.attribution
        book = request.noise_book or NoiseBook(view, alpha=alpha)
        axes_new, axes_old = book.outcomes(new_run_id), book.outcomes(baseline_run_id)
        out = []
        for benchmark in sorted({b for b, _ in axes_new} & {b for b, _ in axes_old}):
            a_new, a_old = pooled(axes_new, benchmark), pooled(axes_old, benchmark)
            flips = count_flips(a_old.outcomes, a_new.outcomes)
            blocked = comparability(
                metric_old=(old.metric, old.metric_version),
                metric_new=(new.metric, new.metric_version),
                versions_old=a_old.benchmark_versions,
                versions_new=a_new.benchmark_versions,
                items_old=len(a_old.outcomes),
                items_new=len(a_new.outcomes),
                items_both=flips.n_overlap,
                n_paired=flips.n_paired,
                min_overlap=MIN_ITEM_OVERLAP,
            )
            diff = paired_difference(
                flips.both_stereo, flips.b, flips.c, flips.both_anti, confidence
            )
            interval = self._interval(view, diff, flips, a_old, a_new)
            noise, note = _noise(book, new, old, benchmark)
            if diff.delta is None or diff.p_old is None or diff.p_new is None:
                words = self.undefined
            else:
                words = self.words(diff.p_old, diff.p_new, diff.n, flips)
            tested = blocked is None and diff.delta is not None
            p = mcnemar_exact(flips.b, flips.c) if tested else None
            estimate = PairedEstimate(
                diff.n, diff.p_old, diff.p_new, diff.delta, interval.ci_low, interval.ci_high, p
            )
            out.append(
                unadjusted(
                    self.family,
                    self.measure,
                    self.scope(benchmark),
                    estimate,
                    method=self.method,
                    change=words,
                    towards_stereotype=None if not diff.delta else diff.delta > 0,
                    verdict=(
                        ComparisonVerdict("not comparable", blocked.reason)
                        if blocked
                        else NOT_YET_ADJUSTED
                    ),
                    benchmark=benchmark,
                    axis=self.axis(benchmark),
                    new_run_id=new_run_id,
                    baseline_run_id=baseline_run_id,
                    confidence=confidence,
                    noise=noise,
                    noise_note=note,
                    mde=(
                        mcnemar_mde(interval.n_eff, flips.b, flips.c, alpha=alpha).mde
                        if interval.n_eff
                        else None
                    ),
                    mde_method=MDE_METHOD,
                    unit="points",
                    label="stereotype's side",
                    signed=False,
                    role=request.role,
                    attribution=attribution,
                    details=interval.details,
                )
            )
        return out
