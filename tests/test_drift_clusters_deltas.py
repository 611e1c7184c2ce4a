"""Shared templates as clusters, and the paired test on continuous per-item deltas.

The cluster structure is taken from the real India_Religious file (after the loader's
exclusions: 121 items from 107 templates, 12 of them used 2–3 times), so the design
effect is checked on the clustering the monitor meets.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.drift.clusters import design_effect, widen
from monitor.drift.deltas import paired_delta_test


@pytest.fixture(scope="module")
def religion(tmp_path_factory, shared_datasets):
    data = tmp_path_factory.mktemp("data")
    fetch(load_manifest(), ["bhed-religion"], from_dir=shared_datasets, data_dir=data)
    (bench,) = load_benchmarks(["bhed-religion"], data_dir=data)
    return bench.items


def test_india_religious_shares_templates(religion):
    sizes = Counter(it.template for it in religion)
    assert (len(religion), len(sizes)) == (121, 107)
    assert sorted(v for v in sizes.values() if v > 1) == [2] * 10 + [3] * 2


def test_clustered_flips_raise_the_design_effect(religion):
    templates = {it.item_id: it.template for it in religion}
    by_template: dict[str, list[str]] = {}
    for it in religion:
        by_template.setdefault(it.template, []).append(it.item_id)
    shared = [ids for ids in by_template.values() if len(ids) > 1]
    # Every copy of the shared templates flips together; everything else stays.
    d = {it.item_id: 0 for it in religion}
    for ids in shared[:6]:
        for i in ids:
            d[i] = 1
    clustered = design_effect(d, templates)
    assert clustered.clustered and clustered.design_effect > 2
    # The same number of flips spread over singleton templates: no design effect.
    singles = [ids[0] for ids in by_template.values() if len(ids) == 1]
    n_flips = sum(d.values())
    spread = {it.item_id: 0 for it in religion}
    for i in singles[:n_flips]:
        spread[i] = 1
    assert design_effect(spread, templates).design_effect == pytest.approx(1.0, abs=0.05)
    # No clusters at all (caste): exactly 1.
    assert design_effect({"a": 1, "b": 0, "c": -1}, {}).design_effect == 1.0


def test_widen_scales_each_side():
    assert widen(-0.1, -0.2, 0.05, 4.0) == pytest.approx((-0.3, 0.2))
    assert widen(0.9, 0.8, 0.95, 100.0)[1] == 1.0
    assert widen(0.1, 0.0, 0.2, 0.5) == (0.0, 0.2)  # never narrower


def test_delta_test_bit_identical_and_shifted(religion):
    rng = np.random.default_rng(3)
    templates = {it.item_id: it.template for it in religion}
    old = {it.item_id: float(rng.normal()) for it in religion}
    same = paired_delta_test(old, dict(old), templates)
    assert same is not None and same.p_value == 1.0 and same.mean_shift == 0.0
    shifted = {k: v + 0.3 + rng.normal(scale=0.2) for k, v in old.items()}
    t = paired_delta_test(old, shifted, templates)
    assert t is not None and t.p_value < 0.001
    assert t.n_items == len(religion) and t.n_clusters < len(religion)
    assert t.ci_low < t.mean_shift < t.ci_high and t.ci_low > 0
    noise = {k: v + rng.normal(scale=0.2) for k, v in old.items()}
    assert paired_delta_test(old, noise, templates).p_value > 0.01


def test_delta_test_counts_clusters_not_items():
    # 2 clusters of 50 items each: only 4 sign patterns exist, so p cannot go below 0.5.
    old = {f"i{k}": 0.0 for k in range(100)}
    new = {f"i{k}": 1.0 for k in range(100)}
    clusters = {f"i{k}": "A" if k < 50 else "B" for k in range(100)}
    t = paired_delta_test(old, new, clusters)
    assert t.n_clusters == 2 and t.p_value == pytest.approx(0.5)
    assert paired_delta_test(old, new, {}).p_value < 0.001  # as 100 independent items
    missing = {"a": None, "b": math.nan}
    assert paired_delta_test(missing, missing, {}) is None


def _scipy_p(means, **kwargs) -> float:
    """The reference: scipy's sign-flip test of the mean (9,999 patterns unless exact)."""
    from scipy.stats import permutation_test

    res = permutation_test(
        (means,), np.mean, permutation_type="samples", n_resamples=9_999,
        alternative="two-sided", **kwargs,
    )  # fmt: skip
    return min(1.0, float(res.pvalue))


@pytest.mark.parametrize("g", [2, 5, 13])
def test_sign_flip_p_is_scipys_exact_test_bit_for_bit(g):
    from monitor.drift.deltas import sign_flip_p

    rng = np.random.default_rng(g)
    for shift in (0.0, 0.4, 1.5):
        means = rng.normal(shift, 1.0, size=g)
        assert sign_flip_p(means) == _scipy_p(means)


@pytest.mark.parametrize("g", [14, 60, 400])
def test_sign_flip_p_agrees_with_scipy_within_monte_carlo_error(g):
    # Random sign patterns (2^g > 9,999): both draw 9,999 of them, from different
    # streams, so the p-values differ by Monte Carlo error only (sd <= 0.005 each).
    from monitor.drift.deltas import SEED, sign_flip_p

    rng = np.random.default_rng(g)
    for shift in (0.0, 0.1, 0.25):
        means = rng.normal(shift, 1.0, size=g)
        ref = _scipy_p(means, random_state=np.random.default_rng(SEED))
        assert sign_flip_p(means) == pytest.approx(ref, abs=0.03)
    # a clear shift is found, a null one is not
    assert sign_flip_p(rng.normal(1.0, 1.0, size=g)) < 0.01
    assert sign_flip_p(rng.normal(0.0, 1.0, size=g) * 1e-3) > 0.001


def test_one_cluster_gives_p_one_instead_of_an_error():
    # scipy's permutation_test refuses one observation; every item of an axis from one
    # template is a legitimate input (two sign patterns: p = 1).
    old = {f"i{k}": 0.0 for k in range(5)}
    new = {f"i{k}": 1.0 for k in range(5)}
    t = paired_delta_test(old, new, dict.fromkeys(old, "T"))
    assert t is not None and t.n_clusters == 1 and t.p_value == 1.0


def test_sign_flip_batch_gives_each_tests_own_p():
    # A drift session's tests share one SignFlipBatch: tests of one cluster count are one
    # matrix product. Each must get the p it gets alone, whatever else is in the batch
    # (several sizes, exact and random nulls, a test alone in its size, shifts from none
    # to clear), and a delta test left to the batch says so with a NaN until then.
    from monitor.drift.deltas import SignFlipBatch, sign_flip_p

    rng = np.random.default_rng(7)
    batch, alone = SignFlipBatch(), {}
    for g, shifts in (
        (9, (0.0, 0.8)),
        (60, (0.0, 0.1, 0.3, 1.0)),
        (383, (0.0, 0.05, 0.2)),
        (21, (0.5,)),
    ):
        for shift in shifts:
            means = rng.normal(shift, 1.0, size=g)
            batch.add((g, shift), means)
            alone[(g, shift)] = sign_flip_p(means)
    got = batch.p_values()
    assert got == alone
    assert len({p for p in got.values()}) > 5  # not one value for all

    old = {f"i{k}": float(k) for k in range(40)}
    new = {i: v + rng.normal(0.2, 1.0) for i, v in old.items()}
    deferred = SignFlipBatch()
    pending = paired_delta_test(old, new, {}, sign_flips=deferred, key="axis")
    assert pending is not None and math.isnan(pending.p_value)
    assert deferred.p_values() == {"axis": paired_delta_test(old, new, {}).p_value}
