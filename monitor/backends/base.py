"""Request/response interfaces between scoring and model backends.

Modelled on lm-evaluation-harness' ``LM`` interface: scoring builds plain requests
(token-id sequences), a backend answers them in bulk, and batching, padding and device
placement stay the backend's business. Tokenisation is exposed because the metric
variants differ exactly in *what* is tokenised (BOS or not, one or two leading spaces).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class CausalLM(Protocol):
    """A causal LM that returns per-token log-probabilities of given token sequences."""

    name: str
    device: str
    dtype: str

    @property
    def bos_token_id(self) -> int | None: ...

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        """Token ids of ``text``; ``add_special_tokens`` follows Hugging Face semantics."""
        ...

    def decode_token(self, token_id: int) -> str: ...

    def token_logprobs(
        self, sequences: Sequence[Sequence[int]], *, batch_size: int | None = None, progress=None
    ) -> list[np.ndarray]:
        """For each sequence of n ids, an array of n-1 float64 values:
        log P(ids[i] | ids[:i]) for i = 1..n-1. The first id is context only.

        Results must not depend on batch composition (padding-correct).
        """
        ...


@runtime_checkable
class MaskedLM(Protocol):
    """A masked LM scored with All Unmasked Likelihood (AUL)."""

    name: str
    device: str
    dtype: str

    def unmasked_token_logprobs(
        self, texts: Sequence[str], *, batch_size: int | None = None, progress=None
    ) -> list[np.ndarray]:
        """For each text, log P(w_i | whole unmasked sentence) for every non-special token."""
        ...
