"""A causal LM as an embedding backend: input-embedding rows or mean-pooled hidden states.

Two readings of one model (``[embedding] pooling`` in the snapshot):

* ``input-embeddings``: the rows of the input-embedding matrix for the term's tokens,
  averaged: a static, context-free vector per term (the MODELS.md stand-in for Hindi
  static vectors: Gemma-3-270m tokenises most Hindi words into one token). With
  ``centre`` the mean row of the whole vocabulary is subtracted first.
* ``mean-hidden``: the last layer's hidden states over the term's tokens, averaged, with
  the model run on BOS + the term; BOS itself is left out of the mean, because its state
  is identical for every input under causal attention and would pull all vectors
  together.

The term is tokenised with ``word_prefix`` in front (default one space), so a word gets
the word-initial tokens it has mid-sentence. Weights are loaded exactly as for CLL
scoring (``monitor.backends.loading``): verified, GGUF dequantised once to fp32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np

from monitor.backends.embedding import Embedded, embed_in_blocks
from monitor.backends.loading import load_model_and_tokenizer
from monitor.snapshots.model import EmbeddingSettings, Snapshot

if TYPE_CHECKING:
    from monitor.backends.loading import LoadOptions


@dataclass
class CausalEmbedder:
    model: Any
    tokenizer: Any
    name: str
    settings: EmbeddingSettings
    device: str = "cpu"
    dtype: str = "float32"
    progress: Any = field(default=None, repr=False)
    _table: Any = field(default=None, repr=False)
    weights_files: tuple[str, ...] = field(default=(), repr=False)  # set by the loader

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(self.settings.word_prefix + text, add_special_tokens=False)[
            "input_ids"
        ]

    def _input_rows(self) -> Any:
        if self._table is None:
            table = self.model.get_input_embeddings().weight.detach().float()
            if self.settings.centre:
                table = table - table.mean(dim=0, keepdim=True)
            self._table = table
        return self._table

    def embed(self, texts: Sequence[str]) -> list[Embedded]:
        import torch

        def block(texts: list[str]) -> list[Embedded]:
            ids = [self._ids(t) for t in texts]
            if self.settings.pooling == "input-embeddings":
                table = self._input_rows()
                vectors = [table[torch.tensor(i)].mean(dim=0).numpy() for i in ids]
            else:
                vectors = self._hidden_means(ids)
            return [
                Embedded(np.asarray(v, dtype=np.float32), {"n_tokens": len(i)})
                for v, i in zip(vectors, ids, strict=True)
            ]

        with torch.inference_mode():
            return embed_in_blocks(texts, self.settings.batch_size, block, self.progress)

    def _hidden_means(self, ids: list[list[int]]) -> list[np.ndarray]:
        import torch

        bos = self.tokenizer.bos_token_id
        prefix = [bos] if bos is not None else []
        seqs = [prefix + i for i in ids]
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs])
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
        hidden = self.model(
            input_ids=input_ids.to(self.device),
            attention_mask=mask.to(self.device),
            output_hidden_states=True,
        ).hidden_states[-1]
        hidden = hidden.float().cpu()
        skip = len(prefix)
        return [hidden[k, skip : len(s)].mean(dim=0).numpy() for k, s in enumerate(seqs)]

    def describe(self) -> dict[str, Any]:
        return {
            "library": "transformers",
            "pooling": self.settings.pooling,
            "centre": self.settings.centre,
            "word_prefix": self.settings.word_prefix,
            "dimension": int(self.model.get_input_embeddings().weight.shape[1]),
            "batch_size": self.settings.batch_size,
        }


def load_causal_embedder(snapshot: Snapshot, **options: Unpack[LoadOptions]) -> CausalEmbedder:
    """Backend of kind ``causal-lm-embeddings`` (``SnapshotUnavailable`` when the weights
    cannot be had here)."""
    loaded = load_model_and_tokenizer(snapshot, **options)
    backend = CausalEmbedder(
        loaded.model,
        loaded.tokenizer,
        snapshot.id,
        snapshot.embedding or EmbeddingSettings(),
        loaded.device,
        loaded.dtype,
    )
    backend.weights_files = loaded.weights.files  # the run's provenance (weights_facts)
    return backend
