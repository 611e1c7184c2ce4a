"""Drift for SeeGULL: two runs' outcomes paired by item, tested with the core's tools.

The family's paired comparison. Per benchmark (one language), over every item both runs
decided with frame 1 (a tie in either run is left out of the pair), the compared measure
is the stereotype rate (``stereo_rate``: the attribute likelier after the stereotyped
identity than after the contrast). Everything statistical is the core's, not this
family's:

* pairing and the 2 × 2 of flips (``monitor.drift.stats.count_flips``): ``b`` items
  that moved away from the stereotype, ``c`` items that moved to it;
* the exact McNemar p (``mcnemar_exact``), Δ with Newcombe's paired interval
  (``paired_difference``), the exact minimum detectable change (``drift.power``);
* "not comparable" when the metrics, metric versions or benchmark files differ, or too
  few items were scored by both (``drift.verdicts.comparability``);
* the noise floor: the largest spread of the share among the repeat runs the session's
  ``NoiseBook`` picks for the pair; Benjamini–Hochberg over every test of the session
  and the verdict (``FamilyComparison.adjusted``) are drift's.

Items share identities and attributes, so the paired interval is widened by the design
effect of clustering on the stereotyped identity (``monitor.drift.clusters``, the item's
``template`` is S) and the MDE is computed at the effective n; the exact McNemar p is
left as it is and the design effect is in ``details``. A flagged change towards the
stereotype (c > b) is a regression.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from monitor.drift.clusters import design_effect, widen
from monitor.drift.deltas import SignFlipBatch
from monitor.drift.noise import NoiseBook
from monitor.drift.power import mcnemar_mde
from monitor.drift.provenance_diff import diff_runs
from monitor.drift.stats import count_flips, mcnemar_exact, paired_difference
from monitor.drift.verdicts import MIN_ITEM_OVERLAP, comparability
from monitor.families.seegull.frames import FAMILY_NAME
from monitor.families.seegull.measures import HEADLINE
from monitor.readmodel.models import AxisOutcomes, StoredRun
from monitor.records import ComparisonVerdict, FamilyComparison
from monitor.store.view import StoreView

MEASURE = HEADLINE
METHOD = (
    "exact McNemar over items decided in both runs; interval widened by the design effect "
    "of identities"
)
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
    """Stereotype wins among decided items."""
    decided = [o for o in outcomes.values() if o in ("stereo", "anti")]
    return decided.count("stereo") / len(decided) if decided else None


def _moves(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, int]:
    """Item → the paired change of its stereotype win (−1, 0, 1), over items decided in
    both runs."""
    decided = ("stereo", "anti")
    return {
        i: int(new[i] == "stereo") - int(old[i] == "stereo")
        for i in old.keys() & new.keys()
        if old[i] in decided and new[i] in decided
    }


def _identities(view: StoreView, item_ids: Iterable[str]) -> dict[str, str]:
    """Item → its stereotyped identity, the cluster of the paired interval."""
    return {i: str(it.payload.get("identity")) for i, it in view.items(item_ids).items()}


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


def compare(
    view: StoreView,
    new_run_id: str,
    baseline_run_id: str,
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    noise_book: NoiseBook | None = None,
    role: str = "previous run",
    sign_flips: SignFlipBatch | None = None,
    controls: Mapping[str, Sequence[str]] | None = None,
) -> list[FamilyComparison]:
    """One comparison per benchmark both runs scored (p not yet BH-adjusted).
    ``sign_flips`` and ``controls`` are the contract's (other families' delta tests and
    control sets) and unused here: McNemar needs no sign-flip batch, and these
    benchmarks have no control set."""
    del sign_flips, controls
    new, old = view.run(new_run_id), view.run(baseline_run_id)
    book = noise_book or NoiseBook(view, alpha=alpha)
    attribution = diff_runs(old.fields, new.fields).attribution(
        pinned_local=new.origin == old.origin == "local"
        and new.snapshot_revision == old.snapshot_revision
    )
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
        diff = paired_difference(flips.both_stereo, flips.b, flips.c, flips.both_anti, confidence)
        moves = _moves(a_old.outcomes, a_new.outcomes)
        clusters = design_effect(moves, _identities(view, moves))
        ci_low, ci_high = diff.ci_low, diff.ci_high
        if diff.delta is not None and ci_low is not None and ci_high is not None:
            ci_low, ci_high = widen(diff.delta, ci_low, ci_high, clusters.design_effect)
        n_eff = int(diff.n / clusters.design_effect) if diff.n else 0
        noise, note = _noise(book, new, old, benchmark)
        if diff.delta is None or diff.p_old is None or diff.p_new is None:
            words = "no item was decided in both runs"
        else:
            words = (
                f"stereotype wins {100 * diff.p_old:.1f}% → {100 * diff.p_new:.1f}% of "
                f"{diff.n} items ({flips.c} moved to the stereotype, {flips.b} away from it)"
            )
        tested = blocked is None and diff.delta is not None
        out.append(
            FamilyComparison(
                family=FAMILY_NAME,
                benchmark=benchmark,
                axis=benchmark,  # one language per benchmark: drift's line names it
                measure=MEASURE,
                scope=f"SeeGULL items of {benchmark}",
                new_run_id=new_run_id,
                baseline_run_id=baseline_run_id,
                n_paired=diff.n,
                value_old=diff.p_old,
                value_new=diff.p_new,
                delta=diff.delta,
                ci_low=ci_low,
                ci_high=ci_high,
                confidence=confidence,
                p_value=mcnemar_exact(flips.b, flips.c) if tested else None,
                p_adjusted=None,
                method=METHOD,
                change=words,
                towards_stereotype=None if not diff.delta else diff.delta > 0,
                verdict=ComparisonVerdict(
                    "not comparable" if blocked else "no significant change",
                    blocked.reason if blocked else "not yet adjusted",
                ),
                noise=noise,
                noise_note=note,
                mde=mcnemar_mde(n_eff, flips.b, flips.c, alpha=alpha).mde if n_eff else None,
                mde_method=MDE_METHOD,
                unit="points",
                label="stereotype's side",
                signed=False,
                role=role,
                attribution=attribution,
                details={
                    "b": flips.b,
                    "c": flips.c,
                    "n_overlap": flips.n_overlap,
                    "design_effect": round(clusters.design_effect, 4),
                    "identities": clusters.n_clusters,
                },
            )
        )
    return out
