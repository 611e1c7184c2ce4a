"""Static word vectors a user brings (GloVe, fastText or word2vec text format).

The file is pinned by sha256 (``local-file`` snapshots) and read once per run, keeping
only the words the run asks for, so a multi-gigabyte vocabulary costs one pass and little
memory. A word is looked up as written, then lower-cased (the SocHindi notebook and
bias-bench lower-case; Devanagari has no case, so Hindi words are unaffected). A word
the vocabulary lacks has no vector and is reported, never replaced by a guess.

A sentence (SEAT) is the mean of the vectors of its space-separated words that the
vocabulary has, as in the SocHindi notebook; how many words were missing is noted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np

from monitor.backends.embedding import Embedded
from monitor.errors import DataIntegrityError
from monitor.snapshots.model import LocalFileSource, Snapshot
from monitor.snapshots.resolve import locate_local_file

if TYPE_CHECKING:
    from monitor.backends.loading import LoadOptions


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8", errors="strict", newline="") as fh:
        try:
            yield from enumerate(fh, start=1)
        except UnicodeDecodeError as exc:
            raise DataIntegrityError(f"{path.name} is not UTF-8 text: {exc.reason}") from None


def read_vectors(path: Path, fmt: str, wanted: set[str]) -> tuple[dict[str, np.ndarray], int]:
    """The vectors of the ``wanted`` words in the file, and the file's dimension.

    Every line is checked for shape (a word, then the same number of numbers as the
    first line), whether wanted or not: a damaged file stops the run with its line
    number rather than scoring with a truncated vocabulary.
    """
    found: dict[str, np.ndarray] = {}
    dim: int | None = None
    for number, line in _lines(path):
        parts = line.rstrip("\n").rstrip("\r").rstrip(" ").split(" ")
        if number == 1 and fmt in ("word2vec", "fasttext"):
            if len(parts) != 2 or not all(p.isdigit() for p in parts):
                raise DataIntegrityError(
                    f"{path.name}: a {fmt} text file starts with a 'count dim' line"
                )
            dim = int(parts[1])
            continue
        if len(parts) < 2:
            if not line.strip():
                continue
            raise DataIntegrityError(f"{path.name} line {number}: no vector after the word")
        if dim is None:
            dim = len(parts) - 1
        if len(parts) - 1 != dim:
            raise DataIntegrityError(
                f"{path.name} line {number}: {len(parts) - 1} numbers, expected {dim}"
            )
        word = parts[0]
        if word in wanted and word not in found:  # the first occurrence wins
            try:
                found[word] = np.array(parts[1:], dtype=np.float32)
            except ValueError:
                raise DataIntegrityError(f"{path.name} line {number}: not a number") from None
    if dim is None:
        raise DataIntegrityError(f"{path.name} holds no vectors")
    return found, dim


@dataclass
class StaticVectors:
    """The backend of kind ``static-vectors``."""

    path: Path
    source: LocalFileSource
    name: str
    device: str = "cpu"
    dtype: str = "float32"
    dim: int | None = None
    progress: Any = field(default=None, repr=False)

    def _lookup(self, word: str, vectors: dict[str, np.ndarray]) -> np.ndarray | None:
        if word in vectors:
            return vectors[word]
        if self.source.lowercase_fallback and word.lower() in vectors:
            return vectors[word.lower()]
        return None

    def embed(self, texts: Sequence[str]) -> list[Embedded]:
        words = {w for t in texts for w in t.split()}
        wanted = words | ({w.lower() for w in words} if self.source.lowercase_fallback else set())
        vectors, self.dim = read_vectors(self.path, self.source.format, wanted)
        out: list[Embedded] = []
        for text in texts:
            tokens = text.split()
            found = [v for v in (self._lookup(w, vectors) for w in tokens) if v is not None]
            unknown = len(tokens) - len(found)
            if not found:
                out.append(Embedded(None, {"missing": "not in the vocabulary"}))
                continue
            note = {"unknown_words": unknown} if unknown else {}
            vector = found[0] if len(found) == 1 else np.mean(np.stack(found), axis=0)
            out.append(Embedded(np.asarray(vector, dtype=np.float32), note))
        if self.progress:
            self.progress(len(texts))
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "library": "static vectors",
            "format": self.source.format,
            "dimension": self.dim,
            "lowercase_fallback": self.source.lowercase_fallback,
            "sentence": "mean of the vectors of the words found",
        }


def load_static_vectors(snapshot: Snapshot, **options: Unpack[LoadOptions]) -> StaticVectors:
    """Locate and verify the file; it is read when the run asks for its words."""
    path = locate_local_file(
        snapshot, cache_dir=options.get("cache_dir"), on_event=options.get("on_event")
    )
    assert isinstance(snapshot.source, LocalFileSource)
    return StaticVectors(path, snapshot.source, snapshot.id)
