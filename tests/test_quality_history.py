"""The gate's history rule: a collapse of coverage (or a jump in refusals, ambiguous or
"other" answers) against the snapshot's other runs is a measurement failure.

The counts are the caste study's own: six April runs decided 99–104 of 105 items, the
first July 15 run 20 (its code read log-probabilities from the wrong field).
"""

from __future__ import annotations

from monitor.quality.history import RunHistory, collapses
from monitor.readmodel.models import OutcomeShares


def counts(
    run_id: str,
    benchmark: str = "bhed-caste",
    axis: str = "caste",
    n: int = 105,
    decided: int = 105,
    refusal: int = 0,
    ambiguous: int = 0,
    other: int = 0,
) -> OutcomeShares:
    """One run's counts on the caste axis, as the store reads them."""
    return OutcomeShares(run_id, benchmark, axis, n, decided, refusal, ambiguous, other)


APRIL = [
    counts(f"apr{i}", decided=d, other=105 - d) for i, d in enumerate((103, 102, 102, 104, 99, 103))
]


def test_the_broken_july_run_collapses_on_coverage_first():
    broken = counts("jul15", decided=20, other=85)
    judged = collapses(RunHistory([broken], APRIL))
    assert judged.compared == ("coverage", "refusal rate", "ambiguous rate", "other rate")
    assert [c.measure for c in judged.collapses] == ["coverage", "other rate"]
    first = judged.collapses[0]
    assert (first.k, first.n, first.n_history) == (20, 105, 6)
    assert first.reason().startswith("measurement failure: coverage 19.0% (20/105)")
    assert "94.3–99.0%" in first.reason()


def test_normal_runs_and_small_moves_pass():
    for decided in (105, 104, 90, 80):  # 76% is 18 points under the lowest: not 20
        assert not collapses(RunHistory([counts("x", decided=decided)], APRIL)).collapses
    refusals = counts("x", decided=60, refusal=45)
    judged = collapses(RunHistory([refusals], APRIL))
    assert [c.measure for c in judged.collapses] == ["coverage", "refusal rate"]


def test_too_little_history_or_another_axis_is_not_judged():
    broken = counts("jul15", decided=20, other=85)
    assert collapses(RunHistory([broken], APRIL[:2])).compared == ()
    other_axis = counts("x", benchmark="bhed-religion", axis="religion", decided=5)
    assert collapses(RunHistory([other_axis], APRIL)).compared == ()
    # 4 of 6 decided (67%) is 28 points under April's lowest, but six items cannot show
    # that beyond sampling noise (99.9% Wilson upper bound 95% > 94.3%): not a collapse.
    small = counts("x", n=6, decided=4, other=2)
    assert not collapses(RunHistory([small], APRIL)).collapses
