"""What every drift session does to all its comparisons, whatever their family.

:func:`adjust_family` controls the false discovery rate once over everything a report
shows; :func:`with_sign_flips` hands each comparison the p-values of its delta tests from
the session's one sign-flip batch. The session's constants (the roles of a baseline, the
false discovery rate, the confidence level) and ``UnscoredAxis`` (an axis only one run
of a pair scored) live here too. Each family's comparison type lives with the family
(``Family.drift``), or is drift's generic ``records.FamilyComparison``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from monitor.drift.deltas import SignFlipBatch
from monitor.drift.stats import (
    bh_adjust,
)

# What a comparison is: the latest run against the one before it, or a run against the
# last run of the previous measurement configuration (see ``drift.session``).
PREVIOUS_RUN = "previous run"
CONFIGURATION_CHANGE = "configuration change"

ALPHA = 0.05  # false discovery rate of a drift session (Benjamini–Hochberg)
CONFIDENCE = 0.95  # level of every interval drift shows; not tied to ALPHA


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


def with_sign_flips(comparisons: Sequence[Any], batch: SignFlipBatch) -> list[Any]:
    """``comparisons`` with the p-values of their delta tests from ``batch`` (the session's
    one sign-flip batch): a comparison of a type that has such tests takes them with its
    ``with_delta_p_values`` method (the pairs'); other kinds pass through."""
    ps = batch.p_values()
    return [
        c.with_delta_p_values(ps) if hasattr(c, "with_delta_p_values") else c for c in comparisons
    ]


def adjust_family(comparisons: Sequence[Any], *, alpha: float = ALPHA) -> list[Any]:
    """BH-adjust the p-values of all ``comparisons`` together (McNemar for pair axes, the
    effect-size test for association tests: anything with ``p_value`` and ``adjusted``)
    and redo their verdicts.

    Not-comparable axes (p_value None) are left out of the family and keep their verdict.
    """
    adjusted = bh_adjust([c.p_value for c in comparisons])
    return [c.adjusted(p, alpha) for c, p in zip(comparisons, adjusted, strict=True)]
