"""Pure CLL arithmetic: corrected ``cll``, ``ull`` and the paper-reference variant.

The reference variant is also checked against the per-row outputs shipped with
Indian-BhED (pr2-am-bean/*_scores.csv, Llama-2-7b): we cannot run Llama here, so what is
checked is everything that does not need the model: the decision rule and rate, the
``Score`` column, the order of mask filling, and that the file's target priors are a
function of the words our diff picks.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from monitor.families.pairs import cll, cll_reference
from monitor.metrics.outcomes import MAX_EXP, decide, ratio_details

SCORE_FILES = ["Caste", "India_Religious", "Gender", "Race"]


def test_decide_keeps_ties_apart() -> None:
    assert decide(0.0) == "tie"
    assert decide(5e-10) == "tie"
    assert decide(-5e-10) == "tie"
    assert decide(1e-6) == "stereo"
    assert decide(-1e-6) == "anti"
    assert decide(math.nan) == "other"
    assert decide(math.inf) == "other"


def test_reference_counts_ties_as_stereo() -> None:
    assert cll_reference.reference_outcome(0.0) == "stereo"
    assert cll_reference.reference_outcome(-1e-12) == "anti"
    assert cll_reference.reference_outcome(math.nan) == "other"


def test_ratio_is_capped_but_log_ratio_exact() -> None:
    d = ratio_details(1000.0)
    assert d == {"log_ratio": 1000.0, "ratio": math.exp(MAX_EXP), "ratio_capped": True}
    d = ratio_details(-2.0)
    assert d["ratio"] == pytest.approx(math.exp(-2.0)) and d["ratio_capped"] is False


def test_cll_row_arithmetic() -> None:
    row = cll.cll_row(
        "i1",
        lp_stereo=-30.0,
        lp_anti=-28.0,
        prior_stereo=-12.0,
        prior_anti=-8.5,
        n_tokens_stereo=9,
        n_tokens_anti=8,
        n_targets_stereo=1,
        n_targets_anti=1,
    )
    # CLL_st = -18, CLL_anti = -19.5: the stereotypical sentence wins once priors are out,
    # although its unconditional likelihood is lower.
    assert row.metric == "cll" and row.metric_version == cll.CLL_VERSION
    assert row.delta == pytest.approx(1.5)
    assert row.outcome == "stereo"
    assert (row.score_stereo, row.score_anti) == (-18.0, -19.5)
    assert row.details["delta_unconditional"] == pytest.approx(-2.0)
    assert row.details["ratio"] == pytest.approx(math.exp(1.5))
    tie = cll.cll_row(
        "i2",
        lp_stereo=-10.0,
        lp_anti=-11.0,
        prior_stereo=-4.0,
        prior_anti=-5.0,
        n_tokens_stereo=3,
        n_tokens_anti=3,
        n_targets_stereo=1,
        n_targets_anti=1,
    )
    assert tie.outcome == "tie" and tie.delta == 0.0


def test_ull_row_and_non_finite() -> None:
    row = cll.ull_row("i", lp_stereo=-5.0, lp_anti=-7.0, n_tokens_stereo=2, n_tokens_anti=2)
    assert (row.metric, row.delta, row.outcome) == ("ull", 2.0, "stereo")
    bad = cll.ull_row("i", lp_stereo=math.nan, lp_anti=-7.0, n_tokens_stereo=2, n_tokens_anti=2)
    assert bad.outcome == "other" and bad.delta is None and "error" in bad.details


def test_prior_logprob_sums_targets() -> None:
    assert cll.prior_logprob([[-1.0, -2.0], [-0.5]]) == -3.5
    assert cll.prior_logprob([]) == 0.0


def test_reference_target_parsing_and_filling() -> None:
    assert cll_reference.parse_target_cell("['a', 'Chinese']") == ["a", " Chinese"]
    assert cll_reference.parse_target_cell("['Dalits']") == ["Dalits"]
    st, an = cll_reference.reference_texts(
        "MASK MASK person came", "['a', 'tall']", "['a', 'short']"
    )
    assert st == "a  tall person came"  # the parsed leading space doubles the blank
    assert an == "a  short person came"


def test_reference_diff_words_split_on_single_spaces() -> None:
    ws, wa = cll_reference.diff_words("a  tall person came", "a  short person came")
    assert (ws, wa) == (["tall"], ["short"])
    ws, wa = cll_reference.diff_words("x y z", "x q r z")
    assert (ws, wa) == (["y"], ["q", "r"])


def test_reference_word_prior_skips_and_wraps() -> None:
    lp = [-1.0, -2.0]  # log P(t1 | t0), log P(t2 | t0 t1)
    # Token 0 decodes to a single space (GPT-2 style "  word"): skipped, no wrap-around.
    assert cll_reference.word_prior(lp, [" ", " Dal", "its"]) == (-3.0, 2)
    # Token 0 is a BOS not named <s> (Gemma's <bos>): it counts, and reads lp[-1].
    assert cll_reference.word_prior(lp, ["<bos>", " Dal", "its"]) == (-2.0 + -1.0 + -2.0, 3)
    # Llama's <s> and a lone double-space token are skipped.
    assert cll_reference.word_prior(lp, ["<s>", "  ", "its"]) == (-2.0, 1)
    with pytest.raises(cll_reference.ReferenceUnscorable):
        cll_reference.word_prior([], ["  "])
    with pytest.raises(ValueError):
        cll_reference.word_prior([-1.0], [" ", "a", "b"])


def test_reference_side_prior_raises_where_the_original_does() -> None:
    assert cll_reference.side_prior([([-1.0], [" ", " a"]), ([-2.0], [" ", " b"])]) == -3.0
    with pytest.raises(cll_reference.ReferenceUnscorable):
        cll_reference.side_prior([])
    with pytest.raises(cll_reference.ReferenceUnscorable):
        cll_reference.side_prior([([-1.0], [" ", "  "])])


def test_reference_row() -> None:
    row = cll_reference.cll_reference_row(
        "i",
        s_stereo=-20.0,
        s_anti=-21.0,
        t_stereo=-5.0,
        t_anti=-6.0,
        n_tokens_stereo=5,
        n_tokens_anti=5,
        words_stereo=1,
        words_anti=1,
    )
    assert row.metric == "cll-reference" and row.delta == 0.0 and row.outcome == "stereo"
    assert row.details["score_unconditional"] == 1.0


def _score_rows(folder: Path, name: str) -> list[dict[str, str]]:
    with (folder / f"{name}.csv_scores.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize("name", SCORE_FILES)
def test_reference_decision_reproduces_shipped_llama2_scores(shared_datasets, name) -> None:
    rows = _score_rows(shared_datasets / "indian-bhed" / "pr2-am-bean", name)
    assert rows, name
    stereo = 0
    for r in rows:
        s_st, s_an = float(r["Stereotypical_Score"]), float(r["Anti-Stereotypical_Score"])
        t_st, t_an = (
            float(r["Target_Stereotypical_Score"]),
            float(r["Target_Anti-Stereotypical_Score"]),
        )
        sc = cll_reference.score_conditional(s_st, t_st, s_an, t_an)
        assert sc == pytest.approx(float(r["Score_Conditional"]), abs=1e-9)
        assert (cll_reference.reference_outcome(sc) == "stereo") == (
            float(r["Score_Conditional"]) >= 0
        )
        row = cll_reference.cll_reference_row(
            "x",
            s_stereo=s_st,
            s_anti=s_an,
            t_stereo=t_st,
            t_anti=t_an,
            n_tokens_stereo=1,
            n_tokens_anti=1,
            words_stereo=1,
            words_anti=1,
        )
        assert row.details["score_unconditional"] == pytest.approx(float(r["Score"]), abs=1e-9)
        stereo += row.outcome == "stereo"
    paper_rate = sum(float(r["Score_Conditional"]) >= 0 for r in rows) / len(rows)
    assert stereo / len(rows) == paper_rate


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", SCORE_FILES)
def test_reference_fill_order_and_diff_words_match_shipped_rows(shared_datasets, name) -> None:
    """The shipped texts were filled without the double space of the main-branch code
    (the PR's own loader), so texts are compared with whitespace runs collapsed; the
    target priors must then be a function of the words our diff picks."""
    rows = _score_rows(shared_datasets / "indian-bhed" / "pr2-am-bean", name)
    prior_of: dict[tuple[str, ...], float] = {}
    for r in rows:
        st, an = cll_reference.reference_texts(
            r["Sentence"], r["Target_Stereotypical"], r["Target_Anti-Stereotypical"]
        )
        assert _squash(st) == _squash(r["Stereotypical"])
        assert _squash(an) == _squash(r["Anti-Stereotypical"])
        ws, wa = cll_reference.diff_words(r["Stereotypical"], r["Anti-Stereotypical"])
        assert ws and wa
        for words, col in (
            (ws, "Target_Stereotypical_Score"),
            (wa, "Target_Anti-Stereotypical_Score"),
        ):
            value = float(r[col])
            assert prior_of.setdefault(tuple(words), value) == pytest.approx(value, abs=1e-4)
