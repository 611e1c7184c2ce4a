"""The pair family's comparison: one benchmark axis of a new run against its baseline.

``AxisComparison`` holds each run's bias rate, the paired flips and McNemar's p, the
noise the verdict used, the minimum detectable change, the template clusters, the delta
test on continuous per-item scores, the provenance diff and the axis's neutral control;
the comparator (``compare``) builds it, the session adjusts it with every other test
(``adjusted``, ``with_delta_p_values``), and the family's drift output and report read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from monitor.drift.clusters import ClusterSummary
from monitor.drift.compare import PREVIOUS_RUN
from monitor.drift.deltas import DeltaTest
from monitor.drift.noise import NoiseContext
from monitor.drift.power import DetectableChange
from monitor.drift.provenance_diff import ProvenanceDiff
from monitor.drift.robustness import Robustness
from monitor.drift.stats import NoiseFloor, PairedDifference
from monitor.drift.verdicts import Verdict, decide
from monitor.families.pairs import NAME
from monitor.families.pairs.balanced_change import BalancedChange
from monitor.metrics.intervals import Rate
from monitor.readmodel.models import AxisKey


@dataclass(frozen=True)
class ControlRates:
    """The control of a compared axis (``drift.controls``): its bias rate in each run, read
    beside the axis's own rates and never tested. A side that did not score the control
    has a rate of n = 0 (value None)."""

    benchmark: str
    axis: str
    rate_old: Rate
    rate_new: Rate


@dataclass(frozen=True)
class AxisComparison:
    """One (benchmark, axis) of a new run against its baseline.

    ``rate_old``/``rate_new`` are each run's own bias rate (stereo among decided) over all
    its decided items; ``paired`` is the change over items decided in both, with
    Newcombe's interval, which treats items as independent; ``delta_ci_clustered`` is that
    interval widened by the design effect where items share a template (``clusters``),
    and is the interval reports show. ``b``: stereo→anti flips, ``c``: anti→stereo.
    ``p_value`` is exact McNemar, ``p_adjusted`` its Benjamini–Hochberg value within the
    family the comparison was adjusted in; both are None when the runs are not
    comparable. ``noise`` is the noise floor the verdict used (the strictest
    side of ``noise_context``); ``detectable`` the minimum detectable change;
    ``delta_test`` the paired test on continuous per-item scores (local metrics);
    ``configuration_changes`` what differs in the measurement configuration, as
    (label, old, new); ``summary`` the verdict in plain words (``explain``);
    ``control`` the axis's control's rates in both runs (never a verdict of its own);
    ``robustness`` the same change read by the panel's other metrics valid for both
    models (``panel_check``; None when not comparable or unchanged).

    ``balanced``: where the axis's stereotypes name two or more groups, the paired
    change of the balanced rate (``balanced_change``), which is then the tested
    quantity: ``p_value`` is its test's, ``detectable`` its MDE and the verdict its
    sign, so a preference for one group's name alone is never flagged; the raw rates,
    flips and McNemar p (``raw_p_value``) stay for reading. None where the axis is not
    separable (``balanced_note`` says why) or the runs are not comparable.
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
    noise_context: NoiseContext | None = None
    detectable: DetectableChange | None = None
    clusters: ClusterSummary | None = None
    delta_ci_clustered: tuple[float, float] | None = None
    delta_test: DeltaTest | None = None
    configuration_changes: tuple[tuple[str, str | None, str | None], ...] = ()
    role: str = PREVIOUS_RUN
    started_old: datetime | None = None
    started_new: datetime | None = None
    summary: str = ""
    control: ControlRates | None = None
    balanced: BalancedChange | None = None
    balanced_note: str | None = None
    raw_p_value: float | None = None
    robustness: Robustness | None = None

    @property
    def family(self) -> str:
        """The result family whose comparator builds it (``DriftResult.of_family``)."""
        return NAME

    @property
    def flagged(self) -> bool:
        """Drift flagged it: a regression or an improvement (BH and the noise cleared)."""
        return self.verdict.flagged

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
        context = self.noise_context
        balanced = self.balanced
        verdict = decide(
            b=self.b,
            c=self.c,
            n_paired=self.n_paired,
            p_adjusted=p_adjusted,
            alpha=alpha,
            noise=self.noise,
            delta=self.paired.delta if balanced is None else balanced.delta,
            rate_noise=context.rate_bound if context else None,
            noise_note=context.unknown if context else None,
            direction=None if balanced is None else balanced.sign,
            tested=None if balanced is None else balanced_words(balanced),
        )
        return replace(self, p_adjusted=p_adjusted, verdict=verdict)

    def with_delta_p_values(self, p_values: Mapping[tuple, float]) -> AxisComparison:
        """This comparison with its delta test's p from the session's sign-flip batch
        (keyed by :func:`test_key`); unchanged where it has no delta test."""
        if self.delta_test is None:
            return self
        key = test_key(self.new_run_id, self.baseline_run_id, (self.benchmark, self.axis))
        p = p_values.get(key)
        return self if p is None else replace(self, delta_test=replace(self.delta_test, p_value=p))


def test_key(new_run_id: str, baseline_run_id: str, axis: AxisKey) -> tuple[str, str, AxisKey]:
    """A delta test's key in a session's ``SignFlipBatch``: one test per pair and axis."""
    return (new_run_id, baseline_run_id, axis)


def balanced_words(b: BalancedChange) -> str:
    """The tested quantity in a verdict's reason: "balanced change +16.5 pp (raw +22.6 pp,
    name preference +6.1 pp)"."""

    def pp(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:+.1f} pp"

    return (
        f"balanced change {pp(b.delta)} (raw {pp(b.raw_delta)}, "
        f"name preference {pp(b.name_preference_part)})"
    )
