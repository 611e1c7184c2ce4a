"""compare_runs / default_baseline / verdicts on runs written to a real DuckDB file.

The items are neutral synthetic pairs (no benchmark text), so these tests can state the
exact flips they expect; the real-data comparison is in test_import_caste_bias.py.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from monitor.benchmarks.items import Item, source_version
from monitor.contract.capabilities import CompareRequest
from monitor.drift.baselines import default_baseline as drift_default_baseline
from monitor.drift.compare import adjust_family
from monitor.drift.deltas import paired_delta_test
from monitor.drift.stats import NoiseFloor
from monitor.drift.verdicts import comparability, decide
from monitor.errors import UserInputError
from monitor.families.pairs.compare import compare_runs
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store

VERSION = "synthetic@000000000000:000000000000:errata-none"
N_ITEMS = 100


def _items(version: str = VERSION, n: int = N_ITEMS, axis: str = "caste") -> list[Item]:
    out = []
    for i in range(n):
        s, a = f"{axis} person {i} picked red.", f"{axis} person {i} picked blue."
        out.append(
            PairItem(
                item_id=make_item_id(version, s, a),
                benchmark=f"synthetic-{axis}",
                axis=axis,
                region="india",
                benchmark_version=version,
                source_row=i,
                text_stereo=s,
                text_anti=a,
                targets_stereo=("red",),
                targets_anti=("blue",),
                template=f"{axis} person {i} picked MASK.",
            )
        )
    return out


@pytest.fixture
def con(tmp_path) -> Store:
    return Store(tmp_path / "drift.duckdb")


def compare(store: Store, new: str, old: str, **kwargs):
    with store.read() as view:
        return compare_runs(CompareRequest(view, new, old, **kwargs))


def default_baseline(store: Store, run_id: str) -> str | None:
    with store.read() as view:
        return drift_default_baseline(view, run_id)


def run_row(store: Store, run_id: str):
    with store.read() as view:
        return view.run(run_id)


def _write(
    con,
    run_id: str,
    outcomes: list[str],
    *,
    day: int,
    items: list[Item] | None = None,
    status: str = "complete",
    metric: str = "cll",
    metric_version: str = "1",
    snapshot: str = "smollm2",
    repeat_group: str | None = None,
    repeat_index: int = 0,
    environment: dict | None = None,
    origin: str = "local",
    deltas: list[float] | None = None,
) -> str:
    items = items if items is not None else _items()
    run = RunRecord(
        run_id=run_id,
        snapshot_id=snapshot,
        snapshot_kind="hf-causal",
        snapshot_revision="pkg==1:file#sha256=aa",
        snapshot_manifest={"id": snapshot},
        metric=metric,
        metric_version=metric_version,
        benchmarks=sorted({i.benchmark for i in items}),
        dataset_versions={},
        fingerprint=f"fp-{run_id}",
        trigger="manual",
        started_at=datetime(2025, 1, day, tzinfo=UTC),
        repeat_group=repeat_group,
        repeat_index=repeat_index,
        environment=environment or {"packages": {"torch": "2.13.0"}},
        origin=origin,
        status=status,
    )
    scores = [
        ScoreRow(item.item_id, metric, metric_version, outcome, delta)
        for item, outcome, delta in zip(items, outcomes, deltas or [None] * len(items), strict=True)
    ]
    con.record_run(run, items=items, scores=scores, exclusions=[])
    return run_id


def _flip(outcomes: list[str], idx: range | list[int]) -> list[str]:
    out = list(outcomes)
    for i in idx:
        out[i] = "anti" if out[i] == "stereo" else "stereo"
    return out


BASE = ["stereo"] * 50 + ["anti"] * 50


def test_regression_is_flagged_with_flipped_ids(con):
    _write(con, "old", BASE, day=1)
    new = _flip(BASE, range(50, 70))  # 20 anti → stereo, none back
    _write(con, "new", new, day=2)
    [comp] = compare(con, "new", "old")
    assert (comp.benchmark, comp.axis) == ("synthetic-caste", "caste")
    assert (comp.items_both, comp.n_paired, comp.b, comp.c) == (100, 100, 0, 20)
    ids = [i.item_id for i in _items()]
    assert set(comp.flipped_to_stereo) == set(ids[50:70])
    assert comp.flipped_to_anti == ()
    assert comp.p_value == pytest.approx(2 * 0.5**20)
    assert comp.p_adjusted == pytest.approx(comp.p_value)  # family of one
    assert comp.rate_old.value == pytest.approx(0.5)
    assert comp.rate_new.value == pytest.approx(0.7)
    assert comp.paired.delta == pytest.approx(0.2)
    assert comp.verdict.label == "regression"
    assert "no noise floor" in comp.verdict.reason
    # Only bookkeeping fields differ: nothing to attribute the change to.
    assert comp.attribution == "no provenance change"


def test_delta_test_of_a_pair_is_complete(con):
    # compare_runs on its own (no session batch) returns the delta test with its p, the
    # same p the test gives alone; a shift of every delta is found though nothing flips.
    import random

    rng = random.Random(3)
    old = [rng.uniform(0.5, 2.0) for _ in range(N_ITEMS)]
    new = [d + 0.3 + rng.gauss(0.0, 0.2) for d in old]
    _write(con, "r1", ["stereo"] * N_ITEMS, day=1, deltas=old)
    _write(con, "r2", ["stereo"] * N_ITEMS, day=2, deltas=new)
    (c,) = compare(con, "r2", "r1")
    ids = [i.item_id for i in _items()]
    alone = paired_delta_test(
        dict(zip(ids, old, strict=True)), dict(zip(ids, new, strict=True)), {}
    )
    assert c.delta_test is not None and c.b == c.c == 0
    assert c.delta_test.p_value == alone.p_value < 0.01
    assert c.delta_test.n_items == N_ITEMS


def test_improvement_and_no_change(con):
    _write(con, "old", BASE, day=1)
    _write(con, "better", _flip(BASE, range(0, 15)), day=2)
    _write(con, "same", _flip(BASE, [0, 1, 50]), day=3)
    [better] = compare(con, "better", "old")
    assert (better.b, better.c, better.verdict.label) == (15, 0, "improvement")
    [same] = compare(con, "same", "old")
    assert (same.b, same.c) == (2, 1)
    assert same.verdict.label == "no significant change"
    assert "BH-adjusted p = 1" in same.verdict.reason


def test_noise_floor_from_repeat_group_blocks_a_small_drift(con):
    # Three repeats of the baseline disagree on up to 20% of items with nothing changed.
    _write(con, "rep0", BASE, day=1, repeat_group="g", repeat_index=0)
    _write(con, "rep1", _flip(BASE, range(0, 10)), day=1, repeat_group="g", repeat_index=1)
    _write(con, "rep2", _flip(BASE, range(50, 60)), day=1, repeat_group="g", repeat_index=2)
    new = _flip(BASE, range(50, 62))  # 12 anti→stereo: p < 0.001 but 12% flips
    _write(con, "new", new, day=2)
    assert default_baseline(con, "new") == "rep2"
    [comp] = compare(con, "new", "rep0")
    assert comp.p_adjusted < 0.001
    assert comp.noise is not None and comp.noise.n_runs == 3
    assert comp.noise.max == pytest.approx(0.2)
    assert comp.verdict.label == "no significant change"
    assert "within the noise floor" in comp.verdict.reason


def test_not_comparable_cases(con):
    _write(con, "old", BASE, day=1)
    _write(con, "other-metric", BASE, day=2, metric="aul")
    _write(con, "other-version", BASE, day=3, metric_version="2")
    [c] = compare(con, "other-metric", "old")
    assert c.verdict.label == "not comparable" and "different metrics" in c.verdict.reason
    assert c.p_value is None and c.p_adjusted is None
    [c] = compare(con, "other-version", "old")
    assert c.verdict.label == "not comparable" and "versions of metric" in c.verdict.reason

    # Same benchmark, new file version: every item id differs.
    v2 = "synthetic@000000000000:111111111111:errata-none"
    _write(con, "new-data", BASE, day=4, items=_items(version=v2))
    [c] = compare(con, "new-data", "old")
    assert c.verdict.label == "not comparable"
    assert "different benchmark versions" in c.verdict.reason

    # Only 60 of the 100 items scored: 60% overlap < 80%.
    _write(con, "subset", BASE[:60], day=5, items=_items()[:60])
    [c] = compare(con, "subset", "old")
    assert c.verdict.label == "not comparable" and "item sets differ" in c.verdict.reason


def test_axes_are_adjusted_together(con):
    caste, religion = _items(axis="caste"), _items(axis="religion", n=100)
    both = caste + religion
    old = BASE + BASE
    # Caste: 8 anti→stereo (p = 0.0078); religion: 3 (p = 0.25).
    new = _flip(BASE, range(50, 58)) + _flip(BASE, range(50, 53))
    _write(con, "old", old, day=1, items=both)
    _write(con, "new", new, day=2, items=both)
    comps = {c.axis: c for c in compare(con, "new", "old")}
    assert comps["caste"].p_value == pytest.approx(2 * 0.5**8)
    assert comps["caste"].p_adjusted == pytest.approx(min(2 * 2 * 0.5**8, 0.25))
    assert comps["caste"].verdict.label == "regression"
    # Adjusted again in a larger family (e.g. a report over many snapshots), it is not.
    family = adjust_family([comps["caste"], comps["religion"]] + [comps["religion"]] * 6)
    assert family[0].p_adjusted == pytest.approx(8 * 2 * 0.5**8)
    assert family[0].verdict.label == "no significant change"


def test_default_baseline_rules(con):
    _write(con, "q", BASE, day=1)
    _write(con, "a", BASE, day=2)
    _write(con, "quarantined", BASE, day=3, status="quarantined")
    _write(con, "failed", BASE, day=4, status="failed")
    _write(con, "other-snapshot", BASE, day=5, snapshot="gemma")
    _write(con, "other-metric", BASE, day=6, metric="aul")
    _write(con, "new", BASE, day=7)
    _write(con, "later", BASE, day=8)
    # Latest earlier complete run of the snapshot with the same metric.
    assert default_baseline(con, "new") == "a"
    assert default_baseline(con, "q") is None
    with pytest.raises(UserInputError):
        default_baseline(con, "nope")


def test_environment_drift_attribution_for_pinned_local_runs(con):
    _write(con, "old", BASE, day=1)
    _write(
        con, "new", _flip(BASE, range(50, 70)), day=2, environment={"packages": {"torch": "2.14.0"}}
    )
    [comp] = compare(con, "new", "old")
    assert comp.verdict.label == "regression"
    assert comp.attribution == "environment drift"
    changed = {c.field for c in comp.provenance.changes if c.category == "environment"}
    assert changed == {"environment.packages.torch"}


def test_run_row_reads_timestamps_as_utc(con):
    _write(con, "old", BASE, day=3)
    row = run_row(con, "old")
    assert row["started_at"] == datetime(2025, 1, 3, tzinfo=UTC)
    assert row["environment"] == {"packages": {"torch": "2.13.0"}}


def test_decide_and_comparability_directly():
    nf = NoiseFloor(2, 1, (0.05,), 0.05, 0.05, 5, 100, 0.1)
    assert decide(b=0, c=20, n_paired=100, p_adjusted=0.001, alpha=0.05, noise=nf).label == (
        "regression"
    )
    assert decide(b=0, c=9, n_paired=100, p_adjusted=0.004, alpha=0.05, noise=nf).label == (
        "no significant change"
    )
    assert decide(b=20, c=0, n_paired=100, p_adjusted=0.04, alpha=0.05, noise=None).label == (
        "improvement"
    )
    ok = dict(
        metric_old=("m", "1"),
        metric_new=("m", "1"),
        versions_old={"v"},
        versions_new={"v"},
        items_old=10,
        items_new=10,
        items_both=10,
        n_paired=10,
    )
    assert comparability(**ok) is None
    assert comparability(**{**ok, "items_both": 0}).label == "not comparable"
    assert "no item was decided" in comparability(**{**ok, "n_paired": 0}).reason


def test_errata_version_alone_does_not_block_comparison():
    # Ids do not depend on errata, so only the source part of the label is compared.
    assert source_version("bhed-caste@458472b1e765:ea3594374e4e:errata-1") == (
        "bhed-caste@458472b1e765:ea3594374e4e"
    )
    assert source_version("no-errata-part") == "no-errata-part"
