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
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.special import stdtrit

N_RESAMPLES = 9_999
SEED = 20240716
_ROW_BLOCK = 1024  # random patterns widened to float64 this many rows at a time
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
    sign_flips: SignFlipBatch | None = None,
    key: Hashable = None,
) -> DeltaTest | None:
    """The test over items with a finite delta in both runs; None when there are none.

    With ``sign_flips`` the p-value is left to that batch under ``key`` (``p_value`` is
    NaN until :meth:`SignFlipBatch.p_values` gives it): a session's many tests then share
    their pattern matrices (see :class:`SignFlipBatch`)."""
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
    if not np.any(means != 0):
        p = 1.0
    elif sign_flips is None:
        p = sign_flip_p(means)
    else:
        sign_flips.add(key, means)
        p = math.nan
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
    if 2**g <= N_RESAMPLES:
        return _p_of_null((2.0 * (_all_patterns(g) @ means) - means.sum()) / g, means, exact=True)
    return _p_of_null(_random_nulls(means[:, None])[:, 0], means, exact=False)


def _p_of_null(null: np.ndarray, means: np.ndarray, *, exact: bool) -> float:
    """The two-sided p of ``means``' mean against its null distribution (scipy's ties)."""
    observed = float(np.mean(means))
    gamma = abs(np.finfo(np.float64).eps * 100 * observed)
    adjustment = 0 if exact else 1
    total = len(null) + adjustment
    less = (np.count_nonzero(null <= observed + gamma) + adjustment) / total
    greater = (np.count_nonzero(null >= observed - gamma) + adjustment) / total
    return float(min(1.0, 2 * min(less, greater)))


class SignFlipBatch:
    """Sign-flip p-values of many tests, computed together.

    A random-pattern null is one matrix-vector product over a 9,999 × G matrix (30 MB at
    G = 383), read from memory again by every test: a year's report runs 432 tests over 9
    cluster counts. Here the tests of one cluster count are one matrix product, so each
    matrix is read once. Each test's p is computed as :func:`sign_flip_p` computes it;
    only the order of the floating-point sums in the product may differ, and the tie
    tolerance is far wider than that. Exact nulls (G ≤ 13, small) stay test by test.
    """

    def __init__(self) -> None:
        self._means: dict[Hashable, np.ndarray] = {}

    def add(self, key: Hashable, means: np.ndarray) -> None:
        """A test's cluster means, its p to be given under ``key``."""
        self._means[key] = means

    def p_values(self) -> dict[Hashable, float]:
        """Every added test's p, by key."""
        by_size: dict[int, list[Hashable]] = defaultdict(list)
        for key, means in self._means.items():
            by_size[len(means)].append(key)
        out: dict[Hashable, float] = {}
        for g, keys in by_size.items():
            if 2**g <= N_RESAMPLES:
                out.update((k, sign_flip_p(self._means[k])) for k in keys)
                continue
            nulls = _random_nulls(np.stack([self._means[k] for k in keys], axis=1))
            for j, k in enumerate(keys):
                out[k] = _p_of_null(nulls[:, j], self._means[k], exact=False)
        return out


@cache
def _all_patterns(g: int) -> np.ndarray:
    """Every one of the 2^g sign patterns as 0/1 rows (g ≤ 13)."""
    return ((np.arange(2**g)[:, None] >> np.arange(g)) & 1).astype(np.float64)


@cache
def _random_patterns(g: int) -> np.ndarray:
    """9,999 random 0/1 patterns of length g from the fixed seed, as bytes (cached per g:
    a report tests many axes of the same sizes)."""
    rng = np.random.default_rng(SEED)
    return rng.integers(0, 2, size=(N_RESAMPLES, g), dtype=np.uint8)


def _random_nulls(block: np.ndarray) -> np.ndarray:
    """The random-pattern null of each column of ``block`` (one test's G cluster means per
    column): ``sign_flip_p`` with one column, ``SignFlipBatch`` with a cluster count's all."""
    g = block.shape[0]
    return (2.0 * _random_products(g, block) - block.sum(axis=0)) / g


def _random_products(g: int, block: np.ndarray) -> np.ndarray:
    """``patterns @ block`` for the random patterns of length g, in float64.

    The patterns stay bytes and are widened a block of rows at a time into one reused
    buffer: a float64 copy of all of them (109 MB for a year's report's 9 sizes) cost
    more to allocate and fill than the products themselves.
    """
    bits = _random_patterns(g)
    out = np.empty((len(bits), block.shape[1]))
    rows = np.empty((_ROW_BLOCK, g))
    for start in range(0, len(bits), _ROW_BLOCK):
        part = bits[start : start + _ROW_BLOCK]
        wide = rows[: len(part)]
        wide[...] = part
        np.matmul(wide, block, out=out[start : start + len(part)])
    return out
