"""`bias-monitor db rebuild FOLDER`: the store made again from the history log of exports."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_store_export_merge import _finished_run, _run_rows
from test_store_support import make_items

from monitor.errors import UserInputError
from monitor.store.db import Store
from monitor.store.export import export_run
from monitor.store.rebuild import find_exports, rebuild


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
    )


def one_error(proc: subprocess.CompletedProcess) -> str:
    """The single error message (the console soft-wraps it at 140 columns), no traceback."""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ") and proc.stderr.count("error:") == 1
    return " ".join(proc.stderr.split())


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def history(tmp_path) -> tuple[Path, Path]:
    """A source store with three runs, exported as two nights of a history log."""
    source = Store(tmp_path / "source.duckdb")
    _finished_run(source, "run-a", make_items(8))
    _finished_run(source, "run-b", make_items(5), salt=0.5)
    _finished_run(source, "run-c", make_items(3), salt=0.25)
    log = tmp_path / "history"
    export_run(source, "run-a", log / "runs" / "2026-11-21")
    export_run(source, "run-b", log / "runs" / "2026-11-22")
    export_run(source, "run-c", log / "runs" / "2026-11-22")
    return source.path, log


def test_rebuild_through_the_cli_reproduces_every_run(history, tmp_path):
    source, log = history
    target = tmp_path / "rebuilt" / "monitor.duckdb"
    proc = cli("db", "rebuild", str(log), "--db", str(target), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert sorted(report["runs_added"]) == ["run-a", "run-b", "run-c"]
    for run_id in ("run-a", "run-b", "run-c"):
        assert _run_rows(target, run_id) == _run_rows(source, run_id)
    assert not list(target.parent.glob(".*rebuild*"))  # no partial file left beside it


def test_existing_store_with_runs_is_refused_unless_replace(history, tmp_path):
    _, log = history
    target = tmp_path / "monitor.duckdb"
    _finished_run(Store(target), "run-old", make_items(2), salt=0.75)
    before = _digest(target)

    proc = cli("db", "rebuild", str(log), "--db", str(target))
    assert proc.returncode == 2
    message = one_error(proc)
    assert "already holds 1 run(s)" in message and "--replace" in message
    assert _digest(target) == before

    proc = cli("db", "rebuild", str(log), "--db", str(target), "--replace")
    assert proc.returncode == 0, proc.stderr
    runs = [r["run_id"] for r in Store(target).list_runs()]
    assert sorted(runs) == ["run-a", "run-b", "run-c"]  # exactly the log: run-old is gone


def test_an_empty_store_file_is_filled_without_replace(history, tmp_path):
    _, log = history
    target = tmp_path / "monitor.duckdb"
    Store(target)  # schema only, no run
    report = rebuild(target, log)
    assert sorted(report.runs_added) == ["run-a", "run-b", "run-c"]


def test_bad_history_is_refused_with_one_line_and_nothing_written(history, tmp_path):
    _, log = history
    target = tmp_path / "out" / "monitor.duckdb"
    empty = tmp_path / "empty"
    empty.mkdir()
    for folder, message in (
        (empty, "holds no run export"),
        (tmp_path / "missing", "does not exist"),
    ):
        proc = cli("db", "rebuild", str(folder), "--db", str(target))
        assert proc.returncode == 2
        assert message in one_error(proc)
        assert not target.exists()

    damaged = next(log.rglob("scores.parquet"))
    damaged.write_bytes(damaged.read_bytes()[:-8] + b"tampered")
    proc = cli("db", "rebuild", str(log), "--db", str(target))
    assert proc.returncode == 2
    assert "sha256" in one_error(proc)
    assert not target.parent.exists()  # not even the folder it would have made


def test_failed_rebuild_leaves_an_existing_store_as_it_was(history, tmp_path):
    _, log = history
    target = tmp_path / "monitor.duckdb"
    _finished_run(Store(target), "run-old", make_items(2), salt=0.75)
    before = _digest(target)
    # Two exports of one run id with different content: merge refuses the whole log.
    clash = log / "runs" / "2026-11-23" / "run-a"
    shutil.copytree(log / "runs" / "2026-11-22" / "run-b", clash)
    manifest = json.loads((clash / "manifest.json").read_text())
    manifest["run_id"] = "run-a"
    (clash / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UserInputError):
        rebuild(target, log, replace=True)
    assert _digest(target) == before


def test_find_exports_searches_every_depth_and_skips_partial_exports(history):
    _, log = history
    partial = log / "runs" / "2026-11-23" / ".run-d.partial-123"
    shutil.copytree(log / "runs" / "2026-11-21" / "run-a", partial)
    found = [p.relative_to(log).as_posix() for p in find_exports(log)]
    assert found == [
        "runs/2026-11-21/run-a",
        "runs/2026-11-22/run-b",
        "runs/2026-11-22/run-c",
    ]
