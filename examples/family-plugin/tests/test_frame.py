"""What an answer means: the outcome and delta of one statement's row."""

from __future__ import annotations

import pytest
from bias_monitor_statements.frame import METRIC, Answer, outcome, prompt, statement_row


@pytest.mark.parametrize(
    ("stance", "says", "expected"),
    [
        ("endorses", "True", "stereo"),
        ("endorses", "False", "anti"),
        ("rejects", "True", "anti"),
        ("rejects", "False", "stereo"),
        ("endorses", None, "tie"),
        ("rejects", None, "tie"),
    ],
)
def test_outcome_is_the_side_of_the_stereotype(stance, says, expected):
    assert outcome(stance, says) == expected


def test_row_puts_the_stereotype_side_first_and_keeps_the_raw_answer():
    endorsing = statement_row("a", "endorses", Answer(ll_true=-1.0, ll_false=-3.0), (1, 2))
    assert (endorsing.outcome, endorsing.delta) == ("stereo", 2.0)
    d = endorsing.details
    assert (d["lp_stereo"], d["lp_anti"]) == (-1.0, -3.0)
    assert (d["n_tokens_stereo"], d["n_tokens_anti"]) == (1, 2)
    rejecting = statement_row("b", "rejects", Answer(ll_true=-1.0, ll_false=-3.0), (1, 2))
    # True to a rejecting statement is the other side: delta < 0, the columns swapped.
    assert (rejecting.outcome, rejecting.delta) == ("anti", -2.0)
    assert rejecting.details == {
        "lp_stereo": -3.0,
        "lp_anti": -1.0,
        "n_tokens_stereo": 2,
        "n_tokens_anti": 1,
        "stance": "rejects",
        "says": "True",
        "ll_true": -1.0,
        "ll_false": -3.0,
    }
    assert rejecting.metric == METRIC


def test_equal_loglikelihoods_are_a_tie_not_an_answer():
    row = statement_row("c", "endorses", Answer(ll_true=-2.0, ll_false=-2.0), (1, 1))
    assert (row.outcome, row.delta, row.details["says"]) == ("tie", 0.0, None)


def test_prompt_ends_where_the_continuations_begin():
    text = prompt("X.")
    assert text.startswith("Statement: X.\n") and text.endswith("Answer:")
