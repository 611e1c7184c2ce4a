"""Where a store under test lives: a DuckDB file, a DuckLake with a SQLite catalog and a
local data folder (always, offline), and a DuckLake with a PostgreSQL catalog and an
``s3://`` data path on moto (where ``scripts/ci/lake-servers`` runs them; in CI, with
``MONITOR_TEST_LAKE_REQUIRED=1``, a missing server fails the test instead of skipping).

Each location is new: a file or catalog in the test's folder, or a fresh PostgreSQL
database and S3 bucket per test, so tests share nothing.

Also what the lake tests that go through the CLI share (one copy here): ``cli`` (one
``bias-monitor`` command as a user types it), ``cli_env`` (its environment: no store of
the caller's, this test's data folder), and the patterns of what may differ between two
stores of the same runs (``CLOCK``, ``ELAPSED``, ``CLOCK_CELL``: wall-clock times;
``LAKE_SNAPSHOT``: the lake snapshot a lake's report names).
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

# Wall-clock times of an import (when the quality gate closed each run, when the report
# was built): the only values allowed to differ between two stores of the same runs.
CLOCK = re.compile(r'"(finished_at|generated_at|old|new)": "20\d\d-[^"]*T[^"]*"')
ELAPSED = re.compile(r'"elapsed_s": [0-9.]+')
CLOCK_CELL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00|\d{4}-\d\d-\d\d \d\d:\d\d UTC")
# What only a lake's report holds: the snapshot it read (tests/test_lake_asof.py), in the
# JSON and as a line of the Markdown.
LAKE_SNAPSHOT = re.compile(r'  "lake_snapshot": \{[^}]*\},\n|Read at lake snapshot \d+ .*\n\n')

KINDS = ("file", "lake-sqlite", "lake-postgres")
PG = os.environ.get("MONITOR_TEST_LAKE_PG")
S3 = os.environ.get("MONITOR_TEST_LAKE_S3")
REQUIRED = os.environ.get("MONITOR_TEST_LAKE_REQUIRED") == "1"
# The lake a team runs (a PostgreSQL catalog, an s3:// data path) where its servers run or
# CI requires them; elsewhere the offline one. For the costly tests (a model run, a
# model store moved) that run once, on the lake that matters, not once per kind.
TEAM = "lake-postgres" if (PG and S3) or REQUIRED else "lake-sqlite"


def servers() -> tuple[str, str]:
    """The PostgreSQL connection string and the S3 endpoint, else skip (fail in CI)."""
    if PG and S3:
        return PG, S3
    why = (
        "no PostgreSQL and S3 servers for the lake (MONITOR_TEST_LAKE_PG, MONITOR_TEST_LAKE_S3;"
        ' start them with: eval "$(scripts/ci/lake-servers start DIR)")'
    )
    if REQUIRED:
        pytest.fail(f"MONITOR_TEST_LAKE_REQUIRED=1 but {why}")
    pytest.skip(why)


def _psql() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
    return found[-1] if found else "psql"


def new_location(kind: str, folder: Path) -> tuple[str, dict[str, str]]:
    """A fresh store of ``kind``: the ``--db`` value and the environment it needs."""
    if kind == "file":
        return str(folder / "m.duckdb"), {}
    if kind == "lake-sqlite":
        db = f"ducklake:sqlite:{folder / 'catalog.sqlite'}"
        return db, {"MONITOR_LAKE_DATA": str(folder / "lake-data")}
    assert kind == "lake-postgres", kind
    pg, s3 = servers()
    name = f"t{uuid.uuid4().hex[:12]}"
    subprocess.run([_psql(), pg, "-q", "-c", f"CREATE DATABASE {name}"], check=True)
    urllib.request.urlopen(urllib.request.Request(f"http://{s3}/{name}", method="PUT"))
    conninfo = " ".join(p for p in pg.split() if not p.startswith("dbname=")) + f" dbname={name}"
    return f"ducklake:postgres:{conninfo}", {
        "MONITOR_LAKE_DATA": f"s3://{name}/lake",
        # moto takes any pair; distinct values, so that a leak of one is findable in any
        # output (tests/test_redaction_short_values.py runs a lake with keys "test").
        "AWS_ACCESS_KEY_ID": "AKIALAKEFIXTURE7",
        "AWS_SECRET_ACCESS_KEY": "lake-fixture-secret-3b9d",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{s3}",
    }


def cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``bias-monitor ARGS`` in a subprocess, as a user types it; with ``check``, a
    non-zero exit fails the test with both streams."""
    done = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def cli_env(base: Path, shared: Path, cache: Path, extra: dict[str, str]) -> dict[str, str]:
    """A CLI call's environment: the caller's without its store (``--db`` names one), this
    test's data folder under ``base``, the session's model cache, ``extra`` on top."""
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


def refused(env: dict[str, str], *args: str) -> str:
    """The one line a refused command prints (exit 2, ``error: ...``, nothing else)."""
    done = cli(env, *args, check=False)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def masked(text: str) -> str:
    """``text`` with what may differ between two stores of the same runs replaced: the
    lake snapshot a report names, wall-clock times and elapsed seconds."""
    text = LAKE_SNAPSHOT.sub("", text)
    text = ELAPSED.sub(r'"elapsed_s": 0', CLOCK.sub(r'"\1": "<clock>"', text))
    return CLOCK_CELL.sub("<clock>", text)
