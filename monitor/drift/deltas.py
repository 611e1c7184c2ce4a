"""A paired test on continuous per-item scores, beside McNemar (pure).

For local models (``cll``, ``ull``, ``aul``) each item has a continuous score difference
``delta`` (stereo − anti, in nats for log-likelihoods), and McNemar only sees the items
whose sign changed. A shift of every item's delta in one direction that flips few
items is real and invisible to McNemar. So every comparison of two runs of a metric
that declares ``delta`` among its required numbers (``MetricSpec.numbers``) also tests
the per-item changes x_i = delta_new − delta_old.

**Test: a sign-flip permutation test on template clusters.** Under "no change" the
sign of each x_i is as likely + as −; items filled from one template (India_Religious)
are not independent, so the unit that is flipped is the cluster: the statistic is the
mean over clusters of each cluster's mean change, and its null distribution comes from
flipping the sign of whole clusters: exact over all 2^G sign patterns when there are at
most 2^13 of them, else over 9,999 random patterns drawn from a fixed seed, so a report
is reproducible. The p-value is ``scipy.stats.permutation_test``'s (two-sided, its
``+1`` adjustment for random patterns, its tolerance for ties); the null distribution is
computed here as one matrix product over the sign patterns, because scipy evaluates the
statistic pattern by pattern and a year-long store's report makes hundreds of these
tests (exact cases give scipy's p bit for bit; random ones agree within Monte Carlo
error, tests/test_drift_clusters_deltas.py). Chosen over Wilcoxon signed-rank because
it respects the clusters and needs no symmetry of the changes beyond the null itself;
bit-identical reruns (every
x_i = 0) give p = 1 exactly.

The reported shift is the mean change over items with a cluster-robust (CR1) interval
at the comparison's confidence level, using a t quantile with G − 1 degrees of freedom.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.special import stdtrit

N_RESAMPLES = 9_999
SEED = 20240716
METHOD = "sign-flip permutation test on template-cluster means of delta_new − delta_old"


@dataclass(frozen=True)
class DeltaTest:
    """Paired test of the per-item change in the continuous score (delta)."""

    n_items: int
    n_clusters: int
    mean_shift: float  # mean of delta_new − delta_old over items
    ci_low: float | None
    ci_high: float | None
    p_value: float
    confidence: float
    method: str = METHOD


def paired_delta_test(
    old: Mapping[str, float | None],
    new: Mapping[str, float | None],
    clusters: Mapping[str, str],
    *,
    confidence: float = 0.95,
) -> DeltaTest | None:
    """The test over items with a finite delta in both runs; None when there are none."""
    changes: dict[str, float] = {}
    for item in sorted(set(old) & set(new)):
        a, b = old[item], new[item]
        if a is None or b is None or not (math.isfinite(a) and math.isfinite(b)):
            continue
        changes[item] = b - a
    if not changes:
        return None
    groups: dict[str, list[float]] = defaultdict(list)
    for item, x in changes.items():
        groups[clusters.get(item, f"item:{item}")].append(x)
    means = np.array([sum(v) / len(v) for v in groups.values()])
    n, g = len(changes), len(groups)
    mean = sum(changes.values()) / n
    p = 1.0 if not np.any(means != 0) else sign_flip_p(means)
    low = high = None
    if g >= 2:
        sums = [sum(x - mean for x in v) for v in groups.values()]
        se = math.sqrt(g / (g - 1) * sum(s * s for s in sums)) / n
        q = float(stdtrit(g - 1, 0.5 + confidence / 2))  # t.ppf, without scipy.stats
        low, high = mean - q * se, mean + q * se
    return DeltaTest(n, g, mean, low, high, p, confidence)


def sign_flip_p(means: np.ndarray) -> float:
    """Two-sided p of the mean of ``means`` under random signs (see the module docstring).

    Pattern matrices are rows of 0/1 bits b, signs 2b − 1, so each pattern's sum is
    2·(b·means) − Σ means: one matrix product per block of patterns.
    """
    g = len(means)
    observed = float(np.mean(means))
    exact = 2**g <= N_RESAMPLES
    bits = _all_patterns(g) if exact else _random_patterns(g)
    null = (2.0 * (bits @ means) - means.sum()) / g
    gamma = abs(np.finfo(np.float64).eps * 100 * observed)
    adjustment = 0 if exact else 1
    total = len(null) + adjustment
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / total
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / total
    return float(min(1.0, 2 * min(less, greater)))


@cache
def _all_patterns(g: int) -> np.ndarray:
    """Every one of the 2^g sign patterns as 0/1 rows (g ≤ 13)."""
    return ((np.arange(2**g)[:, None] >> np.arange(g)) & 1).astype(np.float64)


@cache
def _random_patterns(g: int) -> np.ndarray:
    """9,999 random 0/1 patterns of length g from the fixed seed (cached per g: a report
    tests many axes of the same sizes)."""
    rng = np.random.default_rng(SEED)
    return rng.integers(0, 2, size=(N_RESAMPLES, g), dtype=np.uint8).astype(np.float64)
