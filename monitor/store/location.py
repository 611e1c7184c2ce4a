"""Where a store lives: a DuckDB file, or a DuckLake (a catalog plus a data path).

``--db`` / ``$MONITOR_DB`` name either. A plain path is a DuckDB file, the default for one
person on one machine. A DuckLake URL names a lake:

    ducklake:sqlite:FILE                      a SQLite catalog file (several processes
                                              on one machine)
    ducklake:postgres:dbname=... host=...     a PostgreSQL catalog (a team), a libpq
                                              connection string

and ``--lake-data`` / ``$MONITOR_LAKE_DATA`` names where the lake's Parquet files go (a
folder, or ``s3://bucket/prefix``). The URL is typed into commands and CI settings, and
lands in logs, so it must never carry a credential: one with a password in it is
refused, and the catalog's and the object store's credentials come from the environment
(libpq's ``PG*`` variables, ``AWS_*`` for S3) or a DuckDB secret. Parsing is all this
module does: ``monitor.store.lake`` attaches a ``LakeLocation``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from monitor.errors import UserInputError

PREFIX = "ducklake:"
CatalogKind = Literal["sqlite", "postgres"]
CATALOG_KINDS: tuple[CatalogKind, ...] = ("sqlite", "postgres")
DATA_ENV = "MONITOR_LAKE_DATA"
USAGE = "ducklake:sqlite:FILE or ducklake:postgres:'dbname=... host=...'"

# A password in a libpq keyword string (``password=...``) or in a URI's userinfo
# (``postgresql://user:secret@host``; also after a path-like value lost a slash:
# ``postgresql:/user:secret@host``): either would put a credential on a command line.
_PASSWORD = re.compile(r"(?i)(?:\bpassword\s*=|:/*[^/@\s:]*:[^/@\s]*@)")


@dataclass(frozen=True)
class FileLocation:
    """A store in one DuckDB file."""

    path: Path

    @property
    def label(self) -> str:
        return f"database {self.path}"


@dataclass(frozen=True)
class LakeLocation:
    """A store on DuckLake: the catalog (``kind`` and its ``target``, a file or a libpq
    connection string without credentials) and where its data files go."""

    kind: CatalogKind
    target: str
    data_path: str  # a folder (absolute, ending in /) or s3://bucket/prefix/

    @property
    def url(self) -> str:
        return f"{PREFIX}{self.kind}:{self.target}"

    @property
    def label(self) -> str:
        return f"lake {self.url}"

    @property
    def on_s3(self) -> bool:
        return self.data_path.startswith("s3://")


Location = FileLocation | LakeLocation


def default_db() -> str:
    """``$MONITOR_DB``, else the default file ``results/monitor.duckdb``."""
    return os.environ.get("MONITOR_DB") or str(Path("results") / "monitor.duckdb")


def is_lake(db: Path | str | None) -> bool:
    """Whether ``db`` (or the default when None) names a lake rather than a file."""
    return str(db if db is not None else default_db()).startswith(PREFIX)


def parse(db: Path | str | None, lake_data: str | None = None) -> Location:
    """The store ``db`` names (default: ``$MONITOR_DB`` or results/monitor.duckdb); a
    lake's data path is ``lake_data``, else ``$MONITOR_LAKE_DATA``. A malformed lake URL
    is one line naming the accepted forms, and never quotes the URL when it holds a
    password."""
    text = str(db if db is not None else default_db())
    if not text.startswith(PREFIX):
        return FileLocation(Path(text).expanduser())
    if _PASSWORD.search(text):
        raise UserInputError(
            "the lake URL holds a password; give the catalog's credentials in the "
            "environment (PGPASSWORD, PGPASSFILE) or a DuckDB secret, never in --db"
        )
    kind, _, target = text[len(PREFIX) :].partition(":")
    if kind not in CATALOG_KINDS:
        raise UserInputError(f"unknown DuckLake catalog kind {kind!r} in --db; use {USAGE}")
    if not target.strip():
        raise UserInputError(f"the lake URL names no {kind} catalog; use {USAGE}")
    if kind == "sqlite":
        target = str(Path(target).expanduser().resolve())
    data = lake_data or os.environ.get(DATA_ENV)
    if not data:
        raise UserInputError(
            f"lake {PREFIX}{kind}:{target} needs a data path: pass --lake-data FOLDER "
            f"or s3://bucket/prefix (or set {DATA_ENV})"
        )
    return LakeLocation(kind, target, _data_path(data))


def _data_path(data: str) -> str:
    """The data path as DuckLake takes it: an s3:// prefix, or an absolute folder, each
    ending in one slash (DuckLake appends file names to it)."""
    if data.startswith("s3://"):
        if _PASSWORD.search(data) or "@" in data.split("/", 3)[2]:
            raise UserInputError(
                "the lake's data path holds credentials; give them in the environment "
                "(AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) instead"
            )
        return data.rstrip("/") + "/"
    if "://" in data:
        raise UserInputError(f"lake data path {data!r} is neither a folder nor s3://bucket/prefix")
    folder = Path(data).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise UserInputError(f"lake data path {folder} is a file, not a folder")
    return str(folder).rstrip("/") + "/"
