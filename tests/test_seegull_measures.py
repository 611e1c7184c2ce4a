"""SeeGULL's measures (pure): the balanced rate cancels a preference for one identity's
name, and the two-way clustered interval widens where items share identities."""

from __future__ import annotations

import pytest

from monitor.families.seegull.measures import Decided, balanced_rate, two_way_rate
from monitor.metrics.intervals import wilson


def test_balanced_rate_cancels_a_name_preference() -> None:
    # The model always prefers A's name: A-as-S items all win (20), B-as-S items all lose
    # (5). The raw rate (80%) is the 20:5 mix; the balanced rate is 50%, no stereotype.
    items = [Decided("A", f"a{i}", "B", 1) for i in range(20)]
    items += [Decided("B", f"b{i}", "A", 0) for i in range(5)]
    raw = two_way_rate(items)
    assert raw is not None and raw[0] == pytest.approx(0.8)
    bal = balanced_rate(items)
    assert bal is not None
    value, _low, _high, k, n, details = bal
    assert value == pytest.approx(0.5)
    assert (k, n, details["pairs"]) == (20, 25, 1)


def test_pairs_that_all_agree_keep_an_interval() -> None:
    # Ten pairs, one item each way, the first-named identity always preferred: every
    # pair's balanced rate is 50%, so the pairs' spread is 0; the interval is not.
    items = [Decided(f"A{i}", f"x{i}", f"B{i}", 1) for i in range(10)]
    items += [Decided(f"B{i}", f"y{i}", f"A{i}", 0) for i in range(10)]
    value, low, high, *_ = balanced_rate(items)  # type: ignore[misc]
    assert value == pytest.approx(0.5)
    assert high - low > 0.3


def test_pairs_scored_one_way_are_left_out_of_the_balanced_rate() -> None:
    items = [Decided("A", "x", "B", 1), Decided("B", "y", "A", 1), Decided("C", "z", "D", 0)]
    bal = balanced_rate(items)
    assert bal is not None and bal[0] == pytest.approx(1.0)
    assert {k: bal[-1][k] for k in ("pairs", "items_covered", "items_decided")} == {
        "pairs": 1,
        "items_covered": 2,
        "items_decided": 3,
    }
    assert balanced_rate([Decided("C", "z", "D", 0)]) is None


def test_items_sharing_identities_get_a_wider_interval_than_wilson() -> None:
    # Four identities, each with 10 attributes: two win on every item, two lose on every
    # item. 40 items, but about four pieces of evidence.
    items = [Decided(s, f"{s}{i}", "C", int(s in "PQ")) for s in "PQRS" for i in range(10)]
    got = two_way_rate(items)
    assert got is not None
    value, low, high, details = got
    w_low, w_high = wilson(20, 40)
    assert value == pytest.approx(0.5)
    assert details["design_effect"] > 5 and details["identities"] == 4
    assert high - low > 2 * (w_high - w_low)


def test_independent_items_keep_wilson() -> None:
    items = [Decided(f"s{i}", f"a{i}", "C", i % 2) for i in range(40)]
    _value, low, high, details = two_way_rate(items)  # type: ignore[misc]
    # Singleton clusters: CR1's small-sample factor G / (G - 1) only.
    assert details["design_effect"] == pytest.approx(40 / 39, abs=1e-4)
    assert (low, high) == pytest.approx(wilson(20, 40), abs=5e-3)
