"""Turn one axis's paired test into a verdict a reader can act on, with the reason.

A verdict is decided in two steps so that "we could not compare" is never confused with
"nothing changed": first whether the two runs measure the same thing on the same items
(``comparability``), then whether the change clears both the multiple-testing control
and the noise floor (``decide``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal, Protocol

from monitor.drift.stats import NoiseFloor

VerdictLabel = Literal["regression", "improvement", "no significant change", "not comparable"]

# Which of ``decide``'s rules held a change back from a flag, for machines (the JSON's
# ``not_flagged_by``): the multiple-testing control, or the noise of repeat runs (the
# share of items that changed side, or the change of the bias rate itself).
HeldBy = Literal["fdr", "flip-noise-floor", "rate-noise-floor"]

# Fewer shared items than this fraction of the union of both runs' items means the two
# runs scored materially different item sets, so a paired test would describe a subset
# neither run's headline rate is about.
MIN_ITEM_OVERLAP = 0.8


@dataclass(frozen=True)
class Verdict:
    """A verdict and its reason; for a change ``decide`` did not flag, which rule held it
    back (``held_by``) and that rule in plain words (``held``), so an output can say why
    an interval clear of zero still reads "no significant change" (``interval_note``)."""

    label: VerdictLabel
    reason: str
    held_by: HeldBy | None = None
    held: str | None = None

    @property
    def flagged(self) -> bool:
        return self.label in ("regression", "improvement")


def interval_note(verdict: Verdict, low: float | None, high: float | None) -> str | None:
    """Why a change whose interval excludes zero is not flagged, or None where there is
    nothing to reconcile (the interval includes zero, the change is flagged or not
    compared, or the family decides without ``decide``'s rules).

    The interval is the unadjusted paired interval of the tested change; the verdict also
    asks the multiple-testing control and the noise of repeat runs, so the two can
    disagree, and a reader in a hurry sees "−14.2 [−25.4, −2.0] … no significant change"
    as a contradiction unless the line says which rule decided."""
    if verdict.held is None or low is None or high is None:
        return None
    if not (low > 0 or high < 0):
        return None
    return f"not flagged although the interval excludes 0: {verdict.held}"


class MetricOf(Protocol):
    """What ``between_runs`` reads of a run: the metric it was scored with."""

    @property
    def metric(self) -> str: ...

    @property
    def metric_version(self) -> str: ...


def between_runs(
    old: MetricOf,
    new: MetricOf,
    versions: tuple[Collection[str], Collection[str]],
    items: tuple[int, int, int],
    n_paired: int,
    min_overlap: float = MIN_ITEM_OVERLAP,
) -> Verdict | None:
    """``comparability`` of two stored runs on one subject, as every family's comparator
    asks it: the runs' metrics, (old, new) benchmark versions, scored items (old, new,
    both) and the items decided in both."""
    return comparability(
        metric_old=(old.metric, old.metric_version),
        metric_new=(new.metric, new.metric_version),
        versions_old=versions[0],
        versions_new=versions[1],
        items_old=items[0],
        items_new=items[1],
        items_both=items[2],
        n_paired=n_paired,
        min_overlap=min_overlap,
    )


def comparability(
    *,
    metric_old: tuple[str, str],
    metric_new: tuple[str, str],
    versions_old: Collection[str],
    versions_new: Collection[str],
    items_old: int,
    items_new: int,
    items_both: int,
    n_paired: int,
    min_overlap: float = MIN_ITEM_OVERLAP,
) -> Verdict | None:
    """A "not comparable" verdict when a paired test would mislead; None when it is sound.

    ``metric_*`` are (name, version); ``versions_*`` the benchmark versions of each run's
    scored items on this axis; ``items_*`` counts of scored items; ``n_paired`` items
    decided (stereo/anti) in both.
    """
    if metric_old[0] != metric_new[0]:
        return Verdict("not comparable", f"different metrics: {metric_old[0]} vs {metric_new[0]}")
    if metric_old[1] != metric_new[1]:
        return Verdict(
            "not comparable",
            f"different versions of metric {metric_new[0]}: {metric_old[1]} vs {metric_new[1]}",
        )
    if set(versions_old) != set(versions_new):
        return Verdict(
            "not comparable",
            "different benchmark versions: "
            f"{', '.join(sorted(versions_old)) or 'none'} vs "
            f"{', '.join(sorted(versions_new)) or 'none'}",
        )
    if items_both == 0:
        return Verdict("not comparable", "no item was scored in both runs")
    union = items_old + items_new - items_both
    if items_both / union < min_overlap:
        return Verdict(
            "not comparable",
            f"item sets differ: {items_both} shared of {union} "
            f"({items_both / union:.0%} < {min_overlap:.0%} required)",
        )
    if n_paired == 0:
        return Verdict("not comparable", "no item was decided (stereo or anti) in both runs")
    return None


def decide(
    *,
    b: int,
    c: int,
    n_paired: int,
    p_adjusted: float,
    alpha: float,
    noise: NoiseFloor | None,
    delta: float | None = None,
    rate_noise: float | None = None,
    noise_note: str | None = None,
    direction: int | None = None,
    tested: str | None = None,
) -> Verdict:
    """Flag a drift only when BH-adjusted p < alpha AND the change clears the noise.

    Clearing the noise means the flip rate exceeds the noise floor's threshold and, when
    ``rate_noise`` (the largest bias-rate spread of a repeat group) is given, the paired
    rate change ``delta`` is larger than it too. Direction comes from the discordant
    counts: more anti→stereo flips (c) than stereo→anti (b) is a regression. Without a
    measured noise floor the p-value alone decides, and the reason says why there is
    none (``noise_note``: unknown for an API snapshot, none for a pinned local one).

    A family that tests another quantity than the raw paired rate (the pairs' balanced
    change) hands its sign as ``direction`` (+1 towards the stereotype), its change as
    ``delta`` and its words as ``tested``, which lead the reason; the flip counts and
    the noise floor are read as before.
    """
    flip_rate = (b + c) / n_paired if n_paired else 0.0
    counts = f"{b} stereo→anti, {c} anti→stereo of {n_paired} paired items"
    if tested:
        counts = f"{tested}; {counts}"
    if p_adjusted >= alpha:
        return Verdict(
            "no significant change",
            f"{counts}; BH-adjusted p = {p_adjusted:.3g} ≥ {alpha:g}",
            "fdr",
            f"the interval is not corrected for the other tests, and after the "
            f"Benjamini–Hochberg correction p = {p_adjusted:.3g} is not below the false "
            f"discovery rate {alpha:g}",
        )
    if noise is not None and flip_rate <= noise.upper:
        return Verdict(
            "no significant change",
            f"{counts}; BH-adjusted p = {p_adjusted:.3g} but flip rate {flip_rate:.1%} is "
            f"within the noise floor ({noise.upper:.1%} upper, from {noise.n_runs} repeats)",
            "flip-noise-floor",
            f"{flip_rate:.1%} of the paired items changed side, no more than repeat runs of "
            f"an unchanged configuration change ({noise.upper:.1%}, the noise floor)",
        )
    if (
        noise is not None
        and rate_noise is not None
        and delta is not None
        and (abs(delta) <= rate_noise)
    ):
        return Verdict(
            "no significant change",
            f"{counts}; BH-adjusted p = {p_adjusted:.3g} and flip rate {flip_rate:.1%} > "
            f"noise floor {noise.upper:.1%}, but the rate change {100 * delta:+.1f} pp is "
            f"within the noise floor of repeat runs' bias rates ({100 * rate_noise:.1f} pp)",
            "rate-noise-floor",
            f"the change of {100 * abs(delta):.1f} pp is no larger than repeat runs of an "
            f"unchanged configuration differ by ({100 * rate_noise:.1f} pp, the noise floor)",
        )
    if noise is not None:
        floor = f"flip rate {flip_rate:.1%} > noise floor {noise.upper:.1%}"
        if rate_noise is not None and delta is not None:
            floor += f" and rate change {100 * abs(delta):.1f} pp > {100 * rate_noise:.1f} pp"
    else:
        floor = noise_note or "no noise floor measured for this snapshot"
    towards = c > b if direction is None else direction > 0
    label: VerdictLabel = "regression" if towards else "improvement"
    return Verdict(
        label,
        f"{'more' if towards else 'less'} stereotypical: {counts}; "
        f"BH-adjusted p = {p_adjusted:.3g} < {alpha:g}; {floor}",
    )
