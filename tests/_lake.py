"""Where a store under test lives: a DuckDB file, a DuckLake with a SQLite catalog and a
local data folder (always, offline), and a DuckLake with a PostgreSQL catalog and an
``s3://`` data path on moto (where ``scripts/ci/lake-servers`` runs them; in CI, with
``MONITOR_TEST_LAKE_REQUIRED=1``, a missing server fails the test instead of skipping).

Each location is new: a file or catalog in the test's folder, or a fresh PostgreSQL
database and S3 bucket per test, so tests share nothing.
"""

from __future__ import annotations

import glob
import os
import subprocess
import urllib.request
import uuid
from pathlib import Path

import pytest

KINDS = ("file", "lake-sqlite", "lake-postgres")
PG = os.environ.get("MONITOR_TEST_LAKE_PG")
S3 = os.environ.get("MONITOR_TEST_LAKE_S3")
REQUIRED = os.environ.get("MONITOR_TEST_LAKE_REQUIRED") == "1"


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
        # moto takes any pair. Not "test": a lake registers these with the process's
        # redactor, which then hides that word in every later test of the same pytest
        # worker ("6 paired [REDACTED]s" failed two choice-question tests in CI).
        "AWS_ACCESS_KEY_ID": "AKIALAKEFIXTURE7",
        "AWS_SECRET_ACCESS_KEY": "lake-fixture-secret-3b9d",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{s3}",
    }
