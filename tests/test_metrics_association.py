"""WEAT statistics (monitor.families.association.metrics): hand computations, the exact and the
Monte Carlo permutation test, the bootstrap interval, and bias-bench's numbers.

The reference figures below were produced by running McGill-NLP/bias-bench
(291426aab926, ``bias_bench/benchmark/seat/weat.py``, ``run_test`` with n_samples=100000,
i.e. its exact test) on the vectors ``_case`` generates; its code is not part of this
repository.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from monitor.families.association.metrics import (
    association,
    association_measures,
    bootstrap_interval,
    detectable_d_change,
    effect_size,
    paired_difference,
    permutation_test,
)
from monitor.records import ScoreRow

BIAS_BENCH = {  # (|X|=|Y|, |A|=|B|) -> (effect size, p) from bias-bench on the same vectors
    (8, 8): (0.42609872683350286, 0.20256410256410257),
    (6, 7): (0.470373664332855, 0.21753246753246752),
    (4, 5): (-0.9514309740216488, 0.8857142857142857),
}


def _cases():
    rng = np.random.default_rng(11)
    out = {}
    for nx, na in BIAS_BENCH:
        x, y, a, b = (rng.normal(size=(n, 6)) for n in (nx, nx, na, na))
        x[:, 0] += 0.6
        a[:, 0] += 0.6
        y[:, 0] -= 0.6
        b[:, 0] -= 0.6
        out[(nx, na)] = (x, y, a, b)
    return out


@pytest.mark.parametrize("sizes", sorted(BIAS_BENCH))
def test_effect_size_and_exact_p_equal_bias_bench(sizes):
    x, y, a, b = _cases()[sizes]
    sx, sy = association(x, a, b), association(y, a, b)
    d_ref, p_ref = BIAS_BENCH[sizes]
    assert effect_size(sx, sy, ddof=1) == pytest.approx(d_ref, abs=1e-12)
    perm = permutation_test(sx, sy, seed=0)
    assert perm.method == "exact" and perm.p == pytest.approx(p_ref, abs=1e-15)


def test_effect_size_by_hand_and_the_sd_convention():
    sx, sy = [0.3, 0.1, 0.2], [0.0, -0.1]
    pooled = np.array(sx + sy)
    diff = np.mean(sx) - np.mean(sy)
    assert effect_size(sx, sy, 1) == pytest.approx(diff / pooled.std(ddof=1))
    assert effect_size(sx, sy, 0) == pytest.approx(diff / pooled.std(ddof=0))
    assert effect_size([0.1, 0.1], [0.1], 1) is None  # SD 0: undefined, not infinite
    assert effect_size([], [0.1], 1) is None


def test_exact_p_counts_every_unequal_partition():
    sx, sy = [0.5, 0.4, 0.45], [0.1, 0.0, 0.2, 0.05, 0.3]
    values = sx + sy
    observed = sum(sx)
    subsets = list(itertools.combinations(values, 3))
    expected = sum(sum(s) >= observed - 1e-12 for s in subsets) / len(subsets)
    perm = permutation_test(sx, sy, seed=0)
    assert perm.partitions == math.comb(8, 3) and perm.p == pytest.approx(expected)
    assert perm.p == 1 / 56  # the observed split is the most extreme one


def test_monte_carlo_p_is_seeded_and_never_zero():
    rng = np.random.default_rng(5)
    sx, sy = rng.normal(1.0, 1, 20), rng.normal(0, 1, 20)  # C(40, 20) partitions: sampled
    one = permutation_test(sx, sy, seed=7, draws=2000)
    assert one.method == "monte-carlo" and one.evaluated == 2000
    assert one == permutation_test(sx, sy, seed=7, draws=2000)
    assert permutation_test(sx + 10, sy, seed=7, draws=2000).p == 1 / 2001


def test_bootstrap_interval_is_seeded_and_holds_d():
    x, y, a, b = _cases()[(8, 8)]
    sx, sy = association(x, a, b), association(y, a, b)
    ci = bootstrap_interval(sx, sy, ddof=1, seed=3)
    assert ci == bootstrap_interval(sx, sy, ddof=1, seed=3)
    assert ci.low <= effect_size(sx, sy, 1) <= ci.high and ci.method == "bca"
    assert bootstrap_interval(sx, sy, ddof=1, seed=4) != ci


def test_paired_difference_of_identical_runs_is_zero_with_p_one():
    sx, sy = [0.3, 0.2, 0.25, 0.1], [0.0, 0.05, -0.1, 0.02]
    delta, ci, p, sd = paired_difference((sx, sy), (sx, sy), ddof=1, seed=1)
    assert delta == 0 and p == 1.0 and (ci.low, ci.high) == (0, 0) and sd == 0
    # Words that moved in lockstep: any change is detected, so nothing is undetectable.
    assert detectable_d_change(sd, 0.05) == 0
    delta, ci, p, sd = paired_difference((sx, sy), ([v + 0.2 for v in sx], sy), ddof=1, seed=1)
    assert delta > 0 and ci.low <= delta <= ci.high and 0 < p <= 1 and sd > 0


def test_the_minimum_detectable_change_in_d_is_the_bootstrap_sd_times_the_z_sum():
    """(z_0.975 + z_0.80) = 1.95996 + 0.84162 = 2.80158 standard errors of Δd, the SE being
    the SD of the same paired replicates the interval and p come from (recomputed here)."""
    sx, sy = [0.31, 0.22, 0.25, 0.12, 0.28], [0.01, 0.06, -0.1, 0.02, 0.04]
    nx, ny = [0.35, 0.2, 0.3, 0.1, 0.27], [0.0, 0.1, -0.05, 0.06, 0.02]
    *_, sd = paired_difference((sx, sy), (nx, ny), ddof=1, seed=7, resamples=400)
    rng = np.random.default_rng(7)
    ix = rng.integers(0, 5, size=(400, 5))
    iy = rng.integers(0, 5, size=(400, 5))
    ox, oy, mx, my = (np.asarray(v) for v in (sx, sy, nx, ny))
    reps = [
        effect_size(mx[i], my[j], 1) - effect_size(ox[i], oy[j], 1)
        for i, j in zip(ix, iy, strict=True)
    ]
    reps = [r for r in reps if r is not None and np.isfinite(r)]
    assert sd == pytest.approx(float(np.std(reps, ddof=1)), rel=1e-9)
    assert detectable_d_change(sd, 0.05) == pytest.approx(2.801585 * sd, rel=1e-6)
    # A stricter level needs a larger change; no SE, no MDE.
    assert detectable_d_change(sd, 0.01) > detectable_d_change(sd, 0.05)
    assert detectable_d_change(None, 0.05) is None


def _rows(test: str, deltas: dict[str, list[float | None]]):
    rows, axes = [], {}
    for role, values in deltas.items():
        for k, v in enumerate(values):
            item = f"{test}-{role}{k}"
            axes[item] = ("toy", test)
            outcome = "other" if v is None else None
            details = {"role": role, "occurrence": 1 if (role, k) == ("A", 1) else 0}
            rows.append(ScoreRow(item, "weat", "1", outcome, v, details=details))
    return rows, axes


def test_aggregate_reports_sizes_missing_repeats_and_holm():
    r1, a1 = _rows("t1", {"X": [0.3, 0.2, None], "Y": [0.0, -0.1], "A": [0.1, 0.1], "B": [0.2]})
    r2, a2 = _rows("t2", {"X": [0.9, 0.8, 0.85], "Y": [0.0, 0.1, 0.05], "A": [0.1], "B": [0.2]})
    measures = association_measures(r1 + r2, {**a1, **a2}, ddof=1, metric_version="1")
    m1, m2 = measures
    assert (m1.kind, m1.measure, m1.axis) == ("effect_size", "effect_size", "t1")
    assert m1.value == pytest.approx(effect_size([0.3, 0.2], [0.0, -0.1], 1))
    assert m1.details["n_used"] == {"X": 2, "Y": 2, "A": 2, "B": 1}
    assert m1.details["missing"] == {"X": ["t1-X2"]} and m1.details["n_missing"] == 1
    assert m1.details["repeated_terms"] == ["t1-A1"]
    assert m1.ci_low <= m1.value <= m1.ci_high and 0 < m1.p_value <= 1
    holm = sorted([m1.p_value * 2, m2.p_value * 2])
    assert sorted(m.details["p_holm"] for m in measures)[0] == pytest.approx(min(1, holm[0]))
    again = association_measures(r1 + r2, {**a1, **a2}, ddof=1, metric_version="1")
    assert again == measures  # same rows, same draws: identical numbers
