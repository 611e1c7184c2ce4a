"""The drift path's statistics, written on ``scipy.special``, equal their references.

``drift`` and ``report`` no longer import ``scipy.stats`` or statsmodels (≈ 2 s of every
command). What replaced them must give the numbers the library functions give: bit for
bit where the operations are the same (Wilson, BH, the t quantile, the critical counts),
and to the stated relative tolerance where the algorithm differs (McNemar's p from
``bdtr``, the binomial weights from ``gammaln``). The references are imported here, in
the tests, where their cost does not matter. The last test runs a fresh interpreter to
check that the import chain of ``drift`` really stays free of them.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom, binomtest, t
from statsmodels.stats.multitest import multipletests

from monitor.drift import power
from monitor.drift.deltas import paired_delta_test
from monitor.drift.stats import bh_adjust, mcnemar_exact
from monitor.metrics.intervals import wilson


@pytest.mark.parametrize("confidence", [0.95, 0.9, 0.99])
def test_wilson_is_scipys_interval_bit_for_bit(confidence):
    for n in [*range(1, 60), 106, 409, 1508]:
        for k in range(0, n + 1, 1 if n < 60 else 11):
            ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
            assert wilson.__wrapped__(k, n, confidence) == (float(ci.low), float(ci.high))


def test_mcnemar_is_scipys_binomial_test():
    worst_large = worst_tiny = 0.0
    for n in [*range(1, 80), 103, 501, 1508, 3001]:
        for b in range(0, n + 1, 1 if n < 80 else 9):
            ref = binomtest(b, n, 0.5).pvalue
            got = mcnemar_exact(b, n - b)
            # Both underflow to 0 at the extremes of large n: agreement, not 0/0.
            rel = 0.0 if got == ref else abs(got - ref) / ref
            if ref >= 1e-8:
                worst_large = max(worst_large, rel)
            else:
                worst_tiny = max(worst_tiny, rel)
    assert worst_large < 1e-11 and worst_tiny < 1e-10, (worst_large, worst_tiny)


def test_bh_is_statsmodels_fdr_bh_bit_for_bit():
    rng = np.random.default_rng(3)
    for size in (1, 2, 7, 40, 432):
        p = rng.uniform(0, 1, size) ** 3
        p[: size // 4] = p[0]  # ties, which BH must handle the same way
        _, ref, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
        assert bh_adjust(list(p)) == [float(x) for x in ref]


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01, 0.001])
def test_critical_counts_are_binom_ppf(alpha):
    for n in (1, 2, 9, 106, 1508, 3000):
        m = np.arange(n + 1)
        ref = np.where(m > 0, binom.ppf(alpha / 2, m, 0.5) - 1, -1)
        assert np.array_equal(power._critical_counts.__wrapped__(n, alpha), ref)


def test_discordant_weights_are_binom_pmf():
    for n in (1, 10, 103, 1508):
        for psi in (1e-4, 0.01, 0.34, 0.5, 0.99, 1.0):
            m, w = power._discordant_weights.__wrapped__(n, psi)
            np.testing.assert_allclose(w, binom.pmf(m, n, psi), rtol=1e-11, atol=0)
            assert w.sum() == pytest.approx(1.0, abs=1e-12)


def test_delta_interval_uses_the_t_quantile():
    old = {f"i{j}": float(j % 5) for j in range(30)}
    new = {f"i{j}": float(j % 5) + (0.3 if j % 3 else -0.1) for j in range(30)}
    clusters = {f"i{j}": f"t{j % 6}" for j in range(30)}
    got = paired_delta_test(old, new, clusters)
    assert got is not None and got.n_clusters == 6
    means = []
    for c in range(6):
        means.append(np.mean([new[f"i{j}"] - old[f"i{j}"] for j in range(30) if j % 6 == c]))
    # Equal cluster sizes: the interval is mean ± t(5)·sd(cluster means)/√6.
    half = float(t.ppf(0.975, 5)) * np.std(means, ddof=1) / np.sqrt(6)
    assert got.ci_high - got.mean_shift == pytest.approx(half, rel=1e-9)
    assert got.mean_shift - got.ci_low == pytest.approx(half, rel=1e-9)


def test_drift_command_does_not_import_scipy_stats_or_statsmodels():
    code = (
        "import sys, monitor.cli.commands_drift, monitor.drift.session, "
        "monitor.report.input\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('scipy.stats', 'statsmodels')))\n"
        "print(','.join(bad))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "", f"the drift path imports {out}"
