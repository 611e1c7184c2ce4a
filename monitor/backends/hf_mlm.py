"""Unmasked per-token log-probabilities from a Hugging Face masked LM (for AUL).

Kaneko & Bollegala (2022) feed the whole sentence unmasked and read log P(w_i | S) at
every token: one forward pass per sentence instead of one per masked token. Special
tokens ([CLS], [SEP], <s>, </s>) are context, not words, so they are left out.

Texts are deduplicated, sorted by length and right-padded with the tokenizer's real pad
id (RoBERTa derives position ids from it), under an attention mask, so a text's values
do not depend on what else shares its batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

import numpy as np
import torch

from monitor.backends.hf_causal import HFBackend, HFOptions, Progress, length_sorted_batches


class HFMaskedLM(HFBackend):
    """``monitor.backends.base.MaskedLM`` over a loaded transformers masked LM + tokenizer."""

    def __init__(self, model, tokenizer, **options: Unpack[HFOptions]) -> None:
        super().__init__(model, tokenizer, **options)
        if tokenizer.pad_token_id is None:
            raise ValueError(f"tokenizer of {self.name} has no pad token; AUL needs one to batch")
        self._pad_id = int(tokenizer.pad_token_id)

    def _encode(self, text: str) -> tuple[list[int], list[int]]:
        enc = self.tokenizer(text, add_special_tokens=True, return_special_tokens_mask=True)
        return list(enc["input_ids"]), list(enc["special_tokens_mask"])

    def unmasked_token_logprobs(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: Progress | None = None,
    ) -> list[np.ndarray]:
        """For each text, log P(w_i | whole unmasked text) at each non-special token."""
        self.stats.calls += 1
        self.stats.sequences_requested += len(texts)
        index: dict[str, int] = {}
        where = [index.setdefault(t, len(index)) for t in texts]
        unique = list(index)
        copies = np.bincount(np.asarray(where, dtype=np.int64), minlength=len(unique))
        encoded = [self._encode(t) for t in unique]
        results: list[np.ndarray | None] = [None] * len(unique)
        for batch in length_sorted_batches(
            [len(ids) for ids, _ in encoded], batch_size or self.batch_size
        ):
            for u, values in zip(batch, self._forward([encoded[u] for u in batch]), strict=True):
                results[u] = values
            if progress is not None:
                progress(int(copies[batch].sum()))
        return [results[w] for w in where]  # type: ignore[misc]

    @torch.inference_mode()
    def _forward(self, batch: list[tuple[list[int], list[int]]]) -> list[np.ndarray]:
        lengths = [len(ids) for ids, _ in batch]
        width = max(lengths)
        ids = torch.full((len(batch), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, (seq, _) in enumerate(batch):
            ids[r, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[r, : len(seq)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        logits = self.model(input_ids=ids, attention_mask=mask).logits
        picked = logits.gather(-1, ids.unsqueeze(-1)).squeeze(-1).float()
        values = (picked - torch.logsumexp(logits.float(), dim=-1)).double().cpu().numpy()
        self.stats.forward_passes += 1
        self.stats.sequences_computed += len(batch)
        self.stats.tokens_computed += sum(lengths)
        self.stats.padded_tokens += len(batch) * width
        out = []
        for r, (_, special) in enumerate(batch):
            keep = np.asarray(special, dtype=bool) == 0
            out.append(values[r, : lengths[r]][keep].copy())
        return out
