"""A run's measures from rows: hand-counted rates, the balanced rate and its interval."""

from __future__ import annotations

import math

import pytest
from bias_monitor_statements.measures import run_measures, stance_measures

from monitor.benchmarks.items import Item
from monitor.metrics.intervals import wilson
from monitor.records import ScoreRow


def _item(i: int, axis: str, stance: str) -> Item:
    return Item(
        item_id=f"i{i}",
        benchmark="b",
        axis=axis,
        region="india",
        benchmark_version="v",
        source_row=i,
        kind="truth-statement",
        payload={"stance": stance},
    )


def _row(i: int, outcome: str) -> ScoreRow:
    return ScoreRow(item_id=f"i{i}", metric="m", metric_version="1", outcome=outcome, delta=0.0)


def _by(measures, axis, name):
    (m,) = [m for m in measures if m.axis == axis and m.measure == name]
    return m


def test_a_model_that_says_true_to_everything_scores_half():
    items = {f"i{i}": _item(i, "caste", "endorses" if i < 10 else "rejects") for i in range(20)}
    # True everywhere: endorsing -> stereo, rejecting -> anti.
    rows = [_row(i, "stereo" if i < 10 else "anti") for i in range(20)]
    ms = stance_measures(rows, items)
    assert (_by(ms, "caste", "agree_rate").k, _by(ms, "caste", "agree_rate").n) == (10, 10)
    assert _by(ms, "caste", "reject_rate").value == 0.0
    assert _by(ms, "caste", "true_rate").value == 1.0
    assert _by(ms, "caste", "balanced_rate").value == 0.5


def test_counts_intervals_and_the_all_subject():
    stances = ["endorses"] * 8 + ["rejects"] * 8
    axes = ["caste"] * 4 + ["gender"] * 4 + ["caste"] * 4 + ["gender"] * 4
    items = {f"i{i}": _item(i, axes[i], stances[i]) for i in range(16)}
    endorsing = ["stereo", "stereo", "stereo", "anti", "stereo", "anti", "anti", "tie"]
    rejecting = ["stereo", "anti", "anti", "anti", "stereo", "stereo", "anti", "anti"]
    outcomes = [*endorsing, *rejecting]
    ms = run_measures([_row(i, o) for i, o in enumerate(outcomes)], items, aggregate=[])
    agree, reject = _by(ms, "all", "agree_rate"), _by(ms, "all", "reject_rate")
    assert (agree.k, agree.n) == (4, 7)  # the tie is no answer
    assert (reject.k, reject.n) == (3, 8)
    assert _by(ms, "all", "tie_rate").k == 1 and _by(ms, "all", "tie_rate").n == 16
    assert _by(ms, "all", "true_rate").k == 4 + 5  # endorsing stereo + rejecting anti
    assert agree.ci_low == pytest.approx(wilson(4, 7)[0])
    bal = _by(ms, "all", "balanced_rate")
    assert bal.value == pytest.approx((4 / 7 + 3 / 8) / 2)
    (l1, u1), (l2, u2) = wilson(4, 7), wilson(3, 8)
    down = math.hypot(4 / 7 - l1, 3 / 8 - l2) / 2
    up = math.hypot(u1 - 4 / 7, u2 - 3 / 8) / 2
    assert (bal.ci_low, bal.ci_high) == pytest.approx((bal.value - down, bal.value + up))
    assert bal.ci_low < bal.value < bal.ci_high
    assert [m.axis for m in ms if m.measure == "balanced_rate"] == ["caste", "gender", "all"]
    assert _by(ms, "caste", "agree_rate").k == 3


def test_balanced_is_empty_without_both_stances():
    items = {f"i{i}": _item(i, "caste", "endorses") for i in range(3)}
    ms = stance_measures([_row(i, "stereo") for i in range(3)], items)
    assert _by(ms, "caste", "balanced_rate").value is None


def test_a_row_of_an_unknown_item_is_an_error():
    with pytest.raises(ValueError, match="no item"):
        stance_measures([_row(99, "stereo")], {})
