"""A store on DuckLake through the CLI (issue 47, items 1-3): the GPT-4o caste study's
April and July results imported with ``--db ducklake:... --lake-data ...`` give, through
``runs list``, ``show``, ``drift --format json`` and ``report``, the same figures as the
same commands on a DuckDB file; only the wall-clock times of the import differ.

On a lake with a SQLite catalog and a local folder (always), and on one with a
PostgreSQL catalog and an ``s3://`` data path on moto where the lake servers run
(tests/_lake.py). A malformed lake URL, a lake URL without a data path and missing
extension packages are each one line, exit 2, nothing written; a credential never
appears in an error, an output or the lake (the lake's part of the canary).
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _lake import TEAM, cli, cli_env, masked, new_location, refused

from monitor.store import extensions
from monitor.store.export import sha256_file

SNAPSHOT = "gpt-4o-caste-study"


def _outputs(env: dict[str, str], db: list[str], base: Path, shared: Path) -> dict[str, str]:
    """Import April and July, then what every reading command prints (the July run
    shown), wall-clock times masked."""
    results = shared / "caste-bias" / "results"
    out = {}
    for study, date in (("april", "2024-04-16"), ("july", "2024-07-18")):
        out[f"import {study}"] = cli(env, "import", "caste-bias", str(results / study),
                                      "--snapshot", SNAPSHOT, "--date", date, *db).stdout  # fmt: skip  # noqa: E501
    out["runs list"] = cli(env, "runs", "list", "--format", "json", *db).stdout
    july = json.loads(out["runs list"])[0]["run_id"]
    out["show"] = cli(env, "show", july, "--format", "json", *db).stdout
    out["drift"] = cli(env, "drift", "--format", "json", *db).stdout
    cli(env, "report", "--out", str(base / "report"), *db)
    for name in ("report.json", "report.md"):
        out[name] = (base / "report" / name).read_text()
    return {k: masked(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def on_file(tmp_path_factory, shared_datasets, session_cache) -> dict[str, str]:
    base = tmp_path_factory.mktemp("file-store")
    env = cli_env(base, shared_datasets, session_cache, {})
    return _outputs(env, ["--db", str(base / "m.duckdb")], base, shared_datasets)


@pytest.mark.parametrize("kind", ["lake-sqlite", "lake-postgres"])
def test_a_lake_gives_the_file_stores_figures(kind, on_file, tmp_path, shared_datasets,
                                               session_cache):  # fmt: skip
    """Also the lake's part of the credentials canary: PGPASSWORD and the S3 keys hold
    canary values, and no output, catalog table or data file may hold them."""
    db, extra = new_location(kind, tmp_path)
    data = extra.pop("MONITOR_LAKE_DATA")  # given as --lake-data, as a user types it
    canaries = {"PGPASSWORD": "pgpw-canary-4b1d2e9f", "AWS_SESSION_TOKEN": "tok-canary-5c3e"}
    if kind == "lake-postgres":  # moto takes any key pair: make them canaries too
        canaries |= {"AWS_ACCESS_KEY_ID": "AKIACANARY7Q2W",
                     "AWS_SECRET_ACCESS_KEY": "awssecret-canary-9e8d7c6b"}  # fmt: skip
    env = cli_env(tmp_path, shared_datasets, session_cache, {**extra, **canaries})
    on_lake = _outputs(env, ["--db", db, "--lake-data", data], tmp_path, shared_datasets)
    assert sorted(on_lake) == sorted(on_file)
    for name, text in on_file.items():
        assert on_lake[name] == text, name
    assert json.loads(on_lake["drift"])  # figures, not an empty answer
    texts = [*on_lake.values(), *_lake_contents(db, data, extra)]
    # A catalog that cannot be reached: its error is quoted, redacted.
    down = cli(env, "runs", "list", "--db", "ducklake:postgres:host=127.0.0.1 port=1 dbname=x",
                "--lake-data", data, check=False)  # fmt: skip
    assert down.returncode == 2 and "cannot open lake" in down.stderr
    texts.append(down.stderr)
    for name, secret in canaries.items():
        leaked = [t[:120] for t in texts if secret in t]
        assert not leaked, f"{name} leaked: {leaked}"


def _lake_contents(db: str, data: str, extra: dict[str, str]) -> list[str]:
    """Every catalog table and every data file of the lake, as text."""
    con = duckdb.connect()
    extensions.load(con, "ducklake", "sqlite_scanner", "postgres_scanner", "httpfs")
    if data.startswith("s3://"):
        con.execute(
            "CREATE SECRET (TYPE s3, KEY_ID 'test', SECRET 'test', REGION 'us-east-1', "
            f"ENDPOINT '{extra['AWS_ENDPOINT_URL'][7:]}', URL_STYLE 'path', USE_SSL false)"
        )
    con.execute(f"ATTACH '{db}' AS lake (READ_ONLY)")
    tables = [t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() "
                                        "WHERE database_name = 'lake'").fetchall()]  # fmt: skip
    assert "runs" in tables and "scores" in tables
    texts = [str(con.execute(f"SELECT * FROM lake.{t}").fetchall()) for t in tables]
    files = con.execute(f"SELECT file FROM glob('{data.rstrip('/')}/**/*.parquet')").fetchall()
    assert files  # the rows are Parquet files under the data path
    texts += [str(con.execute(f"SELECT * FROM read_parquet('{f}')").fetchall()) for (f,) in files]
    con.close()
    return texts


def test_malformed_lake_urls_are_one_line_and_write_nothing(tmp_path, shared_datasets,
                                                            session_cache):  # fmt: skip
    env = cli_env(tmp_path, shared_datasets, session_cache, {})
    folder = shared_datasets / "caste-bias" / "results" / "april"
    catalog = tmp_path / "c.sqlite"
    imp = ["import", "caste-bias", str(folder), "--snapshot", SNAPSHOT, "--date", "2024-04-16"]
    line = refused(env, *imp, "--db", f"ducklake:sqlite:{catalog}")
    assert "needs a data path" in line and "--lake-data" in line
    line = refused(env, "runs", "list", "--db", f"ducklake:mysql:{catalog}", "--lake-data", "d")
    assert "unknown DuckLake catalog kind 'mysql'" in line
    secret = "pw-canary-7f3a9c"
    line = refused(env, "runs", "list", "--db",
                    f"ducklake:postgres:dbname=x host=127.0.0.1 password={secret}",
                    "--lake-data", str(tmp_path / "d"))  # fmt: skip
    assert "holds a password" in line and secret not in line
    line = refused(env, "runs", "list", "--db",
                    f"ducklake:postgres:postgresql://u:{secret}@127.0.0.1/x",
                    "--lake-data", str(tmp_path / "d"))  # fmt: skip
    assert "holds a password" in line and secret not in line
    line = refused(env, "db", "rebuild", str(tmp_path / "history"), "--db",
                    f"ducklake:sqlite:{catalog}", "--lake-data", str(tmp_path / "d"))  # fmt: skip
    assert "db rebuild writes a DuckDB file, not a lake" in line and "db merge" in line
    # A reader never creates a lake.
    line = refused(env, "runs", "list", "--db", f"ducklake:sqlite:{catalog}",
                    "--lake-data", str(tmp_path / "d"))  # fmt: skip
    assert "no lake catalog" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_missing_extension_packages_are_one_line_and_write_nothing(tmp_path, shared_datasets,
                                                                  session_cache):  # fmt: skip
    """A ``duckdb_extension_ducklake`` with no extension file in it shadows the installed
    one: the import stops before the catalog or the data folder exists."""
    shadow = tmp_path / "shadow" / extensions.EXTENSIONS["ducklake"].module
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    env = cli_env(tmp_path, shared_datasets, session_cache, {})
    env["PYTHONPATH"] = os.pathsep.join([str(shadow.parent), env.get("PYTHONPATH", "")])
    folder = shared_datasets / "caste-bias" / "results" / "april"
    lake = tmp_path / "lake"
    line = refused(env, "import", "caste-bias", str(folder), "--snapshot", SNAPSHOT,
                    "--date", "2024-04-16", "--db", f"ducklake:sqlite:{lake / 'c.sqlite'}",
                    "--lake-data", str(lake / "data"))  # fmt: skip
    assert "DuckDB extension ducklake" in line and extensions.INSTALL_HINT in line
    assert not lake.exists()


def _exported(folder: Path, table: str) -> list[tuple]:
    """A run export's rows of ``table``, sorted, without what names the run or a time."""
    rows = pq.read_table(folder / f"{table}.parquet").to_pylist()
    return sorted(
        tuple((k, repr(v)) for k, v in row.items() if k != "run_id" and not isinstance(v, datetime))
        for row in rows
    )


def test_a_model_run_on_the_team_lake_scores_what_a_file_store_scored(
    smollm2_caste_runs, tmp_path, shared_datasets, session_cache
):
    """``bias-monitor run -b bhed-caste`` (the README's first run: SmolLM2 with its neutral
    control and the metric panel) into the team lake (``_lake.TEAM``: PostgreSQL + S3 in
    CI) gives the session's run on a DuckDB file figure for figure; ``quality`` judges it
    as on the file, and ``export`` writes from the lake the same items, scores and
    measures (a pinned model on one machine scores the same bits)."""
    session_db, (first, _) = smollm2_caste_runs
    on_file = dict(first)  # the session's outcome is shared: popped from a copy
    file_db = tmp_path / "file" / "m.duckdb"  # quality appends a validation: a copy
    file_db.parent.mkdir()
    shutil.copy(session_db, file_db)
    url, extra = new_location(TEAM, tmp_path / "lake")
    lake = ["--db", url, "--lake-data", extra.pop("MONITOR_LAKE_DATA")]
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    (on_lake,) = json.loads(cli(env, "run", "-b", "bhed-caste", "--format", "json", *lake).stdout)
    lake_run, file_run = on_lake.pop("run_id"), on_file.pop("run_id")
    assert on_lake["status"] == "complete" and on_lake["n_scored"] == 158, on_lake
    differ = {k: (on_lake.get(k), on_file.get(k)) for k in on_lake | on_file
              if on_lake.get(k) != on_file.get(k)}  # fmt: skip
    assert not differ, differ

    judged = {}
    for name, run, db in (("lake", lake_run, lake), ("file", file_run, ["--db", str(file_db)])):
        text = cli(env, "quality", run, "--format", "json", *db).stdout
        judged[name] = masked(text.replace(run, "<run>"))
        cli(env, "export", run, "--out", str(tmp_path / name), *db)
    assert judged["lake"] == judged["file"] and json.loads(judged["lake"])
    for table in ("items", "scores", "exclusions", "axis_measures"):
        rows = _exported(tmp_path / "lake" / lake_run, table)
        assert rows == _exported(tmp_path / "file" / file_run, table), table
        assert rows or table == "exclusions", table


def test_a_run_that_fails_the_gate_is_quarantined_on_a_lake_as_on_a_file(
    tmp_path, shared_datasets, session_cache
):
    """An import with an impossible number (a log-prob above 0) into the team lake: exit 1,
    the run quarantined with the reason, as on a DuckDB file; ``quality`` fails it again;
    exported from the lake and merged into a DuckDB file, it reads the same. A shard that
    says the run is complete is judged again when ``db merge`` adds it to a lake, and
    quarantined there."""
    src = shared_datasets / "caste-bias" / "results" / "july" / "Caste_results.csv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    assert ",-0.738471,-inf," in lines[1]  # data row 0's stereo_logit, made positive
    lines[1] = lines[1].replace(",-0.738471,-inf,", ",0.738471,-inf,", 1)
    folder = tmp_path / "july"
    folder.mkdir()
    (folder / "Caste_results.csv").write_text("".join(lines), encoding="utf-8")
    url, extra = new_location(TEAM, tmp_path / "lake")
    lake = ["--db", url, "--lake-data", extra.pop("MONITOR_LAKE_DATA")]
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    shown = {}
    for name, db in (("file", ["--db", str(tmp_path / "a.duckdb")]), ("lake", lake)):
        done = cli(env, "import", "caste-bias", str(folder), "--snapshot", "broken",
                   "--date", "2024-07-18", *db, check=False)  # fmt: skip
        assert done.returncode == 1, done.stderr
        assert ": quarantined" in done.stdout and "prob_stereo" in done.stderr
        (run,) = json.loads(cli(env, "runs", "list", "--format", "json", *db).stdout)
        assert run["status"] == "quarantined" and "prob_stereo" in run["notes"]
        failed = cli(env, "quality", run["run_id"], *db, check=False)
        assert failed.returncode == 1 and "prob_stereo" in failed.stdout + failed.stderr
        cli(env, "export", run["run_id"], "--out", str(tmp_path / f"from-{name}"), *db)
        shown[name] = masked(cli(env, "show", run["run_id"], "--format", "json", *db).stdout)
    run_id = run["run_id"]
    merged = ["--db", str(tmp_path / "b.duckdb")]
    cli(env, "db", "merge", str(tmp_path / "from-lake"), *merged)
    shown["exported from the lake, merged into a file"] = masked(
        cli(env, "show", run_id, "--format", "json", *merged).stdout
    )
    assert json.loads(shown["file"])["run"]["status"] == "quarantined"
    for name, text in shown.items():
        assert text == shown["file"], name

    shard = tmp_path / "from-file" / run_id  # the same run, marked complete
    runs = pq.read_table(shard / "runs.parquet")
    complete = pa.array(["complete"] * runs.num_rows, runs.schema.field("status").type)
    pq.write_table(runs.set_column(runs.schema.get_field_index("status"), "status", complete),
                   shard / "runs.parquet")  # fmt: skip
    manifest = json.loads((shard / "manifest.json").read_text())
    manifest["tables"]["runs"]["sha256"] = sha256_file(shard / "runs.parquet")
    (shard / "manifest.json").write_text(json.dumps(manifest))
    url2, extra2 = new_location(TEAM, tmp_path / "lake2")
    lake2 = ["--db", url2, "--lake-data", extra2.pop("MONITOR_LAKE_DATA")]
    done = cli(env, "db", "merge", str(shard), *lake2, check=False)
    assert done.returncode == 1 and f"quarantined {run_id}: " in done.stderr, done.stderr
    again = json.loads(cli(env, "show", run_id, "--format", "json", *lake2).stdout)["run"]
    assert again["status"] == "quarantined" and "prob_stereo" in again["notes"]
