"""score_items on tiny random models against hand-computed references.

Each reference is written out the long way: one sequence at a time, a full
``torch.log_softmax``, explicit loops over positions. The texts and target words the
reference variant should use are spelled out literally rather than derived by the code
under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from _models import hand_causal_logprobs, hand_mlm_logprobs, one_thread, tiny_bert, tiny_causal

from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.families.pairs.records import PairItem
from monitor.families.pairs.scoring import score_items
from monitor.kinds import get_kind
from monitor.metrics.registry import metric_info
from monitor.scoring import ScoringStats
from monitor.scoring.score import scoring_provenance


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    with one_thread():
        yield


def _item(n: int, st: str, an: str, ts=(), ta=(), template=None, cells=(None, None)) -> Item:
    return PairItem(
        item_id=f"item-{n}",
        benchmark="bhed-test",
        axis="test",
        region="us",
        benchmark_version="test@0",
        source_row=n,
        text_stereo=st,
        text_anti=an,
        targets_stereo=tuple(ts),
        targets_anti=tuple(ta),
        template=template,
        raw_stereo_cell=cells[0],
        raw_anti_cell=cells[1],
    )


ITEMS = [
    _item(
        0,
        "The doctor said that she would come",
        "The doctor said that he would come",
        ["she"],
        ["he"],
        "The doctor said that MASK would come",
        ("['she']", "['he']"),
    ),
    _item(
        1,
        "The nurse walked by the river",
        "The pilot walked by the river",
        ["The", "nurse"],
        ["The", "pilot"],
        "MASK MASK walked by the river",
        ("['The', 'nurse']", "['The', 'pilot']"),
    ),
    _item(
        2,
        "The farmer sold fresh vegetables",
        "The engineer sold fresh vegetables",
        ["farmer"],
        ["engineer"],
    ),  # CrowS-like: no template
    _item(
        3,
        "People said that she would come",
        "People said that he would come",
        ["she"],
        ["he"],
        "People said that MASK would come",
        ("['she']", "['he']"),
    ),
]

# What the original code makes of the items: filled texts (double space after a parsed
# "', '") and the word-level diff, spelled out by hand.
REFERENCE_TEXTS = {
    "item-0": (
        "The doctor said that she would come",
        "The doctor said that he would come",
        ["she"],
        ["he"],
    ),
    "item-1": (
        "The  nurse walked by the river",
        "The  pilot walked by the river",
        ["nurse"],
        ["pilot"],
    ),
    "item-2": (
        "The farmer sold fresh vegetables",
        "The engineer sold fresh vegetables",
        ["farmer"],
        ["engineer"],
    ),
    "item-3": (
        "People said that she would come",
        "People said that he would come",
        ["she"],
        ["he"],
    ),
}


# cll v3: each target's prior in the form it takes in the sentence, spelled out by hand
# (item 1's "The" opens the sentence, so its prior has no leading space).
PRIOR_FORMS = {
    "item-0": ([" she"], [" he"]),
    "item-1": (["The", " nurse"], ["The", " pilot"]),
    "item-2": ([" farmer"], [" engineer"]),
    "item-3": ([" she"], [" he"]),
}


def _hand_sum(backend, ids) -> float:
    return sum(hand_causal_logprobs(backend, list(ids)))


def _hand_cll(backend, item: Item) -> tuple[float, float, float, float]:
    bos = backend.bos_token_id
    tok = backend.tokenizer
    lp_s = _hand_sum(backend, [bos, *tok.encode(item.text_stereo, add_special_tokens=False)])
    lp_a = _hand_sum(backend, [bos, *tok.encode(item.text_anti, add_special_tokens=False)])
    forms_s, forms_a = PRIOR_FORMS[item.item_id]
    pr_s = sum(_hand_sum(backend, [bos, *tok.encode(f, add_special_tokens=False)]) for f in forms_s)
    pr_a = sum(_hand_sum(backend, [bos, *tok.encode(f, add_special_tokens=False)]) for f in forms_a)
    return lp_s, lp_a, pr_s, pr_a


@torch.inference_mode()
def _hand_reference_word(backend, word: str) -> float:
    """The original's loop: nll over positions 1..n-1, then token i reads nll[i-1]."""
    tok = backend.tokenizer
    ids = torch.tensor([tok.encode("  " + word)])
    logits = backend.model(ids).logits.double()
    nll = torch.nn.functional.cross_entropy(logits[0, :-1], ids[0, 1:], reduction="none")
    total = 0.0
    for i in range(ids.size(1)):
        if tok.decode(ids[0, i]) not in ("<s>", " ", "  "):
            total += float(-nll[i - 1])
    return total


def _hand_reference(backend, key: str) -> tuple[float, float, float, float]:
    st, an, ws, wa = REFERENCE_TEXTS[key]
    tok = backend.tokenizer
    s_s = _hand_sum(backend, tok.encode(st))
    s_a = _hand_sum(backend, tok.encode(an))
    return (
        s_s,
        s_a,
        sum(_hand_reference_word(backend, w) for w in ws),
        sum(_hand_reference_word(backend, w) for w in wa),
    )


@pytest.fixture(scope="module", params=[None, "<bos>"], ids=["gpt2-style", "bos-added"])
def causal(request):
    return tiny_causal(request.param, seed=1)


def test_cll_matches_hand_reference(causal) -> None:
    rows = score_items(causal, ITEMS, "cll", batch_size=3)
    assert [r.item_id for r in rows] == [it.item_id for it in ITEMS]
    for item, row in zip(ITEMS, rows, strict=True):
        lp_s, lp_a, pr_s, pr_a = _hand_cll(causal, item)
        assert (row.metric, row.metric_version) == ("cll", "3")
        assert row.lp_stereo == pytest.approx(lp_s, abs=1e-4)
        assert row.lp_anti == pytest.approx(lp_a, abs=1e-4)
        assert row.prior_stereo == pytest.approx(pr_s, abs=1e-4)
        assert row.prior_anti == pytest.approx(pr_a, abs=1e-4)
        delta = (lp_s - pr_s) - (lp_a - pr_a)
        assert row.delta == pytest.approx(delta, abs=1e-4)
        assert row.outcome == ("stereo" if delta > 0 else "anti")
        assert row.n_tokens_stereo == len(causal.encode(item.text_stereo, add_special_tokens=False))


def test_ull_matches_hand_reference(causal) -> None:
    for item, row in zip(ITEMS, score_items(causal, ITEMS, "ull"), strict=True):
        lp_s, lp_a, _, _ = _hand_cll(causal, item)
        assert row.delta == pytest.approx(lp_s - lp_a, abs=1e-4)
        assert row.prior_stereo is None and row.details["log_ratio"] == row.delta


def test_cll_reference_matches_hand_reference(causal) -> None:
    rows = score_items(causal, ITEMS, "cll-reference", batch_size=16)
    for row in rows:
        s_s, s_a, t_s, t_a = _hand_reference(causal, row.item_id)
        assert (row.metric, row.metric_version) == ("cll-reference", "1")
        assert (row.lp_stereo, row.lp_anti) == pytest.approx((s_s, s_a), abs=1e-4)
        assert (row.prior_stereo, row.prior_anti) == pytest.approx((t_s, t_a), abs=1e-4)
        sc = (s_s - t_s) - (s_a - t_a)
        assert row.delta == pytest.approx(sc, abs=1e-4)
        assert row.outcome == ("stereo" if sc >= 0 else "anti")


def test_reference_and_corrected_differ_where_the_quirks_bite() -> None:
    """With a BOS-less tokenizer the reference leaves the first token unscored; with a
    ``<bos>`` tokenizer its prior wraps around to the last position."""
    plain = tiny_causal(None, seed=1)
    ref = score_items(plain, ITEMS[:1], "cll-reference")[0]
    fixed = score_items(plain, ITEMS[:1], "cll")[0]
    n_words = len(plain.encode(ITEMS[0].text_stereo, add_special_tokens=False))
    assert (ref.n_tokens_stereo, fixed.n_tokens_stereo) == (n_words - 1, n_words)
    assert ref.lp_stereo != pytest.approx(fixed.lp_stereo, abs=1e-3)
    bos = tiny_causal("<bos>", seed=1)
    ids = bos.encode("  she", add_special_tokens=True)
    assert bos.decode_token(ids[0]) == "<bos>"
    lp = hand_causal_logprobs(bos, ids)
    want = lp[-1] + sum(lp[i - 1] for i in range(1, len(ids)) if bos.decode_token(ids[i]) != " ")
    assert score_items(bos, ITEMS[:1], "cll-reference")[0].prior_stereo == pytest.approx(
        want, abs=1e-4
    )


def test_batch_size_invariance(causal) -> None:
    runs = [score_items(causal, ITEMS, "cll", batch_size=b) for b in (1, 3, 16)]
    for run in runs[1:]:
        for a, b in zip(runs[0], run, strict=True):
            assert a.delta == pytest.approx(b.delta, abs=1e-4)


def test_identical_requests_are_computed_once() -> None:
    backend = tiny_causal(None, seed=2)
    stats = ScoringStats()
    score_items(backend, ITEMS, "cll", stats=stats, chunk_requests=8, panel=False)
    # Items 0 and 3 share both target priors (" she", " he"), item 1 repeats "The".
    assert stats.requests_planned == 2 * len(ITEMS) + 10
    assert stats.requests_sent == stats.requests_planned - 3
    assert backend.stats.sequences_computed == stats.requests_sent
    assert stats.backend_calls == 2  # 15 unique requests in chunks of 8


def test_a_backend_that_sets_requests_per_call_gets_calls_of_that_size() -> None:
    """A GPU's loader sets ``requests_per_call`` (several passes per call, which the
    backend overlaps); ``score_items`` and the run's provenance follow it."""
    backend = tiny_causal(None, seed=2)
    default = ScoringStats()
    want = score_items(backend, ITEMS, "cll", stats=default, panel=False)
    assert default.backend_calls == 1  # 15 unique requests fit the default 128
    backend.requests_per_call = 4
    stats = ScoringStats()
    got = score_items(backend, ITEMS, "cll", stats=stats, panel=False)
    assert stats.backend_calls == 4  # 15 unique requests in calls of 4
    assert scoring_provenance(backend)["chunk_requests"] == 4
    for a, b in zip(want, got, strict=True):
        assert a.delta == pytest.approx(b.delta, abs=1e-4)


def _same_bits(a, b) -> bool:
    return (a.item_id, a.lp_stereo, a.lp_anti, a.prior_stereo, a.prior_anti, a.delta) == (
        b.item_id,
        b.lp_stereo,
        b.lp_anti,
        b.prior_stereo,
        b.prior_anti,
        b.delta,
    )


def test_resume_after_a_kill_gives_the_same_bits() -> None:
    backend = tiny_causal(None, seed=3)
    full = {r.item_id: r for r in score_items(backend, ITEMS, "cll", chunk_requests=4)}

    class Killed(Exception):
        pass

    stored = []

    def store_then_die(rows) -> None:
        stored.extend(rows)
        raise Killed

    with pytest.raises(Killed):
        score_items(backend, ITEMS, "cll", chunk_requests=4, on_batch=store_then_die)
    killed = len(stored)
    assert 0 < killed < len(ITEMS)
    done: list[int] = []
    rest = score_items(
        backend,
        ITEMS,
        "cll",
        chunk_requests=4,
        on_batch=stored.extend,
        already_scored={r.item_id for r in stored},
        progress=done.append,
    )
    assert sum(done) == len(rest) == len(ITEMS) - killed
    assert sorted(r.item_id for r in stored) == sorted(full)
    # The resumed run recomputes its chunks exactly as the uninterrupted one did.
    for r in stored:
        assert _same_bits(r, full[r.item_id])


def test_a_benchmark_scores_the_same_alone_or_with_others() -> None:
    backend = tiny_causal(None, seed=4)
    other = [
        replace(it, item_id=f"other-{k}", benchmark="bhed-other", text_stereo=it.text_stereo + "!")
        for k, it in enumerate(ITEMS)
    ]
    alone = score_items(backend, ITEMS, "cll", batch_size=3, chunk_requests=5)
    mixed = score_items(backend, other + ITEMS, "cll", batch_size=3, chunk_requests=5)
    assert [r.item_id for r in mixed] == [it.item_id for it in other + ITEMS]
    for a, b in zip(alone, mixed[len(other) :], strict=True):
        assert _same_bits(a, b)


def test_aul_matches_hand_reference() -> None:
    backend = tiny_bert(seed=4)
    rows = score_items(backend, ITEMS, "aul", batch_size=3)
    for item, row in zip(ITEMS, rows, strict=True):
        st = hand_mlm_logprobs(backend, item.text_stereo)
        an = hand_mlm_logprobs(backend, item.text_anti)
        delta = sum(st) / len(st) - sum(an) / len(an)
        assert (row.metric, row.metric_version) == ("aul", "1")
        assert row.delta == pytest.approx(delta, abs=1e-4)
        assert row.outcome == ("stereo" if delta > 0 else "anti")
        assert row.n_tokens_stereo == len(st)


def test_metric_registry_and_kind_checks() -> None:
    assert metric_info("cll") == ("cll", "3", "causal-logprobs")
    assert metric_info("cll-reference") == ("cll-reference", "1", "causal-logprobs")
    assert metric_info("aul") == ("aul", "1", "masked-logprobs")
    assert get_kind("hf-causal").metrics == (
        "cll",
        "cll-reference",
        "ull",
        "mc-loglik",
        "seegull-attribute-ll",
    )
    assert get_kind("hf-mlm").metrics == ("aul",)
    with pytest.raises(UserInputError, match="unknown metric"):
        metric_info("pll")
    with pytest.raises(UserInputError, match="MaskedLM"):
        score_items(tiny_causal(), ITEMS, "aul")
    with pytest.raises(UserInputError, match="CausalLM"):
        score_items(tiny_bert(), ITEMS, "cll")
