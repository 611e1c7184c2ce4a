"""Export one run as a self-describing folder of Parquet files (a CI shard), and verify one.

Layout: ``<out_dir>/<run_id>/<table>.parquet`` for every table in ``EXPORT_TABLES`` (the
run, its items, scores, exclusions, axis measures, validations, and for API runs every
request sent and every batch submitted) plus ``manifest.json`` with the schema version,
row counts and a sha256 per file. The manifest is what lets the merging job trust a
shard that crossed machines: it checks every file before reading a row from it.

Format version 1 (before API runs) had no ``api_requests``/``api_batches`` files, and
versions 1 and 2 (before association tests) no ``embeddings`` file; such folders are
still read, with those tables empty.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from monitor.errors import DataIntegrityError, UserInputError
from monitor.store import details, queries
from monitor.store.db import Store

EXPORT_FORMAT = "bias-monitor-run-export"
EXPORT_FORMAT_VERSION = 3
MANIFEST_NAME = "manifest.json"

# Table -> the run's rows, in a fixed order so that exporting twice gives the same rows.
EXPORT_QUERIES: dict[str, str] = {
    "runs": "SELECT * FROM runs WHERE run_id = $run_id",
    # items and scores as wide rows (core columns, then every family's detail columns),
    # so a shard is one self-contained file per record whatever tables the store splits
    # them into; merge splits them again (``details.insert``).
    "items": (
        "SELECT * FROM {items} WHERE item_id IN "
        "(SELECT item_id FROM scores WHERE run_id = $run_id "
        "UNION SELECT item_id FROM api_requests WHERE run_id = $run_id) ORDER BY item_id"
    ),
    "scores": "SELECT * FROM {scores} WHERE run_id = $run_id ORDER BY item_id",
    "exclusions": (
        "SELECT * FROM exclusions WHERE run_id = $run_id ORDER BY benchmark, source_row"
    ),
    "axis_measures": (
        "SELECT * FROM axis_measures WHERE run_id = $run_id ORDER BY benchmark, axis, measure"
    ),
    "validations": (
        "SELECT * FROM validations WHERE run_id = $run_id ORDER BY validated_at, suite, success"
    ),
    "api_requests": "SELECT * FROM api_requests WHERE run_id = $run_id ORDER BY request_key",
    "api_batches": "SELECT * FROM api_batches WHERE run_id = $run_id ORDER BY batch_id",
    "embeddings": "SELECT * FROM embeddings WHERE run_id = $run_id ORDER BY item_id",
}
EXPORT_TABLES: tuple[str, ...] = tuple(EXPORT_QUERIES)
# The tables each readable format version carries.
TABLES_BY_FORMAT: dict[int, frozenset[str]] = {
    1: frozenset(EXPORT_TABLES) - {"api_requests", "api_batches", "embeddings"},
    2: frozenset(EXPORT_TABLES) - {"embeddings"},
    3: frozenset(EXPORT_TABLES),
}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def export_run(store: Store, run_id: str, out_dir: Path, *, overwrite: bool = False) -> Path:
    """Write ``<out_dir>/<run_id>/`` and return it. Accepts a unique run id prefix.

    A run still ``running`` is refused: its shard would be partial and, once the run
    finished, would conflict with the complete one at merge time. The folder appears
    atomically (written beside it, then renamed), so a killed export leaves no shard
    that looks finished.
    """
    out_dir = Path(out_dir)
    with store._connect() as con:
        con.begin()  # one snapshot for every table
        run = queries.get_run(con, run_id)
        run_id = run["run_id"]
        if run["status"] == "running":
            raise UserInputError(f"run {run_id} is still running; finish it before exporting")
        target = out_dir / run_id
        if target.exists() and not overwrite:
            raise UserInputError(f"export folder {target} already exists")
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserInputError(f"cannot create export folder {out_dir}: {exc.strerror}") from exc
        partial = out_dir / f".{run_id}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        tables: dict[str, dict[str, Any]] = {}
        try:
            for name, sql in EXPORT_QUERIES.items():
                sql = sql.replace("{items}", details.wide("items"))
                sql = sql.replace("{scores}", details.wide("scores"))
                file = partial / f"{name}.parquet"
                con.execute(
                    f"COPY ({sql}) TO $file (FORMAT parquet, COMPRESSION zstd)",
                    {"run_id": run_id, "file": str(file)},
                )
                tables[name] = {
                    "file": file.name,
                    "rows": pq.read_metadata(file).num_rows,
                    "sha256": sha256_file(file),
                }
            manifest = {
                "format": EXPORT_FORMAT,
                "format_version": EXPORT_FORMAT_VERSION,
                "schema_version": store.schema_version,
                "run_id": run_id,
                "tables": tables,
            }
            (partial / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True))
            con.commit()
            if target.exists():
                shutil.rmtree(target)
            partial.rename(target)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    return target


@dataclass(frozen=True)
class VerifiedExport:
    """An export folder whose files all matched their manifest."""

    folder: Path
    run_id: str
    schema_version: int
    files: dict[str, Path]  # table -> parquet path; tables its format lacks are absent


def is_export_folder(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST_NAME).is_file()


def verify_export(folder: Path) -> VerifiedExport:
    """Check the manifest, then each file's sha256 and row count, before anyone reads it."""
    manifest_path = folder / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: not JSON, or not UTF-8
        raise DataIntegrityError(f"export manifest {manifest_path} is unreadable: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != EXPORT_FORMAT:
        raise DataIntegrityError(f"{manifest_path} is not a {EXPORT_FORMAT} manifest")
    format_version = manifest.get("format_version")
    if not isinstance(format_version, int) or format_version not in TABLES_BY_FORMAT:
        raise DataIntegrityError(
            f"{manifest_path} has export format version {format_version!r}; "
            f"this bias-monitor reads versions {', '.join(map(str, TABLES_BY_FORMAT))}"
        )
    expected = TABLES_BY_FORMAT[format_version]
    schema_version = manifest.get("schema_version")
    run_id = manifest.get("run_id")
    tables = manifest.get("tables")
    if not isinstance(schema_version, int) or not isinstance(run_id, str):
        raise DataIntegrityError(f"{manifest_path} lacks schema_version or run_id")
    if not isinstance(tables, dict) or set(tables) != expected:
        raise DataIntegrityError(
            f"{manifest_path} must list exactly the tables {', '.join(sorted(expected))}"
        )
    files: dict[str, Path] = {}
    for name in sorted(expected):
        entry = tables[name]
        if not isinstance(entry, dict):
            raise DataIntegrityError(f"{manifest_path}: table {name} has no file entry")
        file = folder / str(entry.get("file", ""))
        if file.parent != folder or not file.is_file():
            raise DataIntegrityError(f"export file {file} listed in {manifest_path} is missing")
        if sha256_file(file) != entry.get("sha256"):
            raise DataIntegrityError(
                f"export file {file} does not match its sha256 in the manifest"
            )
        try:
            rows = pq.read_metadata(file).num_rows
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise DataIntegrityError(f"export file {file} is not readable Parquet: {exc}") from exc
        if rows != entry.get("rows"):
            raise DataIntegrityError(
                f"export file {file} has {rows} rows, its manifest says {entry.get('rows')}"
            )
        files[name] = file
    return VerifiedExport(folder, run_id, schema_version, files)
