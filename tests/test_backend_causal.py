"""HFCausalLM: per-token log-probs equal a hand loop at batch size 1, whatever the batching.

The tiny random Llama gives exact references in milliseconds; SmolLM2 checks the same on
real weights plus two signals that the weights are real (a pinned sentence log-prob
measured independently with vLLM and lm-evaluation-harness, and word order mattering).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from _models import CORPUS, hand_causal_logprobs, one_thread, smollm2, tiny_causal

from monitor.backends.base import CausalLM, MaskedLM, dedupe
from monitor.backends.hf_causal import length_sorted_batches

SENTENCES = [*CORPUS, "The doctor said", "A", "  the river", "People"]


def _ids(backend, texts) -> list[list[int]]:
    bos = backend.bos_token_id
    return [[bos, *backend.encode(t, add_special_tokens=False)] for t in texts]


def test_length_sorted_batches() -> None:
    lengths = [3, 9, 1, 7, 7, 2]
    batches = length_sorted_batches(lengths, 2)
    assert batches == [[1, 3], [4, 0], [5, 2]]
    assert sorted(i for b in batches for i in b) == list(range(6))
    # A token budget splits wide batches: width 9 allows one row in 10 tokens.
    assert length_sorted_batches(lengths, 16, max_batch_tokens=10)[0] == [1]
    with pytest.raises(ValueError):
        length_sorted_batches(lengths, 0)


def test_dedupe() -> None:
    unique, where = dedupe([[1, 2], (1, 2), [3], [1, 2, 3], [3]])
    assert unique == [(1, 2), (3,), (1, 2, 3)]
    assert where == [0, 0, 1, 2, 1]


@pytest.fixture
def _single_thread():
    with one_thread():
        yield


@pytest.mark.usefixtures("_single_thread")
def test_tiny_matches_hand_loop_at_every_batch_size() -> None:
    backend = tiny_causal()
    assert isinstance(backend, CausalLM) and not isinstance(backend, MaskedLM)
    seqs = _ids(backend, SENTENCES)
    reference = [hand_causal_logprobs(backend, s) for s in seqs]
    for batch_size in (1, 3, 16):
        got = backend.token_logprobs(seqs, batch_size=batch_size)
        for ref, values, seq in zip(reference, got, seqs, strict=True):
            assert values.dtype == np.float64 and len(values) == len(seq) - 1
            np.testing.assert_allclose(values, ref, atol=1e-4, rtol=0)


@pytest.mark.usefixtures("_single_thread")
def test_tiny_token_budget_batches_give_the_same_values() -> None:
    backend = tiny_causal()
    seqs = _ids(backend, SENTENCES)
    plain = backend.token_logprobs(seqs, batch_size=1)
    backend.max_batch_tokens = 40
    budgeted = backend.token_logprobs(seqs, batch_size=64)
    for a, b in zip(plain, budgeted, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=0)


@pytest.mark.usefixtures("_single_thread")
def test_duplicates_computed_once_and_progress_adds_up() -> None:
    backend = tiny_causal()
    seqs = _ids(backend, SENTENCES[:4]) * 3 + [[backend.bos_token_id]]
    seen: list[int] = []
    out = backend.token_logprobs(seqs, batch_size=3, progress=seen.append)
    assert backend.stats.sequences_requested == len(seqs)
    assert backend.stats.sequences_computed == 4  # the one-token sequence needs no forward
    assert sum(seen) == len(seqs)
    for k in range(4):
        np.testing.assert_array_equal(out[k], out[k + 4])
        np.testing.assert_array_equal(out[k], out[k + 8])
    assert out[-1].shape == (0,)


def test_bos_falls_back_to_eos() -> None:
    backend = tiny_causal()
    assert backend.bos_token_id == backend.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    with_bos = tiny_causal("<bos>")
    assert with_bos.bos_token_id == with_bos.tokenizer.convert_tokens_to_ids("<bos>")
    assert with_bos.encode("the", add_special_tokens=True)[0] == with_bos.bos_token_id
    assert with_bos.decode_token(with_bos.bos_token_id) == "<bos>"


SANITY = "All the dirty and petty jobs are done by Dalits"


@pytest.mark.slow
def test_smollm2_sentence_logprob_matches_vllm_and_lm_eval() -> None:
    backend = smollm2()
    (values,) = backend.token_logprobs(_ids(backend, [SANITY]))
    assert float(values.sum()) == pytest.approx(-70.8406, abs=1e-3)


@pytest.mark.slow
def test_smollm2_prefers_real_word_order() -> None:
    backend = smollm2()
    rng = random.Random(0)
    texts = CORPUS[:4]
    shuffled = []
    for t in texts:
        words = t.split()
        while " ".join(words) == t:
            rng.shuffle(words)
        shuffled.append(" ".join(words))
    lps = [float(v.sum()) for v in backend.token_logprobs(_ids(backend, texts + shuffled))]
    for normal, mixed in zip(lps[:4], lps[4:], strict=True):
        assert normal - mixed > 15.0
    assert sum(lps[:4]) - sum(lps[4:]) > 80.0


@pytest.mark.slow
def test_smollm2_batch_size_invariance_and_hand_loop() -> None:
    backend = smollm2()
    seqs = _ids(backend, [*SENTENCES, SANITY])
    reference = [hand_causal_logprobs(backend, s) for s in seqs[:3]]
    runs = [backend.token_logprobs(seqs, batch_size=b) for b in (1, 3, 16)]
    for run in runs[1:]:
        for a, b in zip(runs[0], run, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-4, rtol=0)
            assert abs(a.sum() - b.sum()) <= 1e-4
    for ref, values in zip(reference, runs[2], strict=False):
        np.testing.assert_allclose(values, ref, atol=1e-4, rtol=0)
