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
flipping the sign of whole clusters (``scipy.stats.permutation_test``, exact when there
are at most 2^13 sign patterns, else 9,999 random patterns with a fixed seed, so a report
is reproducible). Chosen over Wilcoxon signed-rank because it respects the clusters and
needs no symmetry of the changes beyond the null itself; bit-identical reruns (every
x_i = 0) give p = 1 exactly.

The reported shift is the mean change over items with a cluster-robust (CR1) interval
at the comparison's confidence level, using a t quantile with G − 1 degrees of freedom.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.stats import permutation_test, t

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
    if not np.any(means != 0):
        p = 1.0
    else:
        res = permutation_test(
            (means,),
            np.mean,
            permutation_type="samples",
            n_resamples=N_RESAMPLES,
            alternative="two-sided",
            random_state=np.random.default_rng(SEED),
        )
        p = float(min(1.0, res.pvalue))
    low = high = None
    if g >= 2:
        sums = [sum(x - mean for x in v) for v in groups.values()]
        se = math.sqrt(g / (g - 1) * sum(s * s for s in sums)) / n
        q = float(t.ppf(0.5 + confidence / 2, g - 1))
        low, high = mean - q * se, mean + q * se
    return DeltaTest(n, g, mean, low, high, p, confidence)
