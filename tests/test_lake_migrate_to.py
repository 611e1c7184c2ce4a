"""``db migrate-to`` through the CLI (issue 47, item 4): a file store moved into a lake
answers every reading command as the file did.

The GPT-4o caste study's history (its April and July results, the ten result files, as
two runs) imported into a DuckDB file and the ``make run`` store (two SmolLM2 runs of
``bias-monitor run -b bhed-caste``, the session's fixture) are each moved into the team
lake (``_lake.TEAM``: a PostgreSQL catalog and an ``s3://`` data path where the lake
servers run, as CI requires them; a SQLite catalog elsewhere); the refusals and the move
in small commits run on a SQLite catalog.
``runs list``, ``drift --format json`` and the report's JSON then read the same from
both, apart from when the report was built. The source stores and what they read are
built once for the module.
A second move is a no-op that says so; a lake holding other runs is refused in one line,
its contents untouched; the run exports of the results branch move in with
``--from-export``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import duckdb
import pytest
from _lake import LAKE_SNAPSHOT, TEAM, cli, cli_env, new_location

from monitor.store import extensions, migrate

SNAPSHOT = "gpt-4o-caste-study"
GENERATED = re.compile(r'"generated_at": "[^"]*"')


def _import(env: dict[str, str], db: list[str], shared: Path, snapshot: str = SNAPSHOT) -> None:
    results = shared / "caste-bias" / "results"
    for study, date in (("april", "2024-04-16"), ("july", "2024-07-18")):
        cli(env, "import", "caste-bias", str(results / study), "--snapshot", snapshot,
             "--date", date, *db)  # fmt: skip


_READS = {
    "runs list": ("runs", "list", "--format", "json"),
    "drift": ("drift", "--format", "json"),
}


def _reads(env: dict[str, str], db: list[str], folder: Path) -> dict[str, str]:
    """What the reading commands print: ``runs list``, ``drift --format json`` and the
    report's JSON (its build time masked; it names no store)."""
    cli(env, "report", "--out", str(folder), *db)
    report = GENERATED.sub('"generated_at": "<clock>"', (folder / "report.json").read_text())
    if db[1].startswith("ducklake:"):  # a lake's report names the snapshot it read
        report, named = LAKE_SNAPSHOT.subn("", report)
        assert named == 1, report[:400]
    return {
        **{name: cli(env, *args, *db).stdout for name, args in _READS.items()},
        "report.json": report,
    }


def _lake_args(kind: str, folder: Path) -> tuple[str, list[str], dict[str, str]]:
    """A new lake: its URL, the ``--lake-data`` flag a user types, its environment."""
    db, extra = new_location(kind, folder)
    return db, ["--lake-data", extra.pop("MONITOR_LAKE_DATA")], extra


@pytest.fixture(scope="module")
def caste_store(tmp_path_factory, shared_datasets, session_cache) -> tuple[Path, dict[str, str]]:
    """The caste history in a DuckDB file, and what the reading commands print from it."""
    base = tmp_path_factory.mktemp("caste-file")
    env = cli_env(base, shared_datasets, session_cache, {})
    db = base / "m.duckdb"
    _import(env, ["--db", str(db)], shared_datasets)
    return db, _reads(env, ["--db", str(db)], base / "report")


def test_the_caste_history_moves_into_a_lake_and_reads_the_same(
    caste_store, tmp_path, shared_datasets, session_cache
):
    db, on_file = caste_store
    url, data, extra = _lake_args(TEAM, tmp_path)
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(db))
    first = done.stdout.splitlines()[0]
    assert first.startswith("moved 2 run(s), 1,468 score(s), 734 item(s) from database"), first
    assert "drift --format json the same from both (1 pair(s) of runs)" in done.stdout
    assert "  scores: 1,468 row(s) in the file, 1,468 in the lake" in done.stderr
    on_lake = _reads(env, ["--db", url, *data], tmp_path / "report")
    for name, text in on_file.items():
        assert on_lake[name] == text, name
    assert json.loads(on_lake["drift"])["pairs"]  # a comparison, not an empty answer

    again = cli(env, "db", "migrate-to", url, *data, "--db", str(db), "--format", "json")
    moved = json.loads(again.stdout)
    assert moved["moved"] is False and "nothing moved" in moved["summary"]
    assert moved["tables"]["scores"] == 1468 and moved["tables"]["pair_scores"] == 1358
    # The lake reads as before (the report is built from these runs and this drift).
    for name in ("runs list", "drift"):
        assert cli(env, *_READS[name], "--db", url, *data).stdout == on_lake[name], name


def test_a_lake_with_other_runs_is_refused_and_left_as_it_was(
    caste_store, tmp_path, shared_datasets, session_cache
):
    db, _ = caste_store
    url, data, extra = _lake_args("lake-sqlite", tmp_path)
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    _import(env, ["--db", url, *data], shared_datasets, snapshot="another-study")
    before = cli(env, "runs", "list", "--format", "json", "--db", url, *data).stdout
    files = _files(tmp_path)
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(db), check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "already holds 2 run(s) the file does not" in lines[0], lines
    assert f"bias-monitor db merge {db} --db LAKE_URL" in lines[0]
    assert done.stdout == ""
    assert cli(env, "runs", "list", "--format", "json", "--db", url, *data).stdout == before
    assert _files(tmp_path) == files  # neither the catalog nor a data file written
    # A file path is not a lake: refused, nothing made.
    done = cli(env, "db", "migrate-to", str(tmp_path / "x.duckdb"), "--db", str(db), check=False)
    assert done.returncode == 2 and "is a file path; give a lake URL" in done.stderr
    assert not (tmp_path / "x.duckdb").exists()
    # An older file is upgraded in a copy, never in place (here one without runs).
    old = tmp_path / "old" / "old.duckdb"
    old.parent.mkdir()
    with duckdb.connect(str(old)) as con:
        migrate.apply_migrations(con, "old", upto=2)
    kept = old.read_bytes()
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(old), check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "moving a copy upgraded to" in done.stderr and "holds no run" in done.stderr
    assert old.read_bytes() == kept and sorted(os.listdir(old.parent)) == ["old.duckdb"]


def test_a_lake_that_reads_differently_fails_the_check(
    caste_store, tmp_path, shared_datasets, session_cache
):
    """The same runs, but the lake's July run quarantined since (a lifecycle column,
    which merge keeps as the lake has it): row counts agree, drift does not, and the
    move says so instead of reporting success."""
    db, on_file = caste_store
    url, data, extra = _lake_args("lake-sqlite", tmp_path)
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    cli(env, "db", "migrate-to", url, *data, "--db", str(db))
    july = json.loads(on_file["runs list"])[0]["run_id"]
    con = duckdb.connect()
    extensions.load(con, "ducklake", "sqlite_scanner")
    con.execute(f"ATTACH '{url}' AS lake (DATA_PATH '{data[1]}')")
    con.execute("UPDATE lake.runs SET status = 'quarantined' WHERE run_id = ?", [july])
    con.close()
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(db), check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: drift --format json reads differently from lake"), last
    assert done.stdout == ""


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_the_history_branchs_exports_move_in(caste_store, tmp_path, shared_datasets, session_cache):
    """``--from-export`` reads run exports as ``db rebuild`` does (any depth)."""
    db, on_file = caste_store
    env = cli_env(tmp_path, shared_datasets, session_cache, {})
    runs = json.loads(on_file["runs list"])
    for run in runs:
        cli(env, "export", run["run_id"], "--out", str(tmp_path / "history" / "2024"),
             "--db", str(db))  # fmt: skip
    url, data, extra = _lake_args("lake-sqlite", tmp_path)
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    done = cli(env, "db", "migrate-to", url, *data, "--from-export", str(tmp_path / "history"))
    assert done.stdout.startswith(
        f"moved 2 run(s), 1,468 score(s), 734 item(s) from the run exports under "
        f"{tmp_path / 'history'} into lake {url}"
    ), done.stdout
    on_lake = _reads(env, ["--db", url, *data], tmp_path / "report")
    for name, text in on_file.items():
        assert on_lake[name] == text, name


@pytest.fixture(scope="module")
def make_run_store(
    smollm2_caste_runs, tmp_path_factory, shared_datasets, session_cache
) -> tuple[Path, dict[str, str]]:
    """A copy of the ``make run`` store (the session's file is read by other tests), and
    what the reading commands print from it."""
    session_db, _ = smollm2_caste_runs
    base = tmp_path_factory.mktemp("make-run-file")
    db = base / "m.duckdb"
    shutil.copy(session_db, db)
    env = cli_env(base, shared_datasets, session_cache, {})
    return db, _reads(env, ["--db", str(db)], base / "report")


def test_a_make_run_store_moves_into_a_lake_and_reads_the_same(
    make_run_store, tmp_path, shared_datasets, session_cache
):
    """The default command's store (SmolLM2 on bhed-caste with its control and the
    metric panel, scored twice): a drift of real model scores, moved into the team lake
    (PostgreSQL + S3 where the lake servers run, else SQLite: ``_lake.TEAM``; the move
    itself is the same code on both catalogs, which the caste history covers)."""
    db, on_file = make_run_store
    url, data, extra = _lake_args(TEAM, tmp_path)
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(db))
    assert done.stdout.startswith("moved 2 run(s), "), done.stdout
    on_lake = _reads(env, ["--db", url, *data], tmp_path / "lake-report")
    for name, text in on_file.items():
        assert on_lake[name] == text, name
    assert json.loads(on_lake["drift"])["pairs"]


def test_a_move_in_small_commits_reads_as_one_and_a_rerun_finishes_an_interrupted_one(
    caste_store, tmp_path, shared_datasets, session_cache
):
    """``--runs-per-commit 1``: the two caste runs go in two lake commits, a progress line
    each on stderr, and the lake reads as the file (and as a one-commit move) does. A lake
    holding some of the file's runs, as an interrupted move leaves it (here the July run,
    moved in alone from its export), is finished by the same command: the run there is
    checked and skipped, the other copied; one whose stored copy differs is refused."""
    db, on_file = caste_store
    one = tmp_path / "one-commit"
    url, data, extra = _lake_args("lake-sqlite", one)
    env = cli_env(one, shared_datasets, session_cache, extra)
    cli(env, "db", "migrate-to", url, *data, "--db", str(db))
    one_commit = cli(env, *_READS["drift"], "--db", url, *data).stdout

    small = tmp_path / "small"
    url, data, extra = _lake_args("lake-sqlite", small)
    env = cli_env(small, shared_datasets, session_cache, extra)
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(db), "--runs-per-commit", "1")
    assert done.stdout.startswith("moved 2 run(s), 1,468 score(s), 734 item(s)"), done.stdout
    progress = [line for line in done.stderr.splitlines() if line.startswith("  runs ")]
    assert progress == ["  runs 1/2 in the lake", "  runs 2/2 in the lake"], done.stderr
    assert "1 a commit (2 commit(s))" in done.stderr
    on_lake = _reads(env, ["--db", url, *data], small / "report")
    for name, text in on_file.items():
        assert on_lake[name] == text, name
    assert on_lake["drift"] == one_commit

    runs = json.loads(on_file["runs list"])
    july = runs[0]["run_id"]
    cli(env, "export", july, "--out", str(tmp_path / "july"), "--db", str(db))
    part = tmp_path / "interrupted"
    url, data, extra = _lake_args("lake-sqlite", part)
    env = cli_env(part, shared_datasets, session_cache, extra)
    cli(env, "db", "migrate-to", url, *data, "--from-export", str(tmp_path / "july"))
    held = json.loads(cli(env, *_READS["runs list"], "--db", url, *data).stdout)
    assert [r["run_id"] for r in held] == [july]
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(db), "--runs-per-commit", "1")
    assert done.stdout.splitlines()[0].endswith(
        "(1 run(s) of them were there already, from an earlier move)"
    ), done.stdout
    assert done.stdout.startswith("moved 2 run(s), 1,468 score(s), 734 item(s)"), done.stdout
    assert "(1 of 2 run(s) there already)" in done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("  runs ")] == [
        "  runs 2/2 in the lake"
    ]
    on_lake = _reads(env, ["--db", url, *data], part / "report")
    for name, text in on_file.items():
        assert on_lake[name] == text, name

    # A run in the lake that is not the file's (one score changed since): refused.
    other = tmp_path / "changed"
    url, data, extra = _lake_args("lake-sqlite", other)
    env = cli_env(other, shared_datasets, session_cache, extra)
    cli(env, "db", "migrate-to", url, *data, "--from-export", str(tmp_path / "july"))
    con = duckdb.connect()
    extensions.load(con, "ducklake", "sqlite_scanner")
    con.execute(f"ATTACH '{url}' AS lake (DATA_PATH '{data[1]}')")
    con.execute(
        "UPDATE lake.scores SET delta = delta + 1 WHERE item_id = "
        "(SELECT min(item_id) FROM lake.scores)"
    )
    con.close()
    done = cli(env, "db", "migrate-to", url, *data, "--db", str(db), check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    last = done.stderr.strip().splitlines()[-1]
    assert f"run {july} in lake {url} differs from the one in database {db} (scores)" in last
    held = json.loads(cli(env, *_READS["runs list"], "--db", url, *data).stdout)
    assert [r["run_id"] for r in held] == [july]  # nothing written
