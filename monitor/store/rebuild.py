"""Rebuild a DuckDB store from the durable history: a folder of run exports.

The nightly workflow keeps its history as an append-only log of ``bias-monitor export``
folders (one per run, each with a sha256 manifest) on a results branch; the DuckDB file
itself is a cache that can always be made again from that log. Rebuilding is a merge of
every export found (``monitor.store.merge``, with all of its checks) into a new file
written beside the target and renamed into place only when the merge succeeded, so a
failed rebuild leaves the target as it was. An existing store that already holds runs is
replaced only when asked (``replace=True``).
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

import duckdb

from monitor.errors import UserInputError
from monitor.store import fileformat, location
from monitor.store.db import Store, check_writable
from monitor.store.export import MANIFEST_NAME
from monitor.store.merge import MergeReport, merge


def find_exports(folder: Path) -> list[Path]:
    """Every export folder (one holding ``manifest.json``) at any depth below ``folder``.

    Sorted by path, so the same log always merges in the same order. Folders whose name
    starts with a dot are skipped: ``export`` writes there before its atomic rename.
    """
    if not folder.is_dir():
        raise UserInputError(f"history folder {folder} does not exist or is not a folder")
    found = []
    for manifest in folder.rglob(MANIFEST_NAME):
        export = manifest.parent
        rel = export.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        found.append(export)
    if not found:
        raise UserInputError(f"{folder} holds no run export (no */{MANIFEST_NAME} below it)")
    return sorted(found)


def stored_runs(path: Path) -> int:
    """How many runs the DuckDB file at ``path`` holds (0 for an empty or new file)."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        newer = fileformat.newer_file_error(path, exc, str(path))
        if newer is not None:
            raise newer from exc
        raise UserInputError(
            f"{path} is not a readable DuckDB store: {str(exc).splitlines()[0]}"
        ) from exc
    try:
        tables = {name for (name,) in con.execute("SHOW TABLES").fetchall()}
        if "runs" not in tables:
            return 0
        (count,) = con.execute("SELECT count(*) FROM runs").fetchone()
        return int(count)
    finally:
        con.close()


def rebuild(target: Path | str, history: Path, *, replace: bool = False) -> MergeReport:
    """Make ``target`` a store holding exactly the runs exported under ``history``.

    Raises UserInputError (exit 2) before writing anything when the history has no
    export, when ``target`` already holds runs and ``replace`` is false, or when ``target``
    cannot be written; an export that fails its manifest check also stops the rebuild
    with the target untouched.
    """
    if location.is_lake(target):
        # A rebuild writes a new file beside the target and renames it into place; a
        # lake has no file to rename. Its runs arrive by merge, one transaction each.
        raise UserInputError(
            "db rebuild writes a DuckDB file, not a lake; fill a lake from the history "
            f"with: bias-monitor db merge {history}/* --db LAKE_URL"
        )
    target = Path(target)
    exports = find_exports(Path(history))
    check_writable(target)
    wal = target.with_name(target.name + ".wal")
    if wal.exists():
        raise UserInputError(
            f"{target} has a write-ahead log ({wal.name}): another process may have it open"
        )
    existing = stored_runs(target)
    if existing and not replace:
        raise UserInputError(
            f"{target} already holds {existing} run(s); pass --replace to rebuild it from "
            f"{history}, or choose another --db"
        )
    created = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    partial = target.with_name(f".{target.name}.rebuild-{os.getpid()}")
    partial_wal = partial.with_name(partial.name + ".wal")
    done = False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        for leftover in (partial, partial_wal):
            with suppress(FileNotFoundError):
                leftover.unlink()
        report = merge(Store.open(partial), exports)
        os.replace(partial, target)
        done = True
    finally:
        for leftover in (partial, partial_wal):
            with suppress(FileNotFoundError):
                leftover.unlink()
        if not done:
            for folder in created:  # deepest first: only the folders this call made
                with suppress(OSError):
                    folder.rmdir()
    return report
