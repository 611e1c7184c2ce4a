"""Measurement failures: a run whose answers collapsed compared with the snapshot's history.

A run can pass every per-row check and still be broken as a measurement: the GPT-4o caste
study's two July 15 runs read the Responses API's log-probabilities from the wrong field,
so 81% and 95% of their items have no option log-probability at all. Their bias rates
(over the few items left) are numbers about the bug, not about the model. What gives such
a run away is how its items *ended* compared with earlier runs of the same snapshot and
metric: the share decided (coverage) falls, or the share refused, ambiguous or "other"
rises, far outside anything the history shows.

The rule, per (benchmark, axis), when the snapshot has at least ``MIN_HISTORY_RUNS``
other complete runs of the same metric on that axis:

* **coverage** (decided / scored) collapses when it is more than ``MARGIN`` (20
  percentage points) below the lowest coverage in the history *and* its 99.9% Wilson
  interval lies entirely below that lowest value;
* **refusal, ambiguous and other rates** collapse when they are more than ``MARGIN``
  above the highest in the history and their 99.9% Wilson interval lies entirely above it.

Both conditions, so that neither a small sample (a wide interval) nor a small real move
(a narrow interval just outside the range) quarantines a run: only a change far larger
than anything seen before, and far beyond sampling noise. The history is the other
complete runs, earlier or later, so ``bias-monitor quality RUN`` gives the same answer
whatever order runs were imported in; quarantined runs are never part of it.

Pure: counts in, findings out. The counts are read from the store by the run lifecycle
(``monitor.jobs.lifecycle``) and passed to ``monitor.quality.gate.judge``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monitor.metrics.intervals import wilson

if TYPE_CHECKING:
    # How one run's items on one axis ended: the counts the rule reads.
    from monitor.readmodel.models import OutcomeShares as AxisCounts

MIN_HISTORY_RUNS = 3
MARGIN = 0.20
CONFIDENCE = 0.999


@dataclass(frozen=True)
class RunHistory:
    """A run's own counts and those of the snapshot's other complete runs of its metric."""

    current: Sequence[AxisCounts]
    history: Sequence[AxisCounts]


# (measure name, how to count it, whether a fall (True) or a rise (False) is the failure)
_MEASURES = (
    ("coverage", lambda c: c.decided, True),
    ("refusal rate", lambda c: c.refusal, False),
    ("ambiguous rate", lambda c: c.ambiguous, False),
    ("other rate", lambda c: c.other, False),
)


@dataclass(frozen=True)
class Collapse:
    """One measure of one axis that fell (or rose) far outside the snapshot's history."""

    benchmark: str
    axis: str
    measure: str
    k: int
    n: int
    low: float  # lowest value in the history
    high: float  # highest value in the history
    n_history: int

    @property
    def value(self) -> float:
        return self.k / self.n

    def reason(self) -> str:
        bound = f"{100 * self.low:.1f}–{100 * self.high:.1f}%"
        return (
            f"measurement failure: {self.measure} {100 * self.value:.1f}% ({self.k}/{self.n}) "
            f"on {self.benchmark}/{self.axis}, against {bound} in the snapshot's "
            f"{self.n_history} other complete runs of this metric"
        )


@dataclass(frozen=True)
class HistoryJudgement:
    """Which measures could be compared with a history (``compared``), and what collapsed."""

    compared: tuple[str, ...]
    collapses: tuple[Collapse, ...]


def collapses(
    evidence: RunHistory,
    *,
    min_runs: int = MIN_HISTORY_RUNS,
    margin: float = MARGIN,
    confidence: float = CONFIDENCE,
) -> HistoryJudgement:
    """Every measure of every axis of the run that collapsed (see the module docstring),
    coverage first; ``compared`` is empty when no axis has enough history."""
    by_axis: dict[tuple[str, str], list[AxisCounts]] = defaultdict(list)
    for h in evidence.history:
        if h.n > 0:
            by_axis[(h.benchmark, h.axis)].append(h)
    found: list[Collapse] = []
    compared: list[str] = []
    for name, count, fall in _MEASURES:
        for cur in evidence.current:
            past = by_axis.get((cur.benchmark, cur.axis), [])
            if len({p.run_id for p in past}) < min_runs or cur.n == 0:
                continue
            if name not in compared:
                compared.append(name)
            values = [count(p) / p.n for p in past]
            low, high = min(values), max(values)
            k = count(cur)
            lo, hi = wilson(k, cur.n, confidence)
            value = k / cur.n
            broke = (
                (value < low - margin and hi < low)
                if fall
                else (value > high + margin and lo > high)
            )
            if broke:
                found.append(
                    Collapse(cur.benchmark, cur.axis, name, k, cur.n, low, high, len(past))
                )
    return HistoryJudgement(tuple(compared), tuple(found))
