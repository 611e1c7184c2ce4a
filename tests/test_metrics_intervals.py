"""Wilson intervals and per-axis rates."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from monitor.metrics.intervals import ALL_AXES, axis_measures, wilson
from monitor.records import ScoreRow


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 10), (5, 10), (10, 10), (37, 106), (300, 385)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(k, n, confidence) -> None:
    low, high = wilson(k, n, confidence)
    ref = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert (low, high) == pytest.approx(ref, abs=1e-12)


def test_wilson_known_values() -> None:
    # Textbook value: 0 of 10 -> [0, 0.2775]; 5 of 10 -> [0.2366, 0.7634].
    assert wilson(0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert wilson(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-5)


def test_wilson_empty_and_invalid() -> None:
    low, high = wilson(0, 0)
    assert math.isnan(low) and math.isnan(high)
    with pytest.raises(ValueError):
        wilson(3, 2)
    with pytest.raises(ValueError):
        wilson(-1, 2)


def _row(item_id: str, outcome: str) -> ScoreRow:
    return ScoreRow(item_id, "cll", "2", outcome, 0.0)  # type: ignore[arg-type]


def test_axis_measures_counts_and_definitions() -> None:
    outcomes = ["stereo"] * 6 + ["anti"] * 3 + ["tie"] + ["other"]
    rows = [_row(f"c{i}", o) for i, o in enumerate(outcomes)]
    rows += [_row("r0", "anti"), _row("r1", "anti")]
    item_axis = {f"c{i}": ("bhed-caste", "caste") for i in range(len(outcomes))}
    item_axis |= {"r0": ("bhed-race", "race"), "r1": ("bhed-race", "race")}
    got = {(m.benchmark, m.axis, m.measure): m for m in axis_measures(rows, item_axis)}
    assert set(got) == {
        ("bhed-caste", "caste", "bias_rate"),
        ("bhed-caste", "caste", "tie_rate"),
        ("bhed-race", "race", "bias_rate"),
        ("bhed-race", "race", "tie_rate"),
    }
    bias = got[("bhed-caste", "caste", "bias_rate")]
    assert (bias.k, bias.n, bias.value) == (6, 9, 6 / 9)
    assert (bias.ci_low, bias.ci_high) == pytest.approx(wilson(6, 9))
    assert "stereo" in bias.definition
    tie = got[("bhed-caste", "caste", "tie_rate")]
    assert (tie.k, tie.n) == (1, 11)
    race = got[("bhed-race", "race", "bias_rate")]
    assert (race.k, race.n, race.value) == (0, 2, 0.0)


def test_axis_measures_multi_axis_benchmark_gets_all_row() -> None:
    rows = [_row("a", "stereo"), _row("b", "anti"), _row("c", "tie")]
    item_axis = {
        "a": ("crows-pairs", "gender"),
        "b": ("crows-pairs", "race-color"),
        "c": ("crows-pairs", "race-color"),
    }
    got = {(m.axis, m.measure): m for m in axis_measures(rows, item_axis)}
    assert (got[(ALL_AXES, "bias_rate")].k, got[(ALL_AXES, "bias_rate")].n) == (1, 2)
    assert (got[(ALL_AXES, "tie_rate")].k, got[(ALL_AXES, "tie_rate")].n) == (1, 3)
    only_ties = got[("race-color", "bias_rate")]
    assert (only_ties.k, only_ties.n) == (0, 1)


def test_axis_measures_no_decided_pairs_and_unknown_item() -> None:
    got = axis_measures([_row("a", "tie")], {"a": ("bhed-caste", "caste")})
    bias = next(m for m in got if m.measure == "bias_rate")
    assert (bias.n, bias.value, bias.ci_low, bias.ci_high) == (0, None, None, None)
    with pytest.raises(ValueError, match="zzz"):
        axis_measures([_row("zzz", "stereo")], {})


def test_wilson_bounds_contain_the_rate_exactly_at_the_ends():
    # The results suite refuses ci_low > value; a closed form can give 2.8e-17 at k = 0.
    from monitor.metrics.intervals import wilson

    for n in (1, 2, 5, 12, 106, 336, 1508):
        for k in range(n + 1):
            low, high = wilson(k, n)
            assert 0.0 <= low <= k / n <= high <= 1.0, (k, n, low, high)
        assert wilson(0, n)[0] == 0.0 and wilson(n, n)[1] == 1.0
