"""What a pair-axis comparison is, and what every drift session does to all its comparisons.

``AxisComparison`` (one benchmark axis of a new run against its baseline: bias rates,
paired flips, McNemar, noise, MDE, clusters, provenance) and the records beside it are
the types drift's explanations, the CLI and the report read; the pair family's comparator
that builds them is ``monitor.families.pairs.compare``. :func:`adjust_family` and
:func:`with_sign_flips` act on a session's comparisons whatever their family: the
false discovery rate is controlled once over everything a report shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from monitor.drift.clusters import ClusterSummary
from monitor.drift.deltas import DeltaTest, SignFlipBatch
from monitor.drift.noise import NoiseContext
from monitor.drift.power import DetectableChange
from monitor.drift.provenance_diff import ProvenanceDiff
from monitor.drift.stats import (
    NoiseFloor,
    PairedDifference,
    bh_adjust,
)
from monitor.drift.verdicts import Verdict, decide
from monitor.metrics.families import PAIR_OUTCOME
from monitor.metrics.intervals import Rate
from monitor.readmodel.models import AxisKey

# What a comparison is: the latest run against the one before it, or a run against the
# last run of the previous measurement configuration (see ``drift.session``).
PREVIOUS_RUN = "previous run"
CONFIGURATION_CHANGE = "configuration change"

ALPHA = 0.05  # false discovery rate of a drift session (Benjamini–Hochberg)
CONFIDENCE = 0.95  # level of every interval drift shows; not tied to ALPHA


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
class UnscoredAxis:
    """An axis only one run of a pair scored: no comparison, no verdict, and its dataset
    version stays out of the pair's provenance diff. ``missing``: the side without it."""

    benchmark: str
    axis: str
    new_run_id: str
    baseline_run_id: str
    missing: Literal["new", "baseline"]

    @property
    def words(self) -> str:
        """How a reader sees it: "not scored in the new run" / "... in the baseline"."""
        return (
            "not scored in the new run" if self.missing == "new" else "not scored in the baseline"
        )


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
    (label, old, new); ``summary`` the verdict in plain words (``drift.explain``);
    ``control`` the axis's control's rates in both runs (never a verdict of its own).
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

    @property
    def family(self) -> str:
        """The result family whose comparator builds it (``DriftResult.of_family``)."""
        return PAIR_OUTCOME.name

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
        verdict = decide(
            b=self.b,
            c=self.c,
            n_paired=self.n_paired,
            p_adjusted=p_adjusted,
            alpha=alpha,
            noise=self.noise,
            delta=self.paired.delta,
            rate_noise=context.rate_bound if context else None,
            noise_note=context.unknown if context else None,
        )
        return replace(self, p_adjusted=p_adjusted, verdict=verdict)


def test_key(new_run_id: str, baseline_run_id: str, axis: AxisKey) -> tuple[str, str, AxisKey]:
    """A delta test's key in a session's ``SignFlipBatch``: one test per pair and axis."""
    return (new_run_id, baseline_run_id, axis)


def with_sign_flips(comparisons: Sequence[Any], batch: SignFlipBatch) -> list[Any]:
    """``comparisons`` with the p-values of their delta tests from ``batch`` (see
    ``monitor.families.pairs.compare.compare_runs``); other kinds pass through."""
    ps = batch.p_values()
    out = []
    for c in comparisons:
        if isinstance(c, AxisComparison) and c.delta_test is not None:
            p = ps.get(test_key(c.new_run_id, c.baseline_run_id, (c.benchmark, c.axis)))
            if p is not None:
                c = replace(c, delta_test=replace(c.delta_test, p_value=p))
        out.append(c)
    return out


def adjust_family(comparisons: Sequence[Any], *, alpha: float = ALPHA) -> list[Any]:
    """BH-adjust the p-values of all ``comparisons`` together (McNemar for pair axes, the
    effect-size test for association tests: anything with ``p_value`` and ``adjusted``)
    and redo their verdicts.

    Not-comparable axes (p_value None) are left out of the family and keep their verdict.
    """
    adjusted = bh_adjust([c.p_value for c in comparisons])
    return [c.adjusted(p, alpha) for c, p in zip(comparisons, adjusted, strict=True)]
