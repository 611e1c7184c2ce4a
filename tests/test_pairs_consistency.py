"""The sentence pairs' row checks (``families.pairs.consistency``): a row rebuilt from its
own stored numbers by its metric's builder gives back what it says, and an edited row does
not. Each likelihood metric feeds its builder from different stored fields (cll-reference
names them S and T), so each is checked on a row its own builder made."""

from __future__ import annotations

import dataclasses

import pytest

from monitor.families.pairs.cll import cll_row, ull_row
from monitor.families.pairs.cll_reference import cll_reference_row
from monitor.families.pairs.consistency import check_cll, check_cll_reference, check_ull

# Log-probs chosen so that swapping any two of them changes the row's delta.
LP_STEREO, LP_ANTI, PRIOR_STEREO, PRIOR_ANTI = -31.5, -29.25, -7.0, -12.125

ROWS = {
    "cll": (
        check_cll,
        cll_row(
            "p1",
            lp_stereo=LP_STEREO,
            lp_anti=LP_ANTI,
            prior_stereo=PRIOR_STEREO,
            prior_anti=PRIOR_ANTI,
            n_tokens_stereo=9,
            n_tokens_anti=8,
            n_targets_stereo=2,
            n_targets_anti=1,
        ),
    ),
    "ull": (
        check_ull,
        ull_row("p1", lp_stereo=LP_STEREO, lp_anti=LP_ANTI, n_tokens_stereo=9, n_tokens_anti=8),
    ),
    "cll-reference": (
        check_cll_reference,
        cll_reference_row(
            "p1",
            s_stereo=LP_STEREO,
            s_anti=LP_ANTI,
            t_stereo=PRIOR_STEREO,
            t_anti=PRIOR_ANTI,
            n_tokens_stereo=9,
            n_tokens_anti=8,
            words_stereo=2,
            words_anti=1,
        ),
    ),
}


@pytest.mark.parametrize("metric", list(ROWS))
def test_a_row_as_scored_gives_itself_back(metric: str) -> None:
    check, row = ROWS[metric]
    assert check(row) == []


@pytest.mark.parametrize("metric", list(ROWS))
def test_an_edited_delta_is_named(metric: str) -> None:
    check, row = ROWS[metric]
    assert check(dataclasses.replace(row, delta=-row.delta)) == ["delta"]


@pytest.mark.parametrize("metric", list(ROWS))
def test_edited_log_probs_no_longer_give_the_row(metric: str) -> None:
    """The stored numbers are what the check rebuilds from: swap the two sentences'
    log-probs and the stored delta, outcome and scores no longer follow from them."""
    check, row = ROWS[metric]
    edited = dataclasses.replace(row, lp_stereo=row.lp_anti, lp_anti=row.lp_stereo)
    assert "delta" in check(edited)


@pytest.mark.parametrize("metric", ["cll", "cll-reference"])
def test_the_priors_are_read_as_priors(metric: str) -> None:
    """Swapping the two targets' priors changes cll's and cll-reference's delta (ull has
    none): each check feeds the priors to its builder's prior arguments."""
    check, row = ROWS[metric]
    edited = dataclasses.replace(row, prior_stereo=row.prior_anti, prior_anti=row.prior_stereo)
    assert "delta" in check(edited)


@pytest.mark.parametrize("metric", list(ROWS))
def test_a_row_without_its_numbers_is_left_to_the_presence_checks(metric: str) -> None:
    check, row = ROWS[metric]
    assert check(dataclasses.replace(row, lp_stereo=None, delta=1.0)) == []
    assert check(dataclasses.replace(row, lp_anti=float("nan"), delta=1.0)) == []
