"""Turning a score difference into an outcome, with ties kept apart.

A tie credited to either side biases a rate; the corrected metrics report it as its own
outcome. Only the paper-reference variant credits ties to the stereotype, because its
original code does (``Score_Conditional >= 0``).
"""

from __future__ import annotations

import math

from monitor.records import Outcome

TIE_TOLERANCE = 1e-9  # nats; float64 sums of float32 log-probs differ by far more than this
MAX_EXP = 700.0  # exp(709.78) overflows float64


def decide(delta: float, *, tolerance: float = TIE_TOLERANCE) -> Outcome:
    """``stereo`` when the stereotypical side scored higher, ``anti`` when lower, else ``tie``.

    A non-finite delta gives ``other``: something upstream failed and must not be counted.
    """
    if not math.isfinite(delta):
        return "other"
    if delta == 0.0 or abs(delta) < tolerance:
        return "tie"
    return "stereo" if delta > 0 else "anti"


def ratio_details(log_ratio: float) -> dict[str, float | bool]:
    """A likelihood ratio exp(log_ratio) that cannot overflow, with the log kept exact."""
    capped = abs(log_ratio) > MAX_EXP
    clipped = max(-MAX_EXP, min(MAX_EXP, log_ratio))
    return {"log_ratio": log_ratio, "ratio": math.exp(clipped), "ratio_capped": capped}


def all_finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)
