"""A store written by DuckDB 2.0.0, refused in one line and converted for this DuckDB
(issue 47, item 6), through the CLI.

The project pinned DuckDB 2.0.0 before the lake extensions (built for 1.5.5) brought it
back to 1.5.5, which cannot read 2.0.0's files. The store here is real: the GPT-4o caste
study's history imported by the project's own code running on DuckDB 2.0.0 (installed by
``db convert``'s own mechanism into the cache, first on ``PYTHONPATH``). Then, on this
DuckDB:

* every command that opens it exits 2 with one line naming the DuckDB that wrote it, the
  one that reads here, and ``bias-monitor db convert``; the file is not touched;
* ``db convert`` copies it (the original byte for byte unchanged), and ``drift --format
  json``, ``show`` and ``runs list`` on the copy print what they printed on the original
  under 2.0.0; a second conversion needs no network.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from monitor.store import convert, fileformat

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = "gpt-4o-caste-study"
WRITER = "2.0.0"


def _env(root: Path, cache: Path, shared: Path, site: Path | None = None) -> dict[str, str]:
    """A CLI call's environment; with ``site``, the project runs on the DuckDB in it."""
    path = [str(site)] if site is not None else []
    path += [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(path),
        "MONITOR_CACHE_DIR": str(cache),
        "MONITOR_DATA_DIR": str(root / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared),
        "MONITOR_DB": str(root / "monitor.duckdb"),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def old_store(tmp_path_factory, session_cache, shared_datasets):
    """The caste history imported on DuckDB 2.0.0, and what the CLI printed about it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MONITOR_CACHE_DIR", str(session_cache))
        site = convert.writer_site(WRITER)
    root = tmp_path_factory.mktemp("duckdb2")
    env = _env(root, session_cache, shared_datasets, site)
    probe = subprocess.run(
        [sys.executable, "-c", "import duckdb; print(duckdb.__version__)"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert probe.stdout.strip() == WRITER, probe.stderr
    folder = shared_datasets / "caste-bias" / "history"
    imported = cli(env, "import", "caste-bias", str(folder), "--snapshot", SNAPSHOT)
    assert imported.returncode in (0, 1), imported.stderr  # 1: two runs quarantined
    db = root / "monitor.duckdb"
    runs = cli(env, "runs", "list", "--format", "json")
    assert runs.returncode == 0, runs.stderr
    run_ids = [r["run_id"] for r in json.loads(runs.stdout)]
    before = {
        "runs": runs.stdout,
        "drift": cli(env, "drift", "--format", "json").stdout,
        "show": {rid: cli(env, "show", rid).stdout for rid in run_ids[:2]},
        "show_json": cli(env, "show", run_ids[0], "--format", "json").stdout,
    }
    return {"db": db, "root": root, "run_ids": run_ids, "before": before, "site": site}


def test_the_store_is_really_written_by_duckdb_2(old_store):
    header = fileformat.read_header(old_store["db"])
    assert header == fileformat.FileHeader(storage_version=999, written_by="v2.0.0")
    assert len(old_store["run_ids"]) == 10
    assert json.loads(old_store["before"]["drift"])  # drift had runs to compare


@pytest.mark.parametrize(
    "command",
    [
        ("runs", "list"),
        ("show", "RUN"),
        ("drift", "--format", "json"),
        ("report", "--out", "OUT"),
        ("quality", "RUN"),
        ("export", "RUN", "--out", "OUT"),
        ("import", "caste-bias", "HISTORY", "--snapshot", SNAPSHOT),
    ],
    ids=lambda c: " ".join(c[:2]),
)
def test_every_command_refuses_it_in_one_line(
    command, old_store, tmp_path, session_cache, shared_datasets
):
    db = old_store["db"]
    digest = _sha256(db)
    history = shared_datasets / "caste-bias" / "history"
    args = [
        {"RUN": old_store["run_ids"][0], "OUT": str(tmp_path / "out"), "HISTORY": str(history)}.get(
            a, a
        )
        for a in command
    ]
    env = _env(old_store["root"], session_cache, shared_datasets)
    done = cli(env, *args, "--db", str(db))
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0] == (
        f"error: database {db} was written by DuckDB v2.0.0 (storage version 999); this "
        f"bias-monitor runs DuckDB v{duckdb.__version__}, which reads storage versions "
        f"64 to 68; convert it with: bias-monitor db convert {db}"
    )
    assert _sha256(db) == digest
    assert not db.with_name(db.name + ".wal").exists()


def test_convert_keeps_every_run_and_every_output(
    old_store, tmp_path, session_cache, shared_datasets
):
    db = old_store["db"]
    digest = _sha256(db)
    new = tmp_path / "monitor.duckdb"
    env = _env(tmp_path, session_cache, shared_datasets)
    done = cli(env, "db", "convert", str(db), "--out", str(new), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["written_by"] == "v2.0.0"
    assert report["duckdb"] == duckdb.__version__
    assert report["tables"]["runs"] == 10
    assert report["rows"] == sum(report["tables"].values()) > 1000
    assert _sha256(db) == digest  # the original is untouched
    assert fileformat.read_header(new).storage_version < 999

    before = old_store["before"]
    assert cli(env, "runs", "list", "--format", "json").stdout == before["runs"]
    assert cli(env, "drift", "--format", "json").stdout == before["drift"]
    for run_id, shown in before["show"].items():
        assert cli(env, "show", run_id).stdout == shown
    assert (
        cli(env, "show", old_store["run_ids"][0], "--format", "json").stdout == before["show_json"]
    )
    # Writable by this DuckDB too: a re-import finds every run already there.
    history = shared_datasets / "caste-bias" / "history"
    again = cli(env, "import", "caste-bias", str(history), "--snapshot", SNAPSHOT)
    assert again.returncode in (0, 1), again.stderr
    assert cli(env, "runs", "list", "--format", "json").stdout == before["runs"]


def test_convert_refuses_what_it_need_not_or_must_not_do(
    old_store, tmp_path, session_cache, shared_datasets
):
    env = _env(tmp_path, session_cache, shared_datasets)
    db = old_store["db"]
    taken = tmp_path / "taken.duckdb"
    taken.write_bytes(b"somebody's file")
    exists = cli(env, "db", "convert", str(db), "--out", str(taken))
    assert exists.returncode == 2
    assert exists.stderr.strip().splitlines() == [
        f"error: {taken} already exists; name another file with --out"
    ]
    assert taken.read_bytes() == b"somebody's file"

    current = tmp_path / "current.duckdb"
    duckdb.connect(str(current)).close()
    readable = cli(env, "db", "convert", str(current))
    assert readable.returncode == 2
    assert "already readable by DuckDB" in readable.stderr
    assert not convert.default_out(current).exists()

    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 20)
    foreign = cli(env, "db", "convert", str(text))
    assert foreign.returncode == 2
    assert foreign.stderr.strip() == f"error: {text} is not a DuckDB file"


def test_a_second_conversion_needs_no_network(old_store, tmp_path, session_cache, shared_datasets):
    """The DuckDB 2.0.0 of the first conversion is in the cache: pip is never asked again."""
    env = {
        **_env(tmp_path, session_cache, shared_datasets),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(tmp_path),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    done = cli(env, "db", "convert", str(old_store["db"]))
    assert done.returncode == 0, done.stderr
    out = convert.default_out(old_store["db"])
    assert out.is_file()
    converted = f"converted {old_store['db']} (written by DuckDB v2.0.0) to {out}"
    assert done.stdout.startswith(converted)
    out.unlink()


def test_merging_a_shard_written_by_duckdb_2_names_the_conversion(
    old_store, tmp_path, session_cache, shared_datasets
):
    """`db merge` opens its shards itself: a 2.0.0 shard gets the same one-line refusal,
    naming the shard, and neither the shard nor the target is changed."""
    shard = old_store["db"]
    digest = _sha256(shard)
    target = tmp_path / "team.duckdb"
    env = _env(tmp_path, session_cache, shared_datasets)
    done = cli(env, "db", "merge", str(shard), "--db", str(target))
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: shard {shard} was written by DuckDB v2.0.0"), lines[0]
    assert lines[0].endswith(f"convert it with: bias-monitor db convert {shard}"), lines[0]
    assert _sha256(shard) == digest
