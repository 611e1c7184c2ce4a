"""HFMaskedLM (AUL inputs) on a tiny random BERT against a one-text-at-a-time hand loop.

BERT attends in both directions, so a padding bug here would change every value of a
short text batched with a long one; batch sizes 1, 3 and 16 must agree.
"""

from __future__ import annotations

import numpy as np
import pytest
from _models import CORPUS, hand_mlm_logprobs, one_thread, tiny_bert

from monitor.backends.base import CausalLM, MaskedLM

TEXTS = [*CORPUS, "The doctor said.", "the river", "People"]


@pytest.fixture(autouse=True, scope="module")
def _single_thread():
    with one_thread():
        yield


def test_tiny_bert_matches_hand_loop_at_every_batch_size() -> None:
    backend = tiny_bert()
    assert isinstance(backend, MaskedLM) and not isinstance(backend, CausalLM)
    reference = [hand_mlm_logprobs(backend, t) for t in TEXTS]
    for batch_size in (1, 3, 16):
        got = backend.unmasked_token_logprobs(TEXTS, batch_size=batch_size)
        for ref, values in zip(reference, got, strict=True):
            assert values.dtype == np.float64 and len(values) == len(ref)
            np.testing.assert_allclose(values, ref, atol=1e-4, rtol=0)


def test_special_tokens_left_out_and_duplicates_computed_once() -> None:
    backend = tiny_bert()
    n_words = len(backend.tokenizer("the river")["input_ids"]) - 2  # minus [CLS], [SEP]
    seen: list[int] = []
    out = backend.unmasked_token_logprobs(
        ["the river", "People", "the river"], progress=seen.append
    )
    assert len(out[0]) == n_words == 2
    np.testing.assert_array_equal(out[0], out[2])
    assert backend.stats.sequences_computed == 2 and sum(seen) == 3
