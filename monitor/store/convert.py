"""``bias-monitor db convert``: a store written by a newer DuckDB, copied into a file that
the installed DuckDB reads, with the original left untouched.

DuckDB reads older storage formats but never newer ones: a store written by DuckDB 2.0.0
(the project's pin before the lake extensions, which are built for 1.5.5) cannot be
opened by 1.5.5 at all. Only the newer release can read it, and it can also write the
older format (``ATTACH ... (STORAGE_VERSION 'v1.5.0')``, ``COPY FROM DATABASE``). So the
conversion runs in a subprocess on that release, installed once with pip, by hash, into
the cache (``$MONITOR_CACHE_DIR/duckdb-writers/``; a second conversion needs no network),
and this process checks the result with its own DuckDB before putting it in place: the
same tables, each with the same row count as the newer DuckDB counted in the original.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from monitor.errors import DataIntegrityError, UserInputError
from monitor.paths import cache_root
from monitor.store import fileformat

# The DuckDB releases a store may have been written by, each pinned by the sha256 of
# every file PyPI has for it (from requirements/lock.txt while it was the project's pin),
# so the converter installs exactly what the project once ran, or nothing.
WRITERS: dict[str, tuple[str, ...]] = {
    "2.0.0": (
        "09de511ef0dc76a5213e8d3d87a8b89bb4d3e8a6fe73a9f60dc001269946b44f",
        "46c7a299ff5f45be9068cfc0ceecb3fd574af9535de8cb6908ae8b52d2846cbd",
        "5a3601121c7cc50d0b70412995634682fafcb58a0156d5d663dfd0b3bbe30a33",
        "61a244faae9fd787e30f4c76888769ec49e79736c434f698e8178a00af8348f0",
        "62bea9a1786be98d2906197c67a4089cc8b34d66d19e87e5543d8201e81323ad",
        "9bcc9921be0e1b2404b96a7fb447a8b80fe2f3a919cdc976ca6c39951cc8f2f5",
        "a387d4907b535a4bd82ba8aede6809d0bf023dfbb21362832f3c9848aea7743c",
        "a3b38d8cdbef10007c64b65efc4087f799c4dc606785aa5f2a425ed13658ca01",
        "ab51ec57d329d6f3df37c0287b55d71c3fc07bb54b61d1afed09104f953b1431",
        "b5d758b53751c930e09d371230241005ea5203c8edc65a1e1fafca83fcc906ef",
        "bcdf10dfbc2c1a6bdc5b2a94bba5b15481e552c5745c2af1994617b0eb6bc750",
        "c5e6708efaa8647e0914a16f1914354419e529a1925929950e7d610418e45873",
        "cb1cc30318397c3bcffa6b683196293698052588de3c1ba1e144ba0c72560ce9",
        "e38daf0acbad9de7ce892d402b68409519291ee16af3c2cba85ace3b085c7eaa",
        "f61c96547ed432f54dae42a717fd88563eda55cb47549715fac9f61f770c205a",
    ),
}
WORKER = Path(__file__).with_name("convert_worker.py")


@dataclass(frozen=True)
class Conversion:
    """What ``convert`` did: where from, where to, by which DuckDB, and each table's rows
    (equal in the original and in the copy, or ``convert`` would have refused)."""

    source: Path
    out: Path
    written_by: str  # the release that wrote the original, e.g. "v2.0.0"
    tables: dict[str, int]

    @property
    def rows(self) -> int:
        return sum(self.tables.values())

    def summary(self) -> str:
        return (
            f"converted {self.source} (written by DuckDB {self.written_by}) to {self.out} "
            f"for DuckDB v{duckdb.__version__}: {len(self.tables)} tables, {self.rows} rows, "
            f"each table's row count equal to the original's; the original is unchanged"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "out": str(self.out),
            "written_by": self.written_by,
            "duckdb": duckdb.__version__,
            "tables": self.tables,
            "rows": self.rows,
        }


def default_out(source: Path) -> Path:
    """``monitor.duckdb`` → ``monitor-duckdb1.5.duckdb``: beside the original, named for the
    DuckDB release line that reads it."""
    line = ".".join(duckdb.__version__.split(".")[:2])
    return source.with_name(f"{source.stem}-duckdb{line}{source.suffix}")


def storage_target() -> str:
    """The storage format to write: the installed DuckDB's release line (``v1.5.0``)."""
    major, minor = duckdb.__version__.split(".")[:2]
    return f"v{major}.{minor}.0"


def writer_site(version: str) -> Path:
    """A folder holding ``duckdb==version`` alone (importable by putting it first on
    ``PYTHONPATH``), installed by hash into the cache on first use."""
    hashes = WRITERS.get(version)
    if hashes is None:
        raise UserInputError(
            f"bias-monitor cannot convert from DuckDB v{version}; it converts stores written "
            f"by DuckDB {', '.join('v' + v for v in sorted(WRITERS))}"
        )
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    home = cache_root() / "duckdb-writers"
    site = home / f"duckdb-{version}-{tag}"
    if (site / ".complete").is_file():
        return site
    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".duckdb-{version}-", dir=home))
    try:
        requirement = staging / "requirements.txt"
        requirement.write_text(
            f"duckdb=={version} " + " ".join(f"--hash=sha256:{h}" for h in hashes) + "\n"
        )
        target = staging / "site"
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
        pip += ["--disable-pip-version-check", "--require-hashes", "--only-binary", ":all:"]
        done = subprocess.run(
            [*pip, "--target", str(target), "-r", str(requirement)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
            raise UserInputError(
                f"cannot install duckdb=={version} (needed to read the store): {last}"
            )
        (target / ".complete").write_text(f"duckdb=={version}\n")
        try:
            target.rename(site)
        except OSError:
            if not (site / ".complete").is_file():  # not another process's finished copy
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return site


def convert(source: Path, out: Path | None = None) -> Conversion:
    """Copy the store at ``source`` into ``out`` (default ``default_out``) in the installed
    DuckDB's storage format; the original is only ever opened read-only.

    Refused (exit 2, nothing written): no such file, not a DuckDB file, a file this DuckDB
    already reads, an existing ``out``. A copy whose tables or row counts differ from the
    original is removed and refused (``DataIntegrityError``).
    """
    source = source.expanduser()
    if not source.is_file():
        raise UserInputError(f"no database at {source}")
    header = fileformat.read_header(source)
    if header is None:
        raise UserInputError(f"{source} is not a DuckDB file")
    if _readable_here(source):
        raise UserInputError(
            f"{source} is already readable by DuckDB v{duckdb.__version__}; nothing to convert"
        )
    if header.written_by is None:
        raise UserInputError(
            f"{source} does not record which DuckDB wrote it (storage version "
            f"{header.storage_version}); it cannot be converted here"
        )
    out = (out or default_out(source)).expanduser()
    if out.exists():
        raise UserInputError(f"{out} already exists; name another file with --out")
    if not out.parent.is_dir():
        raise UserInputError(f"folder {out.parent} does not exist")
    site = writer_site(header.written_by.removeprefix("v"))
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        counted = _copy(site, source, partial)
        tables = _check(partial, counted, source)
        partial.rename(out)
    finally:
        for leftover in (partial, partial.with_name(partial.name + ".wal")):
            leftover.unlink(missing_ok=True)
    return Conversion(source, out, header.written_by, tables)


def _readable_here(path: Path) -> bool:
    try:
        duckdb.connect(str(path), read_only=True).close()
    except duckdb.Error as exc:
        if fileformat.newer_file_error(path, exc, str(path)) is not None:
            return False
        raise UserInputError(f"cannot open {path}: {str(exc).strip().splitlines()[0]}") from exc
    return True


def _copy(site: Path, source: Path, partial: Path) -> dict[str, Any]:
    """Run the worker on the newer DuckDB; its counts of the original and of the copy."""
    done = subprocess.run(
        [sys.executable, "-S", str(WORKER), str(source), str(partial), storage_target()],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(site)},  # with -S: that DuckDB and the stdlib only
    )
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
        raise DataIntegrityError(
            f"converting {source} failed: {lines[-1] if lines else f'exit {done.returncode}'}"
        )
    return json.loads(done.stdout)


def _check(partial: Path, counted: dict[str, Any], source: Path) -> dict[str, int]:
    """The copy read by this DuckDB: the same tables, each with the original's row count."""
    original: dict[str, int] = counted["source"]
    if counted["copy"] != original:
        raise DataIntegrityError(
            f"converting {source}: the copy's row counts differ from the original's"
        )
    con = duckdb.connect(str(partial), read_only=True)
    try:
        here = {}
        for schema, table in con.execute(
            "SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT internal "
            "AND database_name = current_database() ORDER BY schema_name, table_name"
        ).fetchall():
            name = table if schema == "main" else f"{schema}.{table}"
            (rows,) = con.execute(f'SELECT count(*) FROM "{schema}"."{table}"').fetchone()
            here[name] = int(rows)
    finally:
        con.close()
    if here != original:
        differ = sorted(n for n in original.keys() | here.keys() if here.get(n) != original.get(n))
        raise DataIntegrityError(
            f"converting {source}: DuckDB v{duckdb.__version__} reads other row counts in the "
            f"copy (tables {', '.join(differ)}); nothing was written"
        )
    return here
