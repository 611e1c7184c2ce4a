"""No credential form reaches the store, exports, reports, logs or stderr — even when the
server echoes every header it receives (a real loopback server, tests/servers/echo.py).

Forms covered: an API key sent as Bearer, the same key base64-encoded, a password in the
base URL (``http://user:pass@host``, which the HTTP client sends as ``Authorization:
Basic base64(user:pass)``), an ``api-key`` query parameter, and Azure's ``api-key``
header. And: an authentication failure at the start-of-run probe fails the run with its
reason on stderr; it is not mistaken for a model without log-probabilities.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import duckdb
import pytest
from servers.echo import EchoServer

KEY = "sk-proj-Echo" + secrets.token_hex(12)
AZURE_KEY = "azkey" + secrets.token_hex(12)
USER, PASSWORD = "alice", "pw-" + secrets.token_hex(10)
QUERY_SECRET = "q" + secrets.token_hex(10)


def forms(secret: str) -> set[str]:
    raw = secret.encode()
    out = {secret, quote(secret, safe="")}
    for b in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        out |= {b.decode(), b.decode().rstrip("=")}
    return out


FORBIDDEN = set().union(
    *(forms(s) for s in (KEY, AZURE_KEY, PASSWORD, QUERY_SECRET, f"{USER}:{PASSWORD}"))
)


def leaks(text: str | bytes) -> list[str]:
    blob = text if isinstance(text, bytes) else text.encode()
    return sorted(f for f in FORBIDDEN if f.encode() in blob)


SNAPSHOTS = {
    "echo-chat": """kind = "openai-chat"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "m"
base_url_env = "ECHO_URL"
api_key_env = "ECHO_KEY"
[api]
max_retries = 0
""",
    "echo-completions": """kind = "openai-completions"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "m"
base_url_env = "ECHO_QUERY_URL"
api_key_env = "ECHO_KEY"
[api]
method = "completions-cll"
max_retries = 0
""",
    "echo-azure": """kind = "openai-chat"
[source]
type = "openai-api"
provider = "azure"
model = "deployment"
base_url_env = "ECHO_AZURE"
api_key_env = "ECHO_AZURE_KEY"
api_version = "2024-10-21"
[api]
max_retries = 0
""",
}


@pytest.fixture
def env(monitor_env: Path, tmp_path: Path):
    folder = tmp_path / "snapshots"
    folder.mkdir()
    for sid, body in SNAPSHOTS.items():
        (folder / f"{sid}.toml").write_text(
            f'id = "{sid}"\ndisplay_name = "{sid}"\n' + body, encoding="utf-8"
        )
    with EchoServer() as server:
        base = f"127.0.0.1:{server.port}"
        yield {
            **os.environ,
            "MONITOR_SNAPSHOTS_DIR": str(folder),
            "ECHO_KEY": KEY,
            "ECHO_URL": f"http://{USER}:{PASSWORD}@{base}/v1",
            "ECHO_QUERY_URL": f"http://{USER}:{PASSWORD}@{base}/v1?api-key={QUERY_SECRET}",
            "ECHO_AZURE": f"http://{base}",
            "ECHO_AZURE_KEY": AZURE_KEY,
            "NO_COLOR": "1",
        }


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_credential_form_survives_an_echoing_server(env, monitor_env: Path, tmp_path: Path):
    db = monitor_env / "monitor.duckdb"
    outputs: list[str] = []
    for sid in ("echo-chat", "echo-azure", "echo-completions"):
        proc = cli(env, "run", "-s", sid, "-b", "bhed-caste")
        outputs += [proc.stdout, proc.stderr]
        # The server did echo the credentials: they were there to leak.
        assert proc.returncode == 1, (sid, proc.stdout, proc.stderr)
        assert "401" in proc.stderr and "[REDACTED]" in proc.stderr, proc.stderr
        assert "falling back" not in proc.stderr  # a wrong key is not "no log-probs"
        assert f"failed {sid}" in proc.stderr  # the reason, not an empty table

    # The completions run opened a run before its first request failed: it is stored,
    # failed, with the (redacted) reason.
    runs = cli(env, "runs", "list", "--format", "json")
    [run] = json.loads(runs.stdout)
    assert run["snapshot_id"] == "echo-completions" and run["status"] == "failed"
    assert "401" in run["notes"] and "[REDACTED]" in run["notes"]
    shown = cli(env, "show", run["run_id"], "--format", "json")
    exported = cli(env, "export", run["run_id"], "--out", str(tmp_path / "exports"))
    reported = cli(env, "report", "--out", str(tmp_path / "report"))
    assert reported.returncode == 0, reported.stderr
    outputs += [p.stdout + p.stderr for p in (runs, shown, exported, reported)]

    for text in outputs:
        assert not leaks(text), leaks(text)
    files = [db, db.with_name(db.name + ".wal"), *sorted(tmp_path.rglob("*.*"))]
    for path in files:
        if path.is_file():
            assert not leaks(path.read_bytes()), (path, leaks(path.read_bytes()))
    # DuckDB compresses strings on disk: also read every table back as text.
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("SHOW TABLES").fetchall()]
        dump = "\n".join(str(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)
    assert "echo-completions" in dump and not leaks(dump), leaks(dump)
