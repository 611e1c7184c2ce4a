"""Drift for statements: two runs' answers paired by item, tested with the core's tools.

The family's paired comparison. Per benchmark, over every statement both runs answered
(a tie in either run is left out of the pair), the compared measure is the share of
answers on the stereotype's side, both stances pooled (``stereo_share``; with as many
endorsing as rejecting statements answered it is the balanced rate). Everything
statistical is the core's, not this family's:

* pairing and the 2 × 2 of flips (``monitor.drift.stats.count_flips``): ``b`` answers
  that moved to the other side of the stereotype, ``c`` answers that moved to its side;
* the exact McNemar p (``mcnemar_exact``), Δ with Newcombe's paired interval
  (``paired_difference``), the exact minimum detectable change (``drift.power``);
* "not comparable" when the metrics, metric versions or benchmark files differ, or too
  few statements were scored by both (``drift.verdicts.comparability``);
* the noise floor: the largest spread of the share among the repeat runs the session's
  ``NoiseBook`` picks for the pair; Benjamini–Hochberg over every test of the session
  and the verdict (``FamilyComparison.adjusted``) are drift's.

A flagged change towards the stereotype (c > b) is a regression.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bias_monitor_statements.frame import FAMILY_NAME
from bias_monitor_statements.measures import ALL
from monitor.drift.deltas import SignFlipBatch
from monitor.drift.noise import NoiseBook
from monitor.drift.power import mcnemar_mde
from monitor.drift.provenance_diff import diff_runs
from monitor.drift.stats import count_flips, mcnemar_exact, paired_difference
from monitor.drift.verdicts import MIN_ITEM_OVERLAP, comparability
from monitor.readmodel.models import AxisOutcomes, StoredRun
from monitor.records import ComparisonVerdict, FamilyComparison
from monitor.store.view import StoreView

MEASURE = "stereo_share"
METHOD = "exact McNemar over statements answered in both runs"
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
    """Answers on the stereotype's side among answered statements."""
    decided = [o for o in outcomes.values() if o in ("stereo", "anti")]
    return decided.count("stereo") / len(decided) if decided else None


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
        noise, note = _noise(book, new, old, benchmark)
        if diff.delta is None or diff.p_old is None or diff.p_new is None:
            words = "no statement was answered in both runs"
        else:
            words = (
                f"answers on the stereotype's side {100 * diff.p_old:.1f}% → "
                f"{100 * diff.p_new:.1f}% of {diff.n} statements ({flips.c} moved to the "
                f"stereotype's side, {flips.b} away from it)"
            )
        tested = blocked is None and diff.delta is not None
        out.append(
            FamilyComparison(
                family=FAMILY_NAME,
                benchmark=benchmark,
                axis=ALL,
                measure=MEASURE,
                scope=f"statements of {benchmark}",
                new_run_id=new_run_id,
                baseline_run_id=baseline_run_id,
                n_paired=diff.n,
                value_old=diff.p_old,
                value_new=diff.p_new,
                delta=diff.delta,
                ci_low=diff.ci_low,
                ci_high=diff.ci_high,
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
                mde=mcnemar_mde(diff.n, flips.b, flips.c, alpha=alpha).mde if diff.n else None,
                mde_method=MDE_METHOD,
                unit="points",
                label="stereotype's side",
                signed=False,
                role=role,
                attribution=attribution,
                details={"b": flips.b, "c": flips.c, "n_overlap": flips.n_overlap},
            )
        )
    return out
