"""The credentials canary: credentials written in every form a user could reach the tool
with, and every byte the tool produces scanned for them (raw, percent-encoded, base64).

Forms: a snapshot file's ``base_url`` with ``user:password@`` and each credential-like query
parameter (``api_key``, ``token``, ``sig``, ``key``, ``code``, ``auth``, ``access_token``);
the same in ``*_env`` variables (``base_url_env``, ``api_key_env``); a server that echoes
every header and the request target back (tests/servers/echo.py, loopback only); runs
whose stored manifests carry such URLs (two complete runs of one snapshot whose endpoints
differ, so that reports diff them), and a shard written by an older version whose manifest
still holds them, merged in.

Outputs scanned: stdout and stderr of every command (``run``, ``runs list``, ``show``,
``snapshots list``, ``export``, ``db merge``, ``db rebuild``, ``drift``, ``report``, each
with ``--format json`` where it has one), every table of every DuckDB file (the store, the
merged and the rebuilt one) read back as text, every export's Parquet read back as text
and its files' bytes, the history branch's checkout (``scripts/ci/history``), and the
reports (HTML, JSON, Markdown, the job summary).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from servers.echo import EchoServer
from test_secrets_echoed import forms
from test_store_support import make_exclusions, make_items, make_measures, make_run, make_score

from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO / "scripts" / "ci" / "history"
QUERY_KEYS = ("api_key", "token", "sig", "key", "code", "auth", "access_token")


def _secret(tag: str) -> str:
    return f"{tag}{secrets.token_hex(10)}"


def _credentials(tag: str) -> dict[str, str]:
    """A user, a password and one value per credential-like query key, all distinct."""
    return {
        "user": _secret(f"u{tag}"),
        "password": _secret(f"p{tag}"),
        **{k: _secret(f"{k[:3]}{tag}") for k in QUERY_KEYS},
    }


FILE = _credentials("f")  # written into a snapshot file
ENV = _credentials("e")  # in the environment variables a snapshot names
KEY = "sk-canary-" + secrets.token_hex(12)  # the API key ($CANARY_KEY)
STORED = [_credentials(f"s{i}") for i in range(3)]  # in manifests of runs written directly


def _url(host: str, c: dict[str, str]) -> str:
    query = "&".join(f"{k}={c[k]}" for k in QUERY_KEYS)
    return f"http://{c['user']}:{c['password']}@{host}/v1?{query}"


def _values(c: dict[str, str]) -> list[str]:
    return [*c.values(), f"{c['user']}:{c['password']}"]


FORBIDDEN = set().union(*(forms(v) for c in (FILE, ENV, *STORED) for v in _values(c)), forms(KEY))


def leaks(blob: str | bytes) -> list[str]:
    data = blob if isinstance(blob, bytes) else blob.encode()
    return sorted(f for f in FORBIDDEN if f.encode() in data)


def _store_text(path: Path) -> str:
    """Every table of a DuckDB file, read back as text (strings are compressed on disk)."""
    with duckdb.connect(str(path), read_only=True) as con:
        tables = [t for (t,) in con.execute("SHOW TABLES").fetchall()]
        return "\n".join(str(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)


def _cli(env: dict[str, str], *args: str, code: int | None = 0) -> str:
    """stdout, a blank line, then stderr of one command (its exit status checked)."""
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if code is not None:
        assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout + "\n" + proc.stderr


def _git(*args: str | Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [str(a) for a in args], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    return proc.stdout + proc.stderr


def _toy_runs(db: Path) -> None:
    """Two complete runs of one snapshot whose manifests name endpoints with credentials
    (a report diffs them under "What changed"), through the store's write API."""
    store = Store(db)
    items = make_items(12)
    for i, (run_id, salt) in enumerate((("toy-a", 0.0), ("toy-b", 0.5))):
        host = f"api{i}.example.invalid"  # the endpoint moved: "What changed" lists it
        run = make_run(run_id, started_at=datetime(2025, 4, 1 + i, 12, 0, tzinfo=UTC))
        run.snapshot_manifest = {
            **run.snapshot_manifest,
            "source": {"type": "openai-api", "base_url": _url(host, STORED[i])},
        }
        run.notes = f"endpoint {_url(host, STORED[i])}"
        with store.session():
            store.upsert_items(items)
            store.begin_run(run)
            store.add_scores(run_id, [make_score(it, salt) for it in items])
            store.add_exclusions(run_id, make_exclusions(2))
            store.finish_run(run_id, "complete", make_measures(), len(items), 2)
            store.add_validation(run_id, "results", True, {"checks": 1, "failed": []})


def _old_shard(path: Path) -> None:
    """A store written by a version without the write-boundary redaction: its manifest
    holds a credential URL verbatim (put there with SQL, as that version stored it)."""
    store = Store(path)
    items = make_items(6)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("toy-old", fingerprint="fp-old"))
        store.add_scores("toy-old", [make_score(it) for it in items])
        store.finish_run("toy-old", "complete", make_measures(), len(items), 0)
    manifest = json.dumps({"source": {"base_url": _url("old.example.invalid", STORED[2])}})
    with duckdb.connect(str(path)) as con:
        con.execute("UPDATE runs SET snapshot_manifest = ?, notes = ?", [manifest, manifest])


SNAPSHOT_FILE = """id = "canary-file"
display_name = "canary file"
kind = "openai-completions"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "m-file"
base_url = "{url}"
api_key_env = "CANARY_KEY"
[api]
method = "completions-cll"
max_retries = 0
"""
SNAPSHOT_ENV = """id = "canary-env"
display_name = "canary env"
kind = "openai-completions"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "m-env"
base_url_env = "CANARY_URL"
api_key_env = "CANARY_KEY"
[api]
method = "completions-cll"
max_retries = 0
"""
SNAPSHOT_CHAT = """id = "canary-chat"
display_name = "canary chat"
kind = "openai-chat"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "m"
base_url = "{url}"
api_key_env = "CANARY_KEY"
[api]
max_retries = 0
"""


@pytest.fixture
def canary(monitor_env: Path, tmp_path: Path):
    folder = tmp_path / "snapshots"  # the only place the credentials are allowed
    folder.mkdir()
    with EchoServer() as server:
        host = f"127.0.0.1:{server.port}"
        (folder / "canary-file.toml").write_text(SNAPSHOT_FILE.format(url=_url(host, FILE)))
        (folder / "canary-env.toml").write_text(SNAPSHOT_ENV)
        (folder / "canary-chat.toml").write_text(SNAPSHOT_CHAT.format(url=_url(host, FILE)))
        yield (
            folder,
            {
                **os.environ,
                "MONITOR_SNAPSHOTS_DIR": str(folder),
                "CANARY_KEY": KEY,
                "CANARY_URL": _url(host, ENV),
                "NO_COLOR": "1",
            },
        )


def test_no_credential_form_reaches_any_output(canary, monitor_env: Path, tmp_path: Path):
    started = time.monotonic()
    folder, env = canary
    db = monitor_env / "monitor.duckdb"
    out: list[str] = []

    # Runs against the echoing server: each fails (401) with the server's echo redacted.
    for sid in ("canary-file", "canary-env", "canary-chat"):
        text = _cli(env, "run", "-s", sid, "-b", "bhed-caste", code=1)
        assert "401" in text and "[REDACTED]" in text, text
        out.append(text)
    # A snapshot file holding credentials is accepted, with a warning naming the field.
    assert "warning: snapshot canary-file: source.base_url carries credentials" in out[0]
    assert "base_url_env" in out[0] and "userinfo" in out[0] and "query token" in out[0]
    assert "warning" not in out[1]  # the environment variable is the advised place

    _toy_runs(db)
    listed = _cli(env, "runs", "list", "--format", "json")
    out.append(listed)
    runs, _ = json.JSONDecoder().raw_decode(listed)  # stdout comes first
    ids = [r["run_id"] for r in runs]
    assert {"toy-a", "toy-b"} <= set(ids) and any(i.startswith("2") for i in ids), ids
    for run_id in ids:
        out.append(_cli(env, "show", run_id, "--format", "json"))
        out.append(_cli(env, "export", run_id, "--out", str(tmp_path / "exports")))
    out.append(_cli(env, "snapshots", "list", "--format", "json"))
    out.append(_cli(env, "snapshots", "list"))
    out.append(_cli(env, "drift", "--format", "json", "-s", "toy-model"))
    summary = tmp_path / "summary.md"
    out.append(_cli(env, "report", "--out", str(tmp_path / "report"), "--summary", str(summary)))
    report_json = (tmp_path / "report" / "report.json").read_text()
    # The endpoints were diffed (without their credentials).
    assert "api0.example.invalid" in report_json and "api1.example.invalid" in report_json

    # Merge (exports and a shard with credentials from an older version) and rebuild.
    _old_shard(tmp_path / "old-shard.duckdb")
    merged, rebuilt = tmp_path / "merged.duckdb", tmp_path / "rebuilt.duckdb"
    # Exit 1: the toy shard's scores fail the quality gate that merging runs (quarantined).
    merging = _cli(
        env,
        "db",
        "merge",
        "--db",
        str(merged),
        "--format",
        "json",
        str(tmp_path / "exports"),
        str(tmp_path / "old-shard.duckdb"),
        code=1,
    )
    assert "toy-old" in merging
    out.append(merging)  # fmt: skip
    out.append(_cli(env, "db", "rebuild", "--db", str(rebuilt), str(tmp_path / "exports")))
    out.append(_cli(env, "show", "toy-old", "--db", str(merged), "--format", "json"))

    # The history branch, as the nightly job writes it.
    remote = tmp_path / "history.git"
    genv = {
        **env,
        "HISTORY_REMOTE": f"file://{remote}",
        "HISTORY_BRANCH": "monitor-history",
        "BIAS_MONITOR": str(Path(sys.executable).parent / "bias-monitor"),
        "GITHUB_RUN_ID": "7",
    }
    out.append(_git("git", "init", "--quiet", "--bare", remote, env=genv))
    out.append(_git("bash", HISTORY, "restore", tmp_path / "h", tmp_path / "h.duckdb", env=genv))
    out.append(_git("bash", HISTORY, "append", tmp_path / "h", merged, env=genv))
    out.append(_git("bash", HISTORY, "push", tmp_path / "h", env=genv))
    out.append(_git("git", "--git-dir", remote, "log", "-p", "--all", env=genv))

    for text in out:
        assert not leaks(text), (leaks(text), text[:2000])
    stores = [db, merged, rebuilt]
    for path in stores:
        dump = _store_text(path)
        assert "example.invalid" in dump
        assert not leaks(dump), (path, leaks(dump))
    parquet = [p for p in tmp_path.rglob("*.parquet") if "history.git" not in p.parts]
    assert len(parquet) > 10, parquet  # the exports and the history checkout
    for path in parquet:
        text = str(pq.read_table(path).to_pylist())
        assert not leaks(text), (path, leaks(text))
    produced = [
        p
        for p in tmp_path.rglob("*")
        if p.is_file()
        and folder not in p.parents  # the inputs: the snapshot files, the old shard
        and p.name != "old-shard.duckdb"
        and "history.git" not in p.parts  # compressed; read through its checkout and log
    ]
    for path in produced:
        assert not leaks(path.read_bytes()), (path, leaks(path.read_bytes()))
    assert summary.read_text().strip()
    for name in ("report.html", "report.json", "report.md"):
        assert (tmp_path / "report" / name).is_file(), name
    # ~25 s on an idle 2-core machine; the bound only catches a run that hangs.
    assert time.monotonic() - started < 300
