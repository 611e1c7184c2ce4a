"""Session-wide test data built once, also when pytest-xdist splits the session.

``make test`` runs the local-model tests in two pytest-xdist workers (``-n 2 --dist
loadfile``). A session fixture then runs once per worker, and the ones that score SmolLM2
through the CLI take minutes each: ``once_per_session`` builds such data once for all
workers and gives each its own copy.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path


def once_per_session(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder that ``build`` fills once per test session, even when pytest-xdist runs
    the session in several worker processes; returns this process's own copy of it.

    The first worker to get here builds it (under a file lock) in the folder all workers
    share; the others wait and copy the result. Each gets a private copy, so a DuckDB file
    in it is never open in two processes at once (DuckDB locks a file per process).
    A failed build leaves no marker, so each waiting worker tries again and fails the
    same way, naming the cause.
    """
    from filelock import FileLock

    mine = tmp_path_factory.mktemp(name)
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        build(mine)
        return mine
    shared = tmp_path_factory.getbasetemp().parent / f"shared-{name}"
    with FileLock(str(shared) + ".lock"):
        if not (shared / ".complete").is_file():
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            build(shared)
            (shared / ".complete").touch()
    shutil.copytree(shared, mine, dirs_exist_ok=True)
    return mine


def store_env(root: Path, session_cache: Path, shared_datasets: Path) -> dict[str, str]:
    """The environment of a CLI call whose store and fetched files live in ``root``."""
    return {
        **os.environ,
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_DIR": str(root / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "MONITOR_DB": str(root / "monitor.duckdb"),
    }
