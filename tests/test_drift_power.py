"""What a comparison could have detected: the exact McNemar MDE at 80% power.

The exact figure is checked against what it promises (the power at the MDE is 80%, just
below it less), against Connor's (1987) normal approximation, and against a Monte Carlo
simulation of the very test the monitor runs (scipy's exact binomial test).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from monitor.drift.power import connor_mde, mcnemar_mde, mcnemar_power


def test_power_at_the_mde_is_eighty_percent():
    d = mcnemar_mde(103, 24, 11)  # April → July of the caste study
    assert d.n == d.n_effective == 103 and d.discordance == pytest.approx(35 / 103)
    assert d.mde is not None and 0.15 < d.mde < 0.18
    assert mcnemar_power(103, 35 / 103, d.mde, 0.05) == pytest.approx(0.80, abs=1e-3)
    assert mcnemar_power(103, 35 / 103, d.mde - 0.02, 0.05) < 0.75


def test_exact_mde_is_close_to_connors_approximation():
    for n, b, c in ((103, 24, 11), (400, 30, 20), (1508, 300, 280)):
        exact = mcnemar_mde(n, b, c).mde
        approx = connor_mde(n, (b + c) / n)
        assert exact == pytest.approx(approx, rel=0.12), (n, b, c)


def test_power_matches_a_simulation_of_the_exact_test():
    rng = np.random.default_rng(7)
    n, psi, delta = 120, 0.3, 0.12
    hits = 0
    trials = 2000
    for _ in range(trials):
        m = rng.binomial(n, psi)
        c = rng.binomial(m, (1 + delta / psi) / 2)
        if m and binomtest(c, m, 0.5).pvalue < 0.05:
            hits += 1
    assert mcnemar_power(n, psi, delta, 0.05) == pytest.approx(hits / trials, abs=0.03)


def test_identical_runs_still_bound_what_could_be_seen():
    # Bit-identical reruns (no discordance): a change would have to move items one way;
    # 106 caste items detect about 7 points.
    d = mcnemar_mde(106, 0, 0)
    assert d.discordance == 0 and d.mde is not None and 0.05 < d.mde < 0.09


def test_too_few_items_detect_nothing_and_clusters_shrink_n():
    assert mcnemar_mde(5, 0, 0).mde is None
    assert mcnemar_mde(0, 0, 0).mde is None
    plain, clustered = mcnemar_mde(120, 20, 10), mcnemar_mde(120, 20, 10, design_effect=1.5)
    assert clustered.n_effective == 80 and clustered.mde > plain.mde
    # More items, smaller detectable change.
    assert mcnemar_mde(400, 40, 40).mde < mcnemar_mde(100, 10, 10).mde
