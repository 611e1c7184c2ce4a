"""score_items with the real SmolLM2 on the real Indian-BhED caste file.

Slow (one model load per session, shared through ``_models.smollm2``); it checks on real
weights and real items what the tiny-model tests check by hand: batching does not move
a score, and every metric gives one decided row per item.
"""

from __future__ import annotations

import pytest
from _models import smollm2

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.families.pairs.scoring import score_items
from monitor.metrics.intervals import axis_measures
from monitor.scoring import ScoringStats

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def caste_items(shared_datasets, tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("data")
    manifest = load_manifest()
    fetch(manifest, ["bhed-caste"], from_dir=shared_datasets, data_dir=data_dir)
    (bench,) = load_benchmarks(["bhed-caste"], data_dir=data_dir, manifest=manifest)
    return bench.items


def test_cll_scores_do_not_depend_on_batch_size(caste_items) -> None:
    backend = smollm2()
    items = caste_items[:12]
    one = score_items(backend, items, "cll", batch_size=1, chunk_requests=1)
    many = score_items(backend, items, "cll", batch_size=16)
    for a, b in zip(one, many, strict=True):
        assert a.item_id == b.item_id
        assert abs(a.delta - b.delta) <= 1e-4
        assert abs(a.lp_stereo - b.lp_stereo) <= 1e-4
        assert abs(a.prior_anti - b.prior_anti) <= 1e-4


@pytest.mark.parametrize("metric", ["cll", "cll-reference", "ull"])
def test_caste_items_get_decided_rows(caste_items, metric) -> None:
    backend = smollm2()
    items = caste_items[:48]
    stats = ScoringStats()
    chunks: list[int] = []
    rows = score_items(
        backend,
        items,
        metric,
        stats=stats,
        chunk_requests=32,
        on_batch=lambda r: chunks.append(len(r)),
    )
    assert [r.item_id for r in rows] == [it.item_id for it in items]
    # Rows are stored as they finish, over several backend calls, each exactly once.
    assert len(chunks) > 1 and sum(chunks) == len(items) == stats.items
    assert {r.outcome for r in rows} <= {"stereo", "anti"}
    assert all(r.lp_stereo < 0 and r.lp_anti < 0 for r in rows)
    if metric != "ull":
        # The caste file reuses a handful of target words: their priors are shared.
        assert stats.requests_sent < stats.requests_planned - len(items)
    item_axis = {it.item_id: (it.benchmark, it.axis) for it in items}
    bias, tie = axis_measures(rows, item_axis)
    assert (bias.measure, bias.n) == ("bias_rate", len(items))
    assert 0 < bias.value < 1 and bias.ci_low < bias.value < bias.ci_high
    assert (tie.measure, tie.k) == ("tie_rate", 0)
