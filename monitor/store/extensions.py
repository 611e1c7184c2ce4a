"""Loading DuckDB extensions from their installed PyPI packages, never from the network.

DuckDB normally fetches an extension it needs from extensions.duckdb.org on first use.
CI machines and many servers cannot reach it, and a download at run time would make a
store's behaviour depend on whatever that server hands out that day. The extensions the
lake needs are published on PyPI instead, one package each, pinned with hashes in the
lock files like every other dependency (the optional extra ``lake``):

    duckdb-extension-ducklake          ducklake          (DuckLake catalogs)
    duckdb-extension-postgres-scanner  postgres_scanner  (a PostgreSQL catalog)
    duckdb-extension-sqlite-scanner    sqlite_scanner    (a SQLite catalog file)
    duckdb-extension-httpfs            httpfs            (s3:// and https:// data paths)

Each wheel holds one file, ``<package>/extensions/v<duckdb version>/<name>.duckdb_extension``,
built for exactly that DuckDB release (DuckDB refuses an extension built for another).
``load`` finds that file for the running DuckDB and ``LOAD``s it by path, with the
connection's automatic install and load switched off, so a missing package is one clear
error here and never a silent download.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import duckdb

from monitor.errors import UserInputError

INSTALL_HINT = "pip install 'bias-monitor[lake]'"


@dataclass(frozen=True)
class Extension:
    """One DuckDB extension and the PyPI package that carries its file."""

    name: str  # the name DuckDB loads it by (``duckdb_extensions().extension_name``)
    distribution: str  # the PyPI package
    module: str  # its import name, the folder the file lives under

    def file(self) -> Path:
        """The extension file for the running DuckDB; ``ExtensionMissing`` when the package
        is not installed or was built for another DuckDB release."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            raise ExtensionMissing(
                f"DuckDB extension {self.name} is not installed (package {self.distribution}); "
                f"install the lake extensions with: {INSTALL_HINT}"
            )
        root = Path(next(iter(spec.submodule_search_locations)))
        wanted = root / "extensions" / f"v{duckdb.__version__}" / f"{self.name}.duckdb_extension"
        if wanted.is_file():
            return wanted
        built_for = sorted(p.parent.name for p in root.glob(f"extensions/*/{self.name}.*"))
        raise ExtensionMissing(
            f"DuckDB extension {self.name} from {self.distribution} is built for DuckDB "
            f"{', '.join(built_for) or 'no release'}, not the installed v{duckdb.__version__}; "
            f"install matching versions with: {INSTALL_HINT}"
        )


class ExtensionMissing(UserInputError):
    """A lake extension's package is absent or does not match the installed DuckDB (exit 2:
    the environment lacks an input, and nothing has been written)."""


EXTENSIONS: dict[str, Extension] = {
    e.name: e
    for e in (
        Extension("ducklake", "duckdb-extension-ducklake", "duckdb_extension_ducklake"),
        Extension(
            "postgres_scanner",
            "duckdb-extension-postgres-scanner",
            "duckdb_extension_postgres_scanner",
        ),
        Extension(
            "sqlite_scanner", "duckdb-extension-sqlite-scanner", "duckdb_extension_sqlite_scanner"
        ),
        Extension("httpfs", "duckdb-extension-httpfs", "duckdb_extension_httpfs"),
    )
}


def offline(con: duckdb.DuckDBPyConnection) -> None:
    """Forbid this connection's database to fetch or auto-load any extension: whatever it
    needs must be loaded by ``load`` from an installed package."""
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")


def load(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    """``LOAD`` each named extension (see ``EXTENSIONS``) from its installed package, after
    switching the connection off the network (``offline``); already loaded ones are kept."""
    unknown = [n for n in names if n not in EXTENSIONS]
    if unknown:
        raise ValueError(f"unknown lake extension(s) {unknown}; known: {sorted(EXTENSIONS)}")
    files = [EXTENSIONS[n].file() for n in names]  # every missing package before any LOAD
    offline(con)
    for path in files:
        con.execute(f"LOAD '{_quoted(path)}'")


def _quoted(path: Path) -> str:
    """A path inside a single-quoted SQL string (LOAD takes no parameter)."""
    return str(path).replace("'", "''")
