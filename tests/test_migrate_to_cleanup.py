"""``db migrate-to --from-export`` removes the history's temporary copy when it returns.

The run exports are rebuilt into a temporary DuckDB file to be moved. That folder is
the command's own scratch space: it must be gone as soon as the move is done, not when
the process exits (a Python user calling the app layer, or a long-lived process, would
otherwise keep one copy of the history per move). The command is invoked in-process
(``CliRunner``, the same arguments a user types) so the check runs before the process
could clean up at exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from monitor.cli.app import app

SNAPSHOT = "gpt-4o-caste-study"


def _env(base: Path, shared: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MONITOR_DB", "MONITOR_LAKE_DATA")}
    return {
        **env,
        "MONITOR_DATA_DIR": str(base / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared),
        "MONITOR_CACHE_DIR": str(cache),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "monitor", *args], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_history_copy_is_gone_when_migrate_to_returns(
    tmp_path, monkeypatch, shared_datasets, session_cache
):
    env = _env(tmp_path, shared_datasets, session_cache)
    db = str(tmp_path / "m.duckdb")
    april = shared_datasets / "caste-bias" / "results" / "april"
    _cli(env, "import", "caste-bias", str(april), "--snapshot", SNAPSHOT,
         "--date", "2024-04-16", "--db", db)  # fmt: skip
    (run,) = json.loads(_cli(env, "runs", "list", "--format", "json", "--db", db))
    history = tmp_path / "history"
    _cli(env, "export", run["run_id"], "--out", str(history), "--db", db)

    scratch = tmp_path / "scratch"  # where the command's temporary folders go
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def watched(*args, **kwargs):
        path = real_mkdtemp(*args, **kwargs)
        made.append(path)
        return path

    monkeypatch.setattr(tempfile, "mkdtemp", watched)
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    result = CliRunner().invoke(
        app,
        ["db", "migrate-to", lake, "--from-export", str(history)],
        env={k: v for k, v in env.items() if k.startswith("MONITOR_")}
        | {"MONITOR_LAKE_DATA": str(tmp_path / "lake-data")},  # what --lake-data sets
    )
    assert result.exit_code == 0, result.output
    assert "moved 1 run(s), 734 score(s), 734 item(s) from the run exports" in result.output
    copies = [Path(p) for p in made if Path(p).name.startswith("bias-monitor-move-")]
    assert len(copies) == 1 and copies[0].parent == scratch  # the history was copied here
    assert not copies[0].exists()  # ... and is gone now that the command has returned


def test_an_older_files_upgraded_copy_is_gone_when_migrate_to_returns(
    tmp_path, monkeypatch, shared_datasets, session_cache
):
    """A file at an older schema is upgraded in a temporary copy (the file itself is never
    written); that copy goes when the command returns, here one refused because the file
    holds no run, as it does after a move."""
    import duckdb

    from monitor.store import migrate

    env = _env(tmp_path, shared_datasets, session_cache)
    old = tmp_path / "old" / "old.duckdb"
    old.parent.mkdir()
    with duckdb.connect(str(old)) as con:
        migrate.apply_migrations(con, "old", upto=2)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    lake = f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}"
    result = CliRunner().invoke(
        app,
        ["db", "migrate-to", lake, "--db", str(old)],
        env={k: v for k, v in env.items() if k.startswith("MONITOR_")}
        | {"MONITOR_LAKE_DATA": str(tmp_path / "lake-data")},
    )
    # In-process the refusal is the exception itself (`python -m monitor` makes it exit 2).
    assert "holds no run" in str(result.exception), (result.exception, result.output)
    # The message names the file the user gave, not the temporary copy it read.
    assert str(result.exception).startswith(f"database {old} holds no run"), result.exception
    assert "moving a copy upgraded to" in result.output
    assert sorted(os.listdir(old.parent)) == ["old.duckdb"]  # the file has no copy beside it
    assert os.listdir(scratch) == []  # ... and the upgraded copy is gone
