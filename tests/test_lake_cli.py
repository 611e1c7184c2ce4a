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
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from _lake import new_location

from monitor.store import extensions

SNAPSHOT = "gpt-4o-caste-study"
# Wall-clock times of the import (when the quality gate closed each run, when the report
# was built): the only values allowed to differ between two stores of the same runs.
CLOCK = re.compile(r'"(finished_at|generated_at|old|new)": "20\d\d-[^"]*T[^"]*"')
ELAPSED = re.compile(r'"elapsed_s": [0-9.]+')
# What only a lake's report holds: the snapshot it read (tests/test_lake_asof.py).
LAKE_SNAPSHOT = re.compile(r'  "lake_snapshot": \{[^}]*\},\n|Read at lake snapshot \d+ .*\n\n')
CLOCK_CELL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00|\d{4}-\d\d-\d\d \d\d:\d\d UTC")


def _cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def _env(base: Path, shared: Path, cache: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MONITOR_DB", "MONITOR_LAKE_DATA")}
    return {
        **env,
        **extra,
        "MONITOR_DATA_DIR": str(base / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared),
        "MONITOR_CACHE_DIR": str(cache),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }


def _outputs(env: dict[str, str], db: list[str], base: Path, shared: Path) -> dict[str, str]:
    """Import April and July, then what every reading command prints (the July run
    shown), wall-clock times masked."""
    results = shared / "caste-bias" / "results"
    out = {}
    for study, date in (("april", "2024-04-16"), ("july", "2024-07-18")):
        out[f"import {study}"] = _cli(env, "import", "caste-bias", str(results / study),
                                      "--snapshot", SNAPSHOT, "--date", date, *db).stdout  # fmt: skip  # noqa: E501
    out["runs list"] = _cli(env, "runs", "list", "--format", "json", *db).stdout
    july = json.loads(out["runs list"])[0]["run_id"]
    out["show"] = _cli(env, "show", july, "--format", "json", *db).stdout
    out["drift"] = _cli(env, "drift", "--format", "json", *db).stdout
    _cli(env, "report", "--out", str(base / "report"), *db)
    for name in ("report.json", "report.md"):
        out[name] = (base / "report" / name).read_text()
    return {k: _masked(v) for k, v in out.items()}


def _masked(text: str) -> str:
    text = LAKE_SNAPSHOT.sub("", text)
    text = ELAPSED.sub(r'"elapsed_s": 0', CLOCK.sub(r'"\1": "<clock>"', text))
    return CLOCK_CELL.sub("<clock>", text)


@pytest.fixture(scope="module")
def on_file(tmp_path_factory, shared_datasets, session_cache) -> dict[str, str]:
    base = tmp_path_factory.mktemp("file-store")
    env = _env(base, shared_datasets, session_cache, {})
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
    env = _env(tmp_path, shared_datasets, session_cache, {**extra, **canaries})
    on_lake = _outputs(env, ["--db", db, "--lake-data", data], tmp_path, shared_datasets)
    assert sorted(on_lake) == sorted(on_file)
    for name, text in on_file.items():
        assert on_lake[name] == text, name
    assert json.loads(on_lake["drift"])  # figures, not an empty answer
    texts = [*on_lake.values(), *_lake_contents(db, data, extra)]
    # A catalog that cannot be reached: its error is quoted, redacted.
    down = _cli(env, "runs", "list", "--db", "ducklake:postgres:host=127.0.0.1 port=1 dbname=x",
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


def _refused(env: dict[str, str], *args: str) -> str:
    done = _cli(env, *args, check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_malformed_lake_urls_are_one_line_and_write_nothing(tmp_path, shared_datasets,
                                                            session_cache):  # fmt: skip
    env = _env(tmp_path, shared_datasets, session_cache, {})
    folder = shared_datasets / "caste-bias" / "results" / "april"
    catalog = tmp_path / "c.sqlite"
    imp = ["import", "caste-bias", str(folder), "--snapshot", SNAPSHOT, "--date", "2024-04-16"]
    line = _refused(env, *imp, "--db", f"ducklake:sqlite:{catalog}")
    assert "needs a data path" in line and "--lake-data" in line
    line = _refused(env, "runs", "list", "--db", f"ducklake:mysql:{catalog}", "--lake-data", "d")
    assert "unknown DuckLake catalog kind 'mysql'" in line
    secret = "pw-canary-7f3a9c"
    line = _refused(env, "runs", "list", "--db",
                    f"ducklake:postgres:dbname=x host=127.0.0.1 password={secret}",
                    "--lake-data", str(tmp_path / "d"))  # fmt: skip
    assert "holds a password" in line and secret not in line
    line = _refused(env, "runs", "list", "--db",
                    f"ducklake:postgres:postgresql://u:{secret}@127.0.0.1/x",
                    "--lake-data", str(tmp_path / "d"))  # fmt: skip
    assert "holds a password" in line and secret not in line
    line = _refused(env, "db", "rebuild", str(tmp_path / "history"), "--db",
                    f"ducklake:sqlite:{catalog}", "--lake-data", str(tmp_path / "d"))  # fmt: skip
    assert "db rebuild writes a DuckDB file, not a lake" in line and "db merge" in line
    # A reader never creates a lake.
    line = _refused(env, "runs", "list", "--db", f"ducklake:sqlite:{catalog}",
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
    env = _env(tmp_path, shared_datasets, session_cache, {})
    env["PYTHONPATH"] = os.pathsep.join([str(shadow.parent), env.get("PYTHONPATH", "")])
    folder = shared_datasets / "caste-bias" / "results" / "april"
    lake = tmp_path / "lake"
    line = _refused(env, "import", "caste-bias", str(folder), "--snapshot", SNAPSHOT,
                    "--date", "2024-04-16", "--db", f"ducklake:sqlite:{lake / 'c.sqlite'}",
                    "--lake-data", str(lake / "data"))  # fmt: skip
    assert "DuckDB extension ducklake" in line and extensions.INSTALL_HINT in line
    assert not lake.exists()
