"""The LM head only at the positions whose log-probs are read (``logits_to_keep``).

A choice question reads its options' few tokens, so the tree path asks the model to
project only the rows those log-probs are read from onto the vocabulary. It must be the
model's own head: a Granite model divides its logits by ``config.logits_scaling``, which a
head rebuilt by hand from the output embeddings misses. The real SmolLM2 on real BharatBBQ
``mini`` items checks that options score as with the full head.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from _models import (
    CORPUS,
    one_thread,
    smollm2,
    tiny_bert,
    tiny_bpe_tokenizer,
    tiny_causal,
    tiny_causal_lm,
)
from transformers import GraniteConfig, GraniteForCausalLM

from monitor.backends.base import TailLogprobs
from monitor.backends.hf_causal import HFCausalLM, accepts_logits_to_keep
from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.families.choice_qa.scoring import OptionPlanner, score_local

# Measured on the first 24 bharatbbq-caste mini items (72 options): every option's
# log-likelihood had the same bits with and without ``logits_to_keep`` (the test
# allows 1e-6 nats: another BLAS may round a product of fewer rows differently).
SMOLLM2_TOLERANCE = 1e-6


def tiny_granite(vocab: int) -> GraniteForCausalLM:
    """A two-layer random Granite (built from its config, nothing downloaded) whose
    forward scales logits: ``logits_scaling`` 4 divides them by four."""
    return tiny_causal_lm(
        GraniteConfig,
        GraniteForCausalLM,
        vocab,
        attn_implementation="sdpa",
        num_key_value_heads=1,
        logits_scaling=4.0,
    )


def option_like(backend: HFCausalLM) -> tuple[list[tuple[int, ...]], list[int]]:
    """Three sequences sharing a long prompt, each scored on its last few tokens (as a
    choice question's options are), plus a corpus sentence read whole."""
    bos = backend.bos_token_id
    prompt = backend.encode(CORPUS[0] + " " + CORPUS[1], add_special_tokens=False)
    seqs, tails = [], []
    for option in (" the river", " a doctor", " nobody"):
        tail = backend.encode(option, add_special_tokens=False)
        seqs.append((bos, *prompt, *tail))
        tails.append(len(tail))
    whole = (bos, *backend.encode(CORPUS[2], add_special_tokens=False))
    return [*seqs, whole], [*tails, len(whole) - 1]


@pytest.fixture(autouse=True)
def _single_thread():
    with one_thread():
        yield


@torch.inference_mode()
def own_forward_logprobs(model, seq: tuple[int, ...]) -> np.ndarray:
    """The model's full forward over one sequence alone, log-softmax in float64."""
    logp = torch.log_softmax(model(input_ids=torch.tensor([seq])).logits[0].double(), dim=-1)
    return np.array([float(logp[i - 1, seq[i]]) for i in range(1, len(seq))])


@torch.inference_mode()
def hand_head_logprobs(model, seq: tuple[int, ...]) -> np.ndarray:
    """A head rebuilt from ``base_model`` and the output embeddings (what an earlier
    attempt did): no ``logits_scaling``."""
    hidden = model.base_model(input_ids=torch.tensor([seq])).last_hidden_state[0]
    logp = torch.log_softmax(model.get_output_embeddings()(hidden).double(), dim=-1)
    return np.array([float(logp[i - 1, seq[i]]) for i in range(1, len(seq))])


def test_the_models_own_head_runs_at_the_kept_positions() -> None:
    tok = tiny_bpe_tokenizer(None)
    model = tiny_granite(len(tok)).double()  # float64: the tree equals separate passes
    backend = HFCausalLM(model, tok, name="tiny-granite")
    assert backend.head_at_read_positions and accepts_logits_to_keep(model)
    seqs, tails = option_like(backend)
    # The tree path itself (Granite is not on the prefix-sharing allow-list, so
    # token_logprobs would pad): the narrowest seam that runs the kept-positions head.
    got = backend._forward_tree(seqs, tails)()  # launch, then read
    s = backend.stats
    assert 0 < s.logit_rows < s.tokens_computed / 2  # the head ran at the read rows only
    scaled_apart = 0.0
    for g, seq, tail in zip(got, seqs, tails, strict=True):
        own = own_forward_logprobs(model, seq)[len(seq) - 1 - tail :]
        assert len(g) == tail
        np.testing.assert_allclose(g, own, atol=1e-12, rtol=0)
        hand = hand_head_logprobs(model, seq)[len(seq) - 1 - tail :]
        scaled_apart = max(scaled_apart, float(np.max(np.abs(hand - own))))
    # The scaling matters here, so a hand-built head would fail the comparison above.
    assert scaled_apart > 0.1


def test_tails_equal_the_full_head_and_every_logprob_still_feeds_it_all() -> None:
    backend = tiny_causal()  # float32 llama, prefix sharing on
    assert isinstance(backend, TailLogprobs) and backend.prefix_sharing
    seqs, tails = option_like(backend)
    full = backend.token_logprobs(seqs)
    assert backend.stats.logit_rows == backend.stats.tokens_computed  # nothing to skip
    backend.stats = type(backend.stats)()
    got = backend.token_logprobs_tail([*seqs, seqs[0]], [*tails, 1])  # a repeat, shorter
    assert 0 < backend.stats.logit_rows < backend.stats.tokens_computed / 2
    assert backend.stats.sequences_computed == len(seqs)
    for g, f, tail in zip(got, [*full, full[0]], [*tails, 1], strict=True):
        assert len(g) == tail
        np.testing.assert_allclose(g, f[len(f) - tail :], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="a tail of 99"):
        backend.token_logprobs_tail(seqs[:1], [99])


def test_a_forward_without_logits_to_keep_keeps_the_full_head() -> None:
    # BERT's forward has no such argument: a model like it would get the full head.
    assert not accepts_logits_to_keep(tiny_bert().model)
    assert accepts_logits_to_keep(tiny_causal().model)


@pytest.fixture(scope="module")
def caste_mini(tmp_path_factory, shared_datasets: Path):
    """The first four bharatbbq-caste items at ``--size mini``, loaded by manifest."""
    data_dir = tmp_path_factory.mktemp("datasets")
    fetch(load_manifest(), ["bharatbbq-caste"], from_dir=shared_datasets, data_dir=data_dir)
    (bench,) = load_benchmarks(
        ["bharatbbq-caste"], errata="none", data_dir=data_dir, options={"size": "mini"}
    )
    return bench.items[:4]


def test_smollm2_options_score_as_with_the_full_head(caste_mini) -> None:
    kept = smollm2()
    full = copy.copy(kept)
    full.head_at_read_positions = False
    for backend in (kept, full):
        backend.stats = type(backend.stats)()
    with_kept = score_local(kept, caste_mini, "mc-loglik", batch_size=6)
    with_full = score_local(full, caste_mini, "mc-loglik", batch_size=6)
    worst = 0.0
    for a, b in zip(with_kept, with_full, strict=True):
        assert a.item_id == b.item_id and a.outcome == b.outcome
        diffs = [abs(x - y) for x, y in zip(a.details["ll"], b.details["ll"], strict=True)]
        worst = max(worst, *diffs)
    assert worst <= SMOLLM2_TOLERANCE
    # The head ran at the options' tokens only: on these items well under a quarter of
    # the fed positions (the prompt is ~90% of an item).
    planner = OptionPlanner(kept)
    option_tokens = sum(sum(planner.plan(it).n_option_tokens) for it in caste_mini)
    assert kept.stats.tokens_computed == full.stats.tokens_computed
    assert full.stats.logit_rows == full.stats.tokens_computed
    assert kept.stats.logit_rows <= option_tokens < full.stats.logit_rows / 4
