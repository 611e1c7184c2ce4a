"""Drift statistics against published values and hand computations."""

from __future__ import annotations

import math

import pytest

from monitor.drift.stats import (
    bh_adjust,
    count_flips,
    mcnemar_exact,
    newcombe_paired_ci,
    noise_floor,
    paired_difference,
)
from monitor.metrics.intervals import wilson_rate as wilson


def _exact_two_sided(b: int, c: int) -> float:
    """Exact McNemar by hand: twice the smaller binomial tail at 1/2, capped at 1."""
    n, k = b + c, min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def test_mcnemar_caste_study_counts():
    # July vs April caste items: 24 moved away from the stereotype, 11 towards it.
    p = mcnemar_exact(24, 11)
    assert p == pytest.approx(_exact_two_sided(24, 11), rel=1e-12)
    assert round(p, 3) == 0.041
    assert mcnemar_exact(11, 24) == pytest.approx(p)  # symmetric


@pytest.mark.parametrize(("b", "c"), [(5, 0), (0, 7), (3, 3), (10, 2), (1, 40)])
def test_mcnemar_matches_hand_computation(b, c):
    assert mcnemar_exact(b, c) == pytest.approx(_exact_two_sided(b, c), rel=1e-12)


def test_mcnemar_no_flips_is_no_evidence():
    assert mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


def test_wilson_matches_closed_form():
    k, n, z = 84, 103, 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    r = wilson(k, n)
    assert (r.k, r.n, r.value) == (84, 103, pytest.approx(p))
    assert r.ci_low == pytest.approx(centre - half, abs=1e-9)
    assert r.ci_high == pytest.approx(centre + half, abs=1e-9)
    assert wilson(0, 0).value is None
    assert wilson(0, 10).ci_low == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError):
        wilson(5, 3)


def test_newcombe_paired_published_example():
    # Cavo et al. (2012) table, Fagerland, Lydersen & Laake (2017) ch. 8, as checked by the
    # R package contingencytables: estimate -0.0621 (95% CI -0.1186 to -0.0046).
    delta, low, high = newcombe_paired_ci(59, 6, 16, 80)
    assert round(delta, 4) == -0.0621
    assert round(low, 4) == -0.1186
    assert round(high, 4) == -0.0046


def test_newcombe_paired_negative_correlation_branch():
    # A < 0 takes phi = A / sqrt(margins); by symmetry swapping the discordant cells
    # mirrors the interval around 0.
    d1, l1, h1 = newcombe_paired_ci(2, 30, 10, 3)
    d2, l2, h2 = newcombe_paired_ci(2, 10, 30, 3)
    assert d1 == pytest.approx(-d2)
    assert (l1, h1) == (pytest.approx(-h2), pytest.approx(-l2))
    assert l1 < d1 < h1


def test_paired_difference_orientation():
    # b = stereo→anti lowers the new rate; c = anti→stereo raises it.
    d = paired_difference(both_stereo=60, b=24, c=11, both_anti=8)
    assert d.n == 103
    assert d.p_old == pytest.approx(84 / 103)
    assert d.p_new == pytest.approx(71 / 103)
    assert d.delta == pytest.approx((11 - 24) / 103)
    assert d.ci_low < d.delta < d.ci_high < 0
    assert paired_difference(0, 0, 0, 0).delta is None


def test_bh_against_hand_computation():
    # Sorted: 0.005 (rank 1), 0.01 (2), 0.03 (3), 0.04 (4); m = 4.
    # p*m/rank: 0.02, 0.02, 0.04, 0.04; then running minimum from the top.
    got = bh_adjust([0.01, 0.04, 0.03, 0.005])
    assert got == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_bh_leaves_untested_out_of_the_family():
    got = bh_adjust([0.04, None, 0.5])
    # Family of two: 0.04*2/1 = 0.08, 0.5*2/2 = 0.5.
    assert got[1] is None
    assert got[0] == pytest.approx(0.08)
    assert got[2] == pytest.approx(0.5)
    assert bh_adjust([]) == []
    assert bh_adjust([None]) == [None]


def test_count_flips_only_counts_items_decided_in_both():
    old = {"a": "stereo", "b": "stereo", "c": "anti", "d": "anti", "e": "other", "f": "stereo"}
    new = {"a": "stereo", "b": "anti", "c": "stereo", "d": "anti", "e": "stereo", "g": "anti"}
    f = count_flips(old, new)
    assert f.n_overlap == 5  # a..e
    assert (f.both_stereo, f.both_anti, f.to_anti, f.to_stereo) == (1, 1, ("b",), ("c",))
    assert f.n_paired == 4
    assert f.flip_rate == pytest.approx(0.5)


def test_noise_floor_from_repeats():
    items = [f"i{n}" for n in range(20)]
    r1 = dict.fromkeys(items, "stereo")
    r2 = {**r1, "i0": "anti", "i1": "anti"}  # 2 flips vs r1
    r3 = {**r1, "i0": "anti"}  # 1 flip vs r1, 1 vs r2
    nf = noise_floor([r1, r2, r3])
    assert nf is not None
    assert nf.n_runs == 3 and nf.n_pairs == 3
    assert nf.pair_rates == pytest.approx((0.1, 0.05, 0.05))
    assert nf.mean == pytest.approx(0.2 / 3)
    assert nf.max == pytest.approx(0.1)
    assert (nf.pooled_flips, nf.pooled_n) == (4, 60)
    # One-sided 95% Wilson upper bound of 4/60 (two-sided 90% interval) exceeds 0.1.
    expected = wilson(4, 60, confidence=0.90).ci_high
    assert nf.upper == pytest.approx(max(0.1, expected))
    assert noise_floor([r1]) is None


def test_noise_floor_of_identical_repeats_is_not_zero():
    r = {f"i{n}": "stereo" for n in range(50)}
    nf = noise_floor([r, dict(r)])
    assert nf is not None and nf.max == 0.0
    assert 0.0 < nf.upper < 0.1
