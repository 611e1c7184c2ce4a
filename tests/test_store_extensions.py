"""The lake's DuckDB extensions load from their PyPI packages, offline (issue 47, item 6).

DuckDB cannot download extensions here or in CI, so ``monitor.store.extensions`` loads
each one by path from its installed package (the ``lake`` extra) with automatic install
and load switched off. Proved with the real packages and a real DuckLake: a SQLite
catalog and a local data folder, written by two connections in turn, read back as of the
first write's snapshot. A missing or mismatched package is one line naming the extra.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from monitor.store import extensions
from monitor.store.extensions import INSTALL_HINT, Extension, ExtensionMissing


def _lake(con: duckdb.DuckDBPyConnection, base: Path) -> None:
    extensions.load(con, "ducklake", "sqlite_scanner")
    # DATA_INLINING_ROW_LIMIT 0: every insert is a Parquet file under DATA_PATH, not rows
    # inlined in the catalog, so the data folder is exercised too.
    con.execute(
        f"ATTACH 'ducklake:sqlite:{base / 'catalog.sqlite'}' AS lake "
        f"(DATA_PATH '{base / 'data'}/', DATA_INLINING_ROW_LIMIT 0)"
    )


def test_ducklake_sqlite_catalog_from_the_packages(tmp_path):
    """Two connections write in turn; a third reads now and as of the first snapshot."""
    first = duckdb.connect()
    _lake(first, tmp_path)
    loaded = dict(
        first.execute(
            "SELECT extension_name, install_mode FROM duckdb_extensions() WHERE loaded"
        ).fetchall()
    )
    # Loaded by path from the package, not installed into DuckDB's extension folder.
    assert loaded["ducklake"] == "NOT_INSTALLED"
    assert loaded["sqlite_scanner"] == "NOT_INSTALLED"
    assert first.execute("SELECT current_setting('autoinstall_known_extensions')").fetchone() == (
        False,
    )
    assert first.execute("SELECT current_setting('autoload_known_extensions')").fetchone() == (
        False,
    )
    first.execute("CREATE TABLE lake.scores (run_id VARCHAR, item_id VARCHAR, value DOUBLE)")
    first.execute("INSERT INTO lake.scores VALUES ('r1', 'a', 0.5), ('r1', 'b', 0.25)")
    (after_first,) = first.execute(
        "SELECT max(snapshot_id) FROM ducklake_snapshots('lake')"
    ).fetchone()
    first.close()

    second = duckdb.connect()
    _lake(second, tmp_path)
    second.execute("INSERT INTO lake.scores VALUES ('r2', 'a', 0.75)")
    second.close()

    reader = duckdb.connect()
    _lake(reader, tmp_path)
    now = reader.execute("SELECT run_id, item_id, value FROM lake.scores ORDER BY ALL").fetchall()
    then = reader.execute(
        f"SELECT run_id, item_id, value FROM lake.scores AT (VERSION => {after_first}) ORDER BY ALL"
    ).fetchall()
    reader.close()
    assert now == [("r1", "a", 0.5), ("r1", "b", 0.25), ("r2", "a", 0.75)]
    assert then == [("r1", "a", 0.5), ("r1", "b", 0.25)]
    assert len(list((tmp_path / "data").rglob("*.parquet"))) == 2  # one file per insert


def test_every_lake_extension_loads():
    """PostgreSQL and httpfs too (their servers are another test's business)."""
    con = duckdb.connect()
    extensions.load(con, *extensions.EXTENSIONS)
    loaded = {
        name
        for (name,) in con.execute(
            "SELECT extension_name FROM duckdb_extensions() WHERE loaded"
        ).fetchall()
    }
    assert set(extensions.EXTENSIONS) <= loaded


def test_loading_never_downloads(tmp_path):
    """In a fresh process with no DuckDB extension folder and no network, ``load`` works and
    an extension not loaded by it stays unavailable instead of being fetched."""
    script = textwrap.dedent(
        """
        import duckdb
        from monitor.store import extensions
        con = duckdb.connect()
        extensions.load(con, "ducklake")
        try:
            con.execute("ATTACH 'ducklake:sqlite:x.sqlite' AS lake")
        except duckdb.Error as exc:
            print("refused:", str(exc))
        """
    )
    env = {
        **os.environ,
        "HOME": str(tmp_path),  # DuckDB's default extension folder: empty
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused:"), done.stdout
    # Automatic install off: DuckDB asks for an INSTALL instead of trying a download.
    assert "Failed to download" not in done.stdout
    assert 'Install it first using "INSTALL sqlite"' in done.stdout
    assert not (tmp_path / ".duckdb").exists()  # nothing was installed


def test_missing_package_is_one_line_naming_the_extra():
    absent = Extension("ducklake", "duckdb-extension-ducklake", "no_such_module_for_tests")
    with pytest.raises(ExtensionMissing) as caught:
        absent.file()
    message = str(caught.value)
    assert "\n" not in message
    assert "ducklake" in message
    assert INSTALL_HINT in message
    assert caught.value.exit_code == 2


def test_package_for_another_duckdb_is_refused(tmp_path, monkeypatch):
    """A package built for another DuckDB release is named with the release it is for."""
    package = tmp_path / "fake_duckdb_extension_pkg"
    (package / "extensions" / "v0.9.9").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "extensions" / "v0.9.9" / "ducklake.duckdb_extension").write_bytes(b"")
    monkeypatch.syspath_prepend(str(tmp_path))
    other = Extension("ducklake", "duckdb-extension-ducklake", "fake_duckdb_extension_pkg")
    with pytest.raises(ExtensionMissing) as caught:
        other.file()
    message = str(caught.value)
    assert "built for DuckDB v0.9.9" in message
    assert f"v{duckdb.__version__}" in message
    assert INSTALL_HINT in message
    assert "\n" not in message
