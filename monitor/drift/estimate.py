"""A paired comparison's numbers as drift's generic record, before the session adjusts it.

Every comparator that yields ``FamilyComparison`` records (the stereo / anti outcomes of
``paired_outcomes``, the choice-question family's scores and answer shares) fills the
same numbers the same way: the paired estimate (n, old and new value, Δ, its interval,
the unadjusted p), what the comparison says in words, and a verdict the session's
Benjamini–Hochberg step replaces (``FamilyComparison.adjusted``). This module is their
one home, so a comparator states its numbers and what is its own, never the record's
layout.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from monitor.records import ComparisonVerdict, FamilyComparison

NOT_YET_ADJUSTED = ComparisonVerdict("no significant change", "not yet adjusted")


@dataclass(frozen=True)
class PairedEstimate:
    """What a paired comparison measured: ``n_paired`` items (or questions) both runs
    answered, the measure's ``value_old`` and ``value_new``, their difference ``delta``,
    its interval (``ci_low``, ``ci_high``; None where the test gives none) and the test's
    unadjusted ``p_value`` (None where nothing was tested). The fields are the record's
    own (``FamilyComparison``), so the estimate fills them as one."""

    n_paired: int
    value_old: float | None
    value_new: float | None
    delta: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None


def unadjusted(
    family: str,
    measure: str,
    scope: str,
    estimate: PairedEstimate,
    *,
    method: str,
    change: str,
    towards_stereotype: bool | None,
    verdict: ComparisonVerdict = NOT_YET_ADJUSTED,
    **own: Any,
) -> FamilyComparison:
    """The comparison of ``measure`` on ``scope`` as drift's record, its p not yet
    adjusted; ``own``: the rest of the record's fields (runs, benchmark, noise, MDE,
    label, details, ...), which the comparator names itself."""
    return FamilyComparison(
        family=family,
        measure=measure,
        scope=scope,
        **asdict(estimate),
        p_adjusted=None,
        method=method,
        change=change,
        towards_stereotype=towards_stereotype,
        verdict=verdict,
        **own,
    )
