"""The metric panel (one pass for cll and ull, and cll-reference when asked) and the
tokenizer coverage rule, on tiny random models with a byte-level BPE tokenizer trained on
English."""

from __future__ import annotations

import dataclasses

import pytest
from _models import one_thread, tiny_causal
from test_scoring_tiny import ITEMS

from monitor.benchmarks.items import BenchmarkVersion, LoadedBenchmark
from monitor.families.pairs.records import PairItem
from monitor.families.pairs.scoring import score_items
from monitor.scoring import ScoringStats
from monitor.scoring.coverage import MAX_FRAGMENT_SHARE, token_coverage, unreadable, unsupported

FULL = ("cll-reference",)  # what ``run --metrics cll-reference`` adds to the default panel


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module", params=[None, "<bos>"], ids=["gpt2-style", "bos-added"])
def causal(request):
    return tiny_causal(request.param, seed=1)


def test_panel_rows_equal_each_metric_scored_alone(causal) -> None:
    panel = score_items(causal, ITEMS, "cll", panel_metrics=FULL)
    alone = {m: score_items(causal, ITEMS, m, panel=False) for m in ("cll", "cll-reference", "ull")}
    for k, row in enumerate(panel):
        assert row.outcome == alone["cll"][k].outcome
        assert row.delta == pytest.approx(alone["cll"][k].delta, abs=1e-4)
        for m in ("cll-reference", "ull"):
            entry = row.details["panel"][m]
            assert entry["outcome"] == alone[m][k].outcome
            assert entry["delta"] == pytest.approx(alone[m][k].delta, abs=1e-4)
            assert entry["version"] == alone[m][k].metric_version
    # The run's own metric decides the row whichever metric that is; cll-reference's own
    # run holds cll and ull beside it.
    ref = score_items(causal, ITEMS, "cll-reference")
    assert [r.metric for r in ref] == ["cll-reference"] * len(ITEMS)
    assert set(ref[0].details["panel"]) == {"cll", "ull"}


def test_the_default_panel_is_cll_and_ull_from_cll_alone_s_pass(causal) -> None:
    """The default run asks for exactly cll's requests (ull's sentences are cll's), so it
    gives cll alone's bits and reads ull off the same log-probs; no cll-reference."""
    default, alone, ull = ScoringStats(), ScoringStats(), ScoringStats()
    rows = score_items(causal, ITEMS, "cll", stats=default)
    plain = score_items(causal, ITEMS, "cll", stats=alone, panel=False)
    ull_rows = score_items(causal, ITEMS, "ull", stats=ull, panel=False)
    assert (default.requests_sent, default.backend_calls) == (
        alone.requests_sent,
        alone.backend_calls,
    )
    for row, cll, u in zip(rows, plain, ull_rows, strict=True):
        assert set(row.details["panel"]) == {"ull"}
        assert (row.outcome, row.delta, row.lp_stereo, row.lp_anti) == (
            cll.outcome,
            cll.delta,
            cll.lp_stereo,
            cll.lp_anti,
        )
        entry = row.details["panel"]["ull"]
        assert entry["delta"] == row.lp_stereo - row.lp_anti
        assert entry["outcome"] == u.outcome and entry["delta"] == pytest.approx(u.delta, abs=1e-4)


def test_panel_asks_each_shared_request_once(causal) -> None:
    union, parts = ScoringStats(), []
    score_items(causal, ITEMS, "cll", stats=union, panel_metrics=FULL)
    for m in ("cll", "cll-reference", "ull"):
        s = ScoringStats()
        score_items(causal, ITEMS, m, stats=s, panel=False)
        parts.append(s.requests_sent)
    # ull's sentences are cll's: the panel sends less than the three metrics separately.
    assert union.requests_sent < sum(parts)
    assert union.requests_sent <= parts[0] + parts[1]


def _bench(texts: list[str], language: str) -> LoadedBenchmark:
    version = BenchmarkVersion("t", "0" * 40, "0" * 64, "none")
    items = [
        PairItem(f"i{k}", "t", "x", "india", version.label, k, text_stereo=t, text_anti=t + " .")
        for k, t in enumerate(texts)
    ]
    return LoadedBenchmark("t", "x", "india", version, items=items, language=language)


def test_coverage_refuses_a_script_the_tokenizer_splits_into_bytes() -> None:
    lm = tiny_causal(None, seed=0)  # byte-level BPE trained on eight English sentences
    hindi = ["वह हर दिन बस से दफ़्तर जाती है।", "आज बाज़ार में आम बहुत सस्ते थे।"]
    english = ["The doctor said that she would come back tomorrow morning."]
    cov = token_coverage(lm, hindi)
    assert cov.fragment_share > 0.5 and cov.chars_per_token < 1.0
    assert token_coverage(lm, english).fragment_share == 0.0
    reason = unsupported(lm, [_bench(english, "en"), _bench(hindi, "hi")])
    assert reason is not None and "cannot represent t (language 'hi')" in reason
    assert f"{MAX_FRAGMENT_SHARE:.0%}" in reason and "byte fragments" in reason
    # An English benchmark is not checked, and a covered script passes.
    assert unsupported(lm, [_bench(english, "en")]) is None
    assert unsupported(lm, [_bench(english, "en-IN")]) is None


def test_coverage_names_every_benchmark_it_cannot_read() -> None:
    """What a family that skips unreadable benchmarks (``Family.skips_unreadable``) is
    told: each one with its own reason, in order, the readable ones absent."""
    lm = tiny_causal(None, seed=0)
    hindi = ["वह हर दिन बस से दफ़्तर जाती है।", "आज बाज़ार में आम बहुत सस्ते थे।"]
    tamil = ["அவள் தினமும் பேருந்தில் அலுவலகம் செல்கிறாள்."]
    english = ["The doctor said that she would come back tomorrow morning."]
    benches = [
        dataclasses.replace(_bench(english, "en-IN"), benchmark="a"),
        dataclasses.replace(_bench(hindi, "hi"), benchmark="b"),
        dataclasses.replace(_bench(tamil, "ta"), benchmark="c"),
    ]
    refused = unreadable(lm, benches)
    assert list(refused) == ["b", "c"]
    assert "cannot represent b (language 'hi')" in refused["b"]
    assert "cannot represent c (language 'ta')" in refused["c"]
    assert unsupported(lm, benches) == refused["b"]  # the first, as before
    assert unreadable(lm, benches[:1]) == {}
