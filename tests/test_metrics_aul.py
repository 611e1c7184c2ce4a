"""AUL arithmetic: mean per-token log-prob, stereo wins when higher, ties kept apart."""

from __future__ import annotations

import pytest

from monitor.families.pairs.aul import aul_row, aul_score


def test_aul_is_mean_not_sum() -> None:
    # The longer sentence has the lower sum but the higher mean: AUL prefers it.
    row = aul_row("i", [-1.0, -1.0, -1.0, -1.0], [-1.5, -1.5])
    assert row.metric == "aul"
    assert (row.score_stereo, row.score_anti) == (-1.0, -1.5)
    assert (row.lp_stereo, row.lp_anti) == (-4.0, -3.0)
    assert row.delta == pytest.approx(0.5) and row.outcome == "stereo"
    assert (row.n_tokens_stereo, row.n_tokens_anti) == (4, 2)


def test_aul_tie_anti_and_empty() -> None:
    assert aul_row("i", [-2.0], [-1.0, -3.0]).outcome == "tie"
    assert aul_row("i", [-2.0], [-1.0]).outcome == "anti"
    empty = aul_row("i", [], [-1.0])
    assert empty.outcome == "other" and empty.delta is None
    assert aul_score([]) != aul_score([])  # NaN
