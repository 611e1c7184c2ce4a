"""Where things live. Every location can be overridden by an environment variable.

The project's own configuration (``data/``, ``snapshots/``) sits at the repository
root next to the package; ``MONITOR_HOME`` points elsewhere when the package is
installed without the repository (e.g. inside the container image).
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE_ROOT = Path(__file__).resolve().parent


def project_home() -> Path:
    """Folder holding ``data/benchmarks.toml`` and ``snapshots/``."""
    env = os.environ.get("MONITOR_HOME")
    return Path(env).resolve() if env else _PACKAGE_ROOT.parent


def config_dir() -> Path:
    return project_home() / "data"


def snapshots_dir() -> Path:
    """The folder ``snapshots add`` writes to: the user's folder, else the shipped one."""
    return user_snapshots_dir() or shipped_snapshots_dir()


def user_snapshots_dir() -> Path | None:
    """The user's snapshot folder (``$MONITOR_SNAPSHOTS_DIR``, which ``--snapshots-dir``
    sets), searched before the shipped one; None when unset."""
    env = os.environ.get("MONITOR_SNAPSHOTS_DIR")
    return Path(env) if env else None


def shipped_snapshots_dir() -> Path:
    """The snapshots shipped with the project (``<project home>/snapshots``)."""
    return project_home() / "snapshots"


def snapshot_search_path() -> list[Path]:
    """Where snapshot files are looked up, first match wins: the user's folder, then
    the shipped one (so shipped snapshots stay usable as baselines)."""
    user = user_snapshots_dir()
    shipped = shipped_snapshots_dir()
    if user is None:
        return [shipped]
    return [user] if user.resolve() == shipped.resolve() else [user, shipped]


def cache_root() -> Path:
    """Model conversions and other derived artefacts (never committed)."""
    env = os.environ.get("MONITOR_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "bias-monitor"


def data_dir() -> Path:
    """Verified copies of third-party benchmark files (``MONITOR_DATA_DIR``)."""
    env = os.environ.get("MONITOR_DATA_DIR")
    return Path(env) if env else cache_root() / "datasets"


def vectors_dir() -> Path:
    """Where static word-vector files that users bring live (``MONITOR_VECTORS_DIR``);
    a ``local-file`` snapshot's ``path`` is relative to it."""
    env = os.environ.get("MONITOR_VECTORS_DIR")
    return Path(env) if env else cache_root() / "vectors"


def data_mirror() -> Path | None:
    """Local folder to import benchmark files from when pinned URLs are unreachable."""
    env = os.environ.get("MONITOR_DATA_MIRROR")
    return Path(env) if env else None


def default_db_path() -> Path:
    env = os.environ.get("MONITOR_DB")
    return Path(env) if env else Path("results") / "monitor.duckdb"
