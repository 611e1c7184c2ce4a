"""Per-token log-probabilities from a Hugging Face causal LM, batched and padding-correct.

Why it looks the way it does:

* Identical token sequences are computed once per call (metrics ask for the same target
  word prior many times), and ``stats`` counts what was really computed so that saving
  is measurable.
* Sequences are sorted by length before batching, so a batch pads little; padding is on
  the right with an attention mask and explicit position ids, which for a causal model
  leaves every real position's logits exactly what they are at batch size 1 (up to
  float summation order).
* A log-prob is ``logit[target] - logsumexp(logits)`` computed in fp32 per position: the
  full-vocabulary log-softmax tensor is never kept, and bf16/fp16 models still get an
  fp32 normaliser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from monitor.backends.base import UniqueSequences

Progress = Callable[[int], None]

DEFAULT_BATCH_SIZE = 16


@dataclass
class BackendStats:
    """What a backend really computed, for tests and benchmarks of the dedupe/batching."""

    calls: int = 0
    sequences_requested: int = 0
    sequences_computed: int = 0
    tokens_computed: int = 0  # real (unpadded) tokens fed to the model
    padded_tokens: int = 0  # batch rows x batch length, padding included
    forward_passes: int = 0


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, max_batch_tokens: int | None = None
) -> list[list[int]]:
    """Indices grouped into batches, longest first, each at most ``batch_size`` rows and
    (when given) at most ``max_batch_tokens`` padded tokens.

    Longest first makes the most memory-hungry batch the first one, so an out-of-memory
    error shows up at once rather than at the end of a long run.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # The first index of a batch is its longest, so it fixes the padded width.
        width = lengths[current[0]] if current else lengths[i]
        too_many = len(current) >= batch_size
        too_wide = max_batch_tokens is not None and (len(current) + 1) * width > max_batch_tokens
        if current and (too_many or too_wide):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class HFCausalLM:
    """``monitor.backends.base.CausalLM`` over a loaded transformers model + tokenizer.

    The loader decides device and dtype and moves/casts the model; this class only feeds
    it tensors on ``device`` and records ``dtype`` for provenance.
    """

    def __init__(
        self,
        model,
        tokenizer,
        *,
        name: str,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_batch_tokens: int | None = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.stats = BackendStats()
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        # Any id works on the right of a causal sequence (it is masked and never read),
        # but a real one keeps embedding lookups in range.
        self._pad_id = int(pad)

    @property
    def bos_token_id(self) -> int | None:
        """The BOS id, falling back to EOS as lm-evaluation-harness does (GPT-2 has
        only ``<|endoftext|>``), so a first real token always has a context to score."""
        tok = self.tokenizer
        for candidate in (
            tok.bos_token_id,
            getattr(self.model.config, "bos_token_id", None),
            tok.eos_token_id,
        ):
            if isinstance(candidate, int):
                return candidate
        return None

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=add_special_tokens))

    def decode_token(self, token_id: int) -> str:
        return self.tokenizer.decode([int(token_id)])

    def token_logprobs(
        self,
        sequences: Sequence[Sequence[int]],
        *,
        batch_size: int | None = None,
        progress: Progress | None = None,
    ) -> list[np.ndarray]:
        """log P(ids[i] | ids[:i]) for i = 1..n-1 of every sequence (float64 arrays).

        ``progress`` is called after each batch with the number of *requested*
        sequences it answered (duplicates included), so the calls add up to
        ``len(sequences)``.
        """
        self.stats.calls += 1
        self.stats.sequences_requested += len(sequences)
        req = UniqueSequences.of(sequences, progress)
        unique, results, todo = req.unique, req.results, req.todo
        lengths = [len(unique[u]) for u in todo]
        for batch in length_sorted_batches(
            lengths, batch_size or self.batch_size, self.max_batch_tokens
        ):
            members = [todo[b] for b in batch]
            for u, values in zip(members, self._forward([unique[u] for u in members]), strict=True):
                results[u] = values
            if progress is not None:
                progress(int(req.copies[members].sum()))
        return req.answers()

    @torch.inference_mode()
    def _forward(self, batch: list[tuple[int, ...]]) -> list[np.ndarray]:
        """One padded forward pass; returns each row's n-1 log-probs."""
        lengths = [len(s) for s in batch]
        width = max(lengths)
        ids = torch.full((len(batch), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, seq in enumerate(batch):
            ids[r, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[r, : len(seq)] = 1
        positions = torch.arange(width, dtype=torch.long).unsqueeze(0).expand(len(batch), -1)
        ids, mask, positions = (t.to(self.device) for t in (ids, mask, positions))
        logits = self.model(
            input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False
        ).logits[:, :-1]
        targets = ids[:, 1:].unsqueeze(-1)
        picked = logits.gather(-1, targets).squeeze(-1).float()
        values = (picked - torch.logsumexp(logits.float(), dim=-1)).double().cpu().numpy()
        self.stats.forward_passes += 1
        self.stats.sequences_computed += len(batch)
        self.stats.tokens_computed += sum(lengths)
        self.stats.padded_tokens += len(batch) * width
        return [values[r, : n - 1].copy() for r, n in enumerate(lengths)]
