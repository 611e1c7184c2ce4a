"""Request/response interfaces between scoring and model backends.

Modelled on lm-evaluation-harness' ``LM`` interface: scoring builds plain requests
(token-id sequences), a backend answers them in bulk, and batching, padding and device
placement stay the backend's business. Tokenisation is exposed because the metric
variants differ exactly in *what* is tokenised (BOS or not, one or two leading spaces).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
class TailLogprobs(Protocol):
    """A causal backend that can compute only the last log-probs of each sequence.

    A choice question reads its options' few tokens, not the shared prompt (~90% of an
    item's positions on BharatBBQ); a local backend then projects only those positions
    onto the vocabulary. Callers fall back to ``token_logprobs`` and slice where a
    backend lacks this.
    """

    def token_logprobs_tail(
        self,
        sequences: Sequence[Sequence[int]],
        tails: Sequence[int],
        *,
        batch_size: int | None = None,
        progress=None,
    ) -> list[np.ndarray]:
        """For each sequence, its last ``tails[i]`` values of ``token_logprobs`` (float64,
        ``0 <= tails[i] <= len(sequences[i]) - 1``), equal to slicing those."""
        ...


@runtime_checkable
class HasScoringOptions(Protocol):
    """A backend whose own choices decide which float operations compute a score (prefix
    sharing, batch shape, attention kernel). A run stores them with its environment, so
    two runs that differ in them are told apart rather than read as a model change."""

    def scoring_options(self) -> dict[str, object]: ...


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


def dedupe(sequences: Sequence[Sequence[int]]) -> tuple[list[tuple[int, ...]], list[int]]:
    """Unique sequences (first-seen order) and, for each input, its index among them."""
    index: dict[tuple[int, ...], int] = {}
    where = [index.setdefault(tuple(int(t) for t in seq), len(index)) for seq in sequences]
    return list(index), where


@dataclass
class UniqueSequences:
    """A bulk ``token_logprobs`` call after deduplication: what every causal backend
    (local or remote) does before it computes anything.

    Sequences shorter than two ids have nothing to score (the first id is context only)
    and are answered at once; ``todo`` lists the unique sequences left to compute.
    """

    unique: list[tuple[int, ...]]
    where: list[int]
    copies: np.ndarray  # how many requested sequences each unique one stands for
    results: list[np.ndarray | None]
    todo: list[int]

    @classmethod
    def of(
        cls, sequences: Sequence[Sequence[int]], progress: Callable[[int], None] | None
    ) -> UniqueSequences:
        unique, where = dedupe(sequences)
        copies = np.bincount(np.asarray(where, dtype=np.int64), minlength=len(unique))
        results: list[np.ndarray | None] = [None] * len(unique)
        todo: list[int] = []
        for u, seq in enumerate(unique):
            if len(seq) < 2:
                results[u] = np.zeros(0, dtype=np.float64)
                if progress is not None:
                    progress(int(copies[u]))
            else:
                todo.append(u)
        return cls(unique, where, copies, results, todo)

    def answers(self) -> list[np.ndarray]:
        """One array per requested sequence, in request order."""
        return [self.results[w] for w in self.where]  # type: ignore[misc]


@dataclass
class SequenceCounts:
    """What a causal backend was asked and really computed: the counts every backend,
    local or remote, keeps (its own stats add what it alone does), so tests and
    benchmarks read dedupe and batching the same way on each."""

    calls: int = 0
    sequences_requested: int = 0
    sequences_computed: int = 0
    tokens_computed: int = 0  # real (unpadded) tokens fed to the model


class DedupedCausalLM:
    """``CausalLM.token_logprobs`` as every causal backend answers it: the call is
    counted, identical sequences are computed once (``UniqueSequences``), and a subclass's
    ``_answer`` computes the rest. One home for the contract the backends share, so a
    local and a served model cannot drift apart in it."""

    stats: SequenceCounts

    def token_logprobs(
        self,
        sequences: Sequence[Sequence[int]],
        *,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[np.ndarray]:
        """log P(ids[i] | ids[:i]) for i = 1..n-1 of every sequence (float64 arrays).

        Identical sequences are computed once; ``progress`` is called after each batch
        with the number of *requested* sequences it answered (duplicates included), so the
        calls add up to ``len(sequences)``; a failure raises rather than returning
        partial results.
        """
        requests = self._requests(sequences, progress)
        self._answer(requests, batch_size, progress)
        return requests.answers()

    def _requests(
        self, sequences: Sequence[Sequence[int]], progress: Callable[[int], None] | None
    ) -> UniqueSequences:
        """The call counted and its sequences deduplicated (short ones answered at once)."""
        self.stats.calls += 1
        self.stats.sequences_requested += len(sequences)
        return UniqueSequences.of(sequences, progress)

    def _answer(
        self,
        requests: UniqueSequences,
        batch_size: int | None,
        progress: Callable[[int], None] | None,
    ) -> None:
        """Fill ``requests.results`` for every index in ``requests.todo``, calling
        ``progress`` with ``requests.copies`` of each batch answered."""
        raise NotImplementedError
