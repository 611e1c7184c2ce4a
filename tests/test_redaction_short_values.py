"""A short credential is a word, not a secret: the redactor leaves ordinary text alone.

A lake registered its S3 keys with the process's redactor, and the redactor took any
value of four characters or more; a user whose moto or MinIO keys are ``test`` or
``minioadmin`` then read "drift: 0 flagged of 0 paired [REDACTED]s", in the terminal and
in report.json. Now a value under ``MIN_SECRET_LEN`` characters is not registered, the
access key id (an identifier) is not registered at all, and the credential shapes still
hide a short value where it stands as a credential (``monitor.redaction``).

Through the CLI: an import, ``drift`` and ``report`` on a lake with every credential in
the environment set to ``test``, on the lake a team runs (``_lake.TEAM``: PostgreSQL and
moto's S3, which takes any key pair, where the lake servers run, as CI requires them; a
SQLite catalog elsewhere). The long canaries of
tests/test_credentials_canary.py and tests/test_lake_cli.py are still redacted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _lake import TEAM, new_location

from monitor.redaction import MARK, MIN_SECRET_LEN, Redactor

SHORT = ("test", "minioadmin", "postgres", "password")
PROSE = (
    "drift: 0 flagged of 0 paired tests; the latest run; lake ducklake:postgres:host=db; "
    "MinIO's default user is minioadmin; the lake URL holds a password"
)


def test_short_values_leave_ordinary_text_alone_and_long_ones_are_still_redacted():
    assert all(len(value) < MIN_SECRET_LEN for value in SHORT)
    redactor = Redactor(SHORT)
    assert redactor(PROSE) == PROSE
    # Where a short value stands as a credential, its shape still hides it.
    assert redactor("password=test") == f"password={MARK}"
    assert redactor("https://admin:test@db.internal/x") == f"https://{MARK}db.internal/x"
    assert redactor("Bearer test") == f"Bearer {MARK}"
    # A value of MIN_SECRET_LEN characters or more is a secret: replaced wherever it is.
    secret = "s3cr3t-" + "k" * (MIN_SECRET_LEN - 7)
    redactor.add(secret)
    assert redactor(f"la{secret}st {PROSE}") == f"la{MARK}st {PROSE}"


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_a_lake_with_test_keys_prints_drift_unmangled(
    tmp_path: Path, shared_datasets: Path, session_cache: Path
):
    db, extra = new_location(TEAM, tmp_path)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("MONITOR_DB", "MONITOR_LAKE_DATA")},
        **extra,
        # moto takes any key pair, and these are what a local MinIO or moto user types.
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_SESSION_TOKEN": "test",
        "PGPASSWORD": "test",
        "MONITOR_DB": db,
        "MONITOR_DATA_DIR": str(tmp_path / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "MONITOR_CACHE_DIR": str(session_cache),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    april = shared_datasets / "caste-bias" / "results" / "april"
    printed = _cli(env, "import", "caste-bias", str(april), "--snapshot", "gpt-4o-caste-study",
                   "--date", "2024-04-16")  # fmt: skip
    drift = _cli(env, "drift")
    printed += drift + _cli(env, "report", "--out", str(tmp_path / "report"))
    report = (tmp_path / "report" / "report.json").read_text()
    assert "drift: 0 flagged of 0 paired tests" in drift
    assert "over the 0 paired tests in this report" in json.loads(report)["fdr_note"]
    assert MARK not in printed and MARK not in report
