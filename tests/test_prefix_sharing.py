"""Prefix sharing in HFCausalLM: the same log-probs as the padded path, with less work.

Tiny random models of every allow-listed architecture (each attention implementation
that takes a custom mask) are checked token by token against the padded path and the
hand loop. The real SmolLM2 is checked on the pass of cll v3's four Indian-BhED axes
where a float32 attention core put the two paths furthest apart (slow); make bench
compares all of those axes' sequences on every run.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from _models import (
    CORPUS,
    hand_causal_logprobs,
    one_thread,
    tiny_bert,
    tiny_bpe_tokenizer,
)
from transformers import (
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    OPTConfig,
    OPTForCausalLM,
)

from monitor.backends.hf_causal import PREFIX_SHARING_MODEL_TYPES, HFCausalLM, pass_sizes
from monitor.backends.onednn_linear import ATEN, ONEDNN, onednn_available
from monitor.backends.prefix_tree import tree_batches
from monitor.backends.wide_attention import WIDE_SDPA
from monitor.kinds import load_backend
from monitor.scoring.score import scoring_provenance
from monitor.snapshots.registry import load_snapshots

# Pairs that agree up to a differing word, the target-word priors a CLL plan asks for,
# a sentence that is a prefix of another, a duplicate, and plain corpus sentences.
TEXTS = [
    "The doctor said that she would come",
    "The doctor said that he would come",
    "The nurse walked by the river",
    "The pilot walked by the river",
    " she",
    " he",
    " nurse",
    "The doctor said",
    "The doctor said that she would come",
    *CORPUS,
]

WIDTH = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2}
HEADS = {"num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 256}


def _model(kind: str, vocab: int, attn: str, sliding_window: int | None = None):
    """A two-layer random model of ``kind`` with a wide init, so log-probs differ."""
    if kind == "llama":
        config, cls = LlamaConfig(vocab_size=vocab, **WIDTH, **HEADS), LlamaForCausalLM
    elif kind == "mistral":
        config = MistralConfig(vocab_size=vocab, sliding_window=sliding_window, **WIDTH, **HEADS)
        cls = MistralForCausalLM
    elif kind == "gemma3_text":
        config = Gemma3TextConfig(
            vocab_size=vocab, head_dim=8, sliding_window=sliding_window or 512, **WIDTH, **HEADS
        )
        cls = Gemma3ForCausalLM
    elif kind == "gpt2":
        config = GPT2Config(vocab_size=vocab, n_embd=16, n_layer=2, n_head=2, n_positions=256)
        cls = GPT2LMHeadModel
    else:
        config = OPTConfig(
            vocab_size=vocab, hidden_size=16, ffn_dim=32, num_hidden_layers=2,
            num_attention_heads=2, word_embed_proj_dim=16,
        )  # fmt: skip
        cls = OPTForCausalLM
    config.initializer_range = 0.5
    config._attn_implementation = attn
    torch.manual_seed(0)
    return cls(config).eval()


def _pair(kind: str, attn: str = "sdpa", sliding_window: int | None = None, *, wide: bool = True):
    """(shared, unshared) backends over one tiny model (fp32: sdpa gets the float64 core
    unless ``wide`` is False)."""
    tok = tiny_bpe_tokenizer(None)
    model = _model(kind, len(tok), attn, sliding_window)
    return (
        HFCausalLM(model, tok, name=f"tiny-{kind}", prefix_sharing=True, wide_attention=wide),
        HFCausalLM(model, tok, name=f"tiny-{kind}", prefix_sharing=False, wide_attention=wide),
    )


def _ids(backend: HFCausalLM, texts=TEXTS) -> list[list[int]]:
    return [[backend.bos_token_id, *backend.encode(t, add_special_tokens=False)] for t in texts]


@pytest.fixture(autouse=True)
def _single_thread():
    with one_thread():
        yield


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("kind", sorted(PREFIX_SHARING_MODEL_TYPES))
def test_shared_equals_padded_and_hand_loop(kind: str, attn: str) -> None:
    shared, padded = _pair(kind, attn)
    assert shared.prefix_sharing and not padded.prefix_sharing
    seqs = _ids(shared)
    for batch_size in (16, 3):
        shared.stats = type(shared.stats)()
        padded.stats = type(padded.stats)()
        got = shared.token_logprobs(seqs, batch_size=batch_size)
        want = padded.token_logprobs(seqs, batch_size=batch_size)
        for g, w, seq in zip(got, want, seqs, strict=True):
            assert g.dtype == np.float64 and len(g) == len(seq) - 1
            if attn == "sdpa":  # the float64 core: the same bits (wide_attention)
                np.testing.assert_array_equal(g, w)
            else:
                np.testing.assert_allclose(g, w, atol=1e-5, rtol=0)
        for g, seq in zip(got, seqs, strict=True):
            np.testing.assert_allclose(g, hand_causal_logprobs(shared, seq), atol=1e-4, rtol=0)
        # Less work: shared prefixes (every BOS, the pairs' openings) and every
        # sequence's last token are not fed, and nothing is padded.
        s, p = shared.stats, padded.stats
        assert s.sequences_computed == p.sequences_computed == len(seqs) - 1  # a duplicate
        assert s.tokens_computed == s.padded_tokens == s.logit_rows
        assert s.tokens_computed < p.tokens_computed - p.sequences_computed < p.padded_tokens
        if batch_size == 16:  # one tree: 166 positions against 212 (tiny BPE)
            assert s.tokens_computed <= 0.8 * (p.tokens_computed - p.sequences_computed)


@pytest.mark.parametrize("kind", sorted(PREFIX_SHARING_MODEL_TYPES))
def test_float64_tree_equals_padded_and_hand_loop_exactly(kind: str) -> None:
    """Free of fp32 rounding, the tree computes what separate rows do, to 1e-12 nats:
    prefixes of other sequences, a duplicate and BOS + word priors that open a sentence
    (cll v3's bare form) included. In fp32 with a float32 attention core the paths
    differed by rounding alone, up to 7.9e-4 nats on SmolLM2 (module docstring of
    monitor.backends.hf_causal); float64 log-probs are not rounded through fp32. sdpa
    only: the eager attention of llama, mistral and gemma3 takes its softmax in fp32
    whatever the model's dtype."""
    shared, padded = _pair(kind, "sdpa")
    shared.model.double()  # one model under both backends
    seqs = _ids(shared, [*TEXTS, "The", "The doctor", "The nurse"])
    got = shared.token_logprobs(seqs, batch_size=16)
    want = padded.token_logprobs(seqs, batch_size=16)
    for g, w, seq in zip(got, want, seqs, strict=True):
        np.testing.assert_allclose(g, w, atol=1e-12, rtol=0)
        np.testing.assert_allclose(g, hand_causal_logprobs(shared, seq), atol=1e-12, rtol=0)


def test_same_sequences_give_the_same_bits_whatever_their_order() -> None:
    shared, _ = _pair("llama")
    seqs = _ids(shared)
    first = shared.token_logprobs(seqs, batch_size=64)
    again = shared.token_logprobs(list(reversed(seqs)), batch_size=64)[::-1]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


def test_sequences_longer_than_a_sliding_window_take_the_padded_path() -> None:
    """A custom mask replaces the model's sliding window, so such passes are padded."""
    shared, padded = _pair("mistral", sliding_window=6)
    short = [s for s in _ids(shared) if len(s) <= 6]
    long = [s for s in _ids(shared) if len(s) > 6]
    assert short and long
    shared.token_logprobs(short, batch_size=64)
    assert shared.stats.tokens_computed == shared.stats.padded_tokens  # a tree
    got = shared.token_logprobs(long, batch_size=64)
    assert shared.stats.padded_tokens > shared.stats.tokens_computed  # padded
    for g, w in zip(got, padded.token_logprobs(long, batch_size=64), strict=True):
        np.testing.assert_array_equal(g, w)


def test_other_architectures_keep_the_padded_path() -> None:
    shared, _ = _pair("opt")
    assert not shared.prefix_sharing
    assert shared.scoring_options()["prefix_sharing"] is False
    seqs = _ids(shared, TEXTS[:4])
    for g, seq in zip(shared.token_logprobs(seqs), seqs, strict=True):
        np.testing.assert_allclose(g, hand_causal_logprobs(shared, seq), atol=1e-4, rtol=0)


def test_scoring_options_record_the_choice() -> None:
    shared, padded = _pair("llama")
    assert shared.scoring_options() == {
        "backend": "hf-causal",
        "prefix_sharing": True,
        "batch_size": 16,
        "max_batch_tokens": 512,
        "attn_implementation": WIDE_SDPA,
        # float32 on a CPU: the linear layers run on oneDNN (test_onednn_linear.py).
        "linear_kernel": ONEDNN if onednn_available() else ATEN,
        # The tiny model's two layers are both among the first three run in float64.
        "float64_linear_layers": 2 if onednn_available() else 0,
        # None is left after them for the first positions' float64 rows.
        "float64_first_row_layers": 0,
    }
    assert padded.scoring_options()["prefix_sharing"] is False
    assert scoring_provenance(shared) == {"chunk_requests": 128, **shared.scoring_options()}
    assert scoring_provenance(tiny_bert(), chunk_requests=8) == {"chunk_requests": 8}


def test_pass_sizes_keep_the_cpu_defaults_and_bound_a_gpu_pass_by_its_logits() -> None:
    """A CPU keeps 16 rows and the 512-node tree; a GPU gets 128 rows and the largest
    node budget (a power of two, 512 to 8,192) whose logits fit in 1 GiB."""
    assert pass_sizes("cpu", 49_152, 4) == (16, None, None)
    assert pass_sizes("cuda", 49_152, 2) == (128, 8192, 1024)  # SmolLM2's vocabulary, bf16
    assert pass_sizes("cuda:1", 49_152, 4) == (128, 4096, 1024)  # float32: twice the bytes
    assert pass_sizes("cuda", 256_000, 2) == (128, 2048, 1024)  # Gemma's vocabulary
    assert pass_sizes("cuda", 4_000_000, 2) == (128, 512, 1024)  # never below the CPU's


def test_a_float32_core_is_what_set_the_paths_apart() -> None:
    """Without the float64 core, the same tiny model's two paths do not give the same
    bits (what the exact comparisons above would catch)."""
    shared, padded = _pair("llama", wide=False)
    assert shared.scoring_options()["attn_implementation"] == "sdpa"
    seqs = _ids(shared)
    got = shared.token_logprobs(seqs, batch_size=16)
    want = padded.token_logprobs(seqs, batch_size=16)
    assert any(not np.array_equal(g, w) for g, w in zip(got, want, strict=True))


@pytest.mark.slow
def test_load_backend_shares_prefixes_with_the_padded_paths_bits(session_cache, bhed) -> None:
    """SmolLM2 through the snapshot loader: sharing is the default and ``False`` turns it
    off. The pass checked is the one of cll v3's four Indian-BhED axes where a float32
    attention core put the tree and the padded path furthest apart (a bare-form name
    prior right after BOS, 7.9e-4 nats over the whole run, 1.0e-4 within this pass):
    with the float64 core every sequence of it has the same bits on both paths."""
    from monitor.families.pairs.planners import make_planner

    snapshot = load_snapshots()["smollm2-135m-instruct-q4"]
    on = load_backend(snapshot, device="cpu", dtype="float32", cache_dir=session_cache)
    off = HFCausalLM(on.model, on.tokenizer, name=on.name, prefix_sharing=False)
    assert on.scoring_options()["prefix_sharing"] is True  # the default
    # On a CPU the loader keeps the CPU's pass sizes (pass_sizes).
    assert (on.batch_size, on.max_batch_tokens, on.requests_per_call) == (16, None, None)
    assert off.scoring_options()["prefix_sharing"] is False
    load = load_backend(
        snapshot, device="cpu", dtype="float32", cache_dir=session_cache, prefix_sharing=False
    )
    assert load.scoring_options()["prefix_sharing"] is False
    assert on.scoring_options()["attn_implementation"] == WIDE_SDPA

    items = [it for b in bhed for it in b.items]
    planner = make_planner("cll", on)
    requests = list(dict.fromkeys(r for it in items for r in planner.plan(it).requests))
    prior = (on.bos_token_id, *on.encode("Scotts", add_special_tokens=False))
    at = requests.index(prior)
    batch = next(b for b in tree_batches(requests, 16, 512) if at in b)
    seqs = [requests[i] for i in batch]
    assert len(seqs) == 16

    shared, padded = on.token_logprobs(seqs), off.token_logprobs(seqs)
    assert on.stats.tokens_computed < off.stats.tokens_computed  # one tree, not padded
    for a, b in zip(shared, padded, strict=True):
        np.testing.assert_array_equal(a, b)

    narrow = copy.deepcopy(on.model)
    narrow.set_attn_implementation("sdpa")
    tree32 = HFCausalLM(narrow, on.tokenizer, name="n", wide_attention=False)
    pad32 = HFCausalLM(narrow, on.tokenizer, name="n", prefix_sharing=False, wide_attention=False)
    gap = [
        abs(a.sum() - b.sum())
        for a, b in zip(tree32.token_logprobs(seqs), pad32.token_logprobs(seqs), strict=True)
    ]
    assert max(gap) > 5e-5  # this pass does show the float32 core's rounding
