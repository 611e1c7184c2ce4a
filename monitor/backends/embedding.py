"""What every embedding backend offers the association-test driver.

An embedding backend turns texts (a word, or a SEAT sentence) into vectors. Contextual
encoders embed any text; a static vocabulary may lack a word, and then says so (``None``
with a reason) instead of inventing a vector: the driver lists such terms per test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class Embedded:
    """One text's vector (float32), or None with the reason it has none.

    ``note`` carries per-text facts a reader may need (e.g. how many words of a sentence
    a static vocabulary lacked); it is stored with the term's score.
    """

    vector: np.ndarray | None
    note: dict[str, Any] = field(default_factory=dict)


class EmbeddingBackend(Protocol):
    """The interface of the ``*`` embedding kinds' backends (see ``monitor.kinds``)."""

    name: str
    device: str
    dtype: str

    def embed(self, texts: Sequence[str]) -> list[Embedded]:
        """One result per text, in order. Deterministic for a given text and backend."""
        ...

    def describe(self) -> dict[str, Any]:
        """What a reader needs to reproduce the vectors (prefixes, pooling, dimension),
        stored in the run's environment under ``embedding``."""
        ...


def as_float32(vectors: Any) -> np.ndarray:
    """A 2-D float32 array, C-contiguous (what the store writes and cosines read)."""
    return np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))


def embed_in_blocks(
    texts: Sequence[str],
    size: int,
    embed_block: Callable[[list[str]], list[Embedded]],
    progress: Callable[[int], None] | None,
) -> list[Embedded]:
    """``embed_block`` over ``texts`` ``size`` at a time, in order, telling ``progress``
    after each block how many texts it embedded: a long SEAT set shows progress, and
    every encoder batches the same way."""
    out: list[Embedded] = []
    for start in range(0, len(texts), size):
        block = list(texts[start : start + size])
        out += embed_block(block)
        if progress:
            progress(len(block))
    return out
