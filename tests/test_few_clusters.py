"""Known answers for the few-cluster intervals (``monitor.metrics.few_clusters``), pure.

A ``--size mini`` choice-question run keeps 4 templates per category. The simulation
draws such runs: 4 clusters of 8 or 10 items, each cluster's own rate drawn around a
known true rate (beta, intra-cluster correlation ρ from 0 to 0.3, seeded), and counts
how often each interval covers the true rate. The effective-n Wilson interval must cover
it at least 93% of the time for a nominal 95% in every cell; the cluster bootstrap the
family used before (percentile, whole clusters resampled) is shown to fall far short on
the same draws, so the test can tell the two apart.
"""

from __future__ import annotations

import numpy as np
import pytest

from monitor.metrics.few_clusters import (
    design_effect,
    effective_rate,
    smallest_sign_flip_p,
    wilson_float,
)
from monitor.metrics.intervals import wilson

CLUSTERS = 4
REPLICATES = 2000
RATES = (0.05, 0.2, 0.5, 0.8)
ICCS = (0.0, 0.1, 0.3)


def _draw(rng, p: float, rho: float, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster successes and items for REPLICATES runs of CLUSTERS clusters."""
    if rho > 0:
        a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
        rates = rng.beta(a, b, size=(REPLICATES, CLUSTERS))
    else:
        rates = np.full((REPLICATES, CLUSTERS), p)
    n = np.full((REPLICATES, CLUSTERS), size)
    return rng.binomial(n, rates), n


def _bootstrap_covers(rng, k: np.ndarray, n: np.ndarray, p: float) -> bool:
    draws = rng.integers(0, CLUSTERS, size=(500, CLUSTERS))
    low, high = np.percentile(k[draws].sum(axis=1) / n[draws].sum(axis=1), [2.5, 97.5])
    return bool(low <= p <= high)


@pytest.mark.parametrize("size", [8, 10])
def test_four_clusters_cover_the_true_rate_at_least_93_percent(size):
    rng = np.random.default_rng(20261128 + size)
    worst_boot = 1.0
    for p in RATES:
        for rho in ICCS:
            k, n = _draw(rng, p, rho, size)
            covered = boot = 0
            for ks, ns in zip(k, n, strict=True):
                r = effective_rate(ks, ns)
                assert r is not None and r.ci_high > r.ci_low  # never of width zero
                assert CLUSTERS <= r.n_effective <= ns.sum()
                covered += r.ci_low <= p <= r.ci_high
                boot += _bootstrap_covers(rng, ks, ns, p)
            assert covered / REPLICATES >= 0.93, (size, p, rho, covered / REPLICATES)
            worst_boot = min(worst_boot, boot / REPLICATES)
    # The interval it replaces, on the same draws: far below its nominal 95%.
    assert worst_boot < 0.8


def test_every_cluster_agreeing_still_has_an_interval():
    """The case a mini run printed as 0.0% [0.0, 0.0] and 50.0% [50.0, 50.0]."""
    none = effective_rate(np.zeros(4), np.full(4, 8))
    assert none is not None and none.value == 0 and none.ci_low == 0 and none.ci_high > 0.2
    half = effective_rate(np.full(4, 4), np.full(4, 8))
    assert half is not None and half.ci_low < 0.3 and half.ci_high > 0.7


def test_design_effect_and_wilson_reduce_to_the_plain_case():
    # One item per cluster: no clustering, design effect 1.
    k = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1])
    assert design_effect(k, np.ones(12)) == pytest.approx(1.0, abs=0.1)
    # Clusters that are all-or-nothing: the design effect is the cluster size.
    k = np.array([8, 0, 8, 0, 8, 0])
    assert design_effect(k, np.full(6, 8)) == pytest.approx(8 * 6 / 5)
    # At the normal critical value and an integer n, the float Wilson is the monitor's.
    z = 1.959963984540054
    for kk, nn in ((0, 10), (3, 10), (10, 10), (7, 40)):
        assert wilson_float(kk / nn, nn, z) == pytest.approx(wilson(kk, nn), abs=1e-12)


def test_smallest_sign_flip_p():
    assert smallest_sign_flip_p(4) == 0.125  # four templates: no verdict at 0.05
    assert smallest_sign_flip_p(5) == 0.0625
    assert smallest_sign_flip_p(6) < 0.05
    assert smallest_sign_flip_p(20) == pytest.approx(1 / 10_000)
