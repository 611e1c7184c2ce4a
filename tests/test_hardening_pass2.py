"""Issue 27's findings 2-9, each through the command a user types (a real CLI subprocess,
real DuckDB files, a real loopback server for the API cases)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from servers.echo import EchoServer
from test_store_support import make_exclusions, make_items, make_measures, make_run, make_score

from monitor.store.db import Store


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env={**env, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def one_line_refusal(proc: subprocess.CompletedProcess) -> str:
    """Exit 2, one ``error:`` line on stderr (after any progress lines), no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == errors[0], proc.stderr
    return errors[0]


# -- finding 2: quality judges finished runs only -----------------------------------------


@pytest.mark.parametrize("status", ["running", "failed", "interrupted"])
def test_quality_refuses_an_unfinished_run_and_changes_nothing(monitor_env: Path, status):
    db = monitor_env / "monitor.duckdb"
    store = Store(db)
    items = make_items(5)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("r1"))
        store.add_scores("r1", [make_score(i) for i in items[:2]])
        if status != "running":
            store.set_status("r1", status, "the reason it stopped")
    before = duckdb.connect(str(db), read_only=True)
    row_before = before.execute("SELECT status, notes FROM runs").fetchall()
    before.close()

    proc = cli(dict(os.environ), "quality", "r1")
    assert f"run r1 is {status}; quality judges finished runs only" in one_line_refusal(proc)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT status, notes FROM runs").fetchall() == row_before
        assert con.execute("SELECT count(*) FROM validations").fetchone() == (0,)


def test_quality_still_judges_a_complete_run(monitor_env: Path):
    store = Store(monitor_env / "monitor.duckdb")
    items = make_items(5)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("r1"))
        store.add_scores("r1", [make_score(i) for i in items])
        store.add_exclusions("r1", make_exclusions(1))
        store.finish_run("r1", "complete", make_measures(), 5, 1)
    proc = cli(dict(os.environ), "quality", "r1", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    assert json.loads(proc.stdout)["run_id"] == "r1"


# -- finding 3: an import killed mid-way is finished by importing again -------------------


def test_an_import_killed_before_its_gate_is_finished_by_importing_again(
    monitor_env: Path, shared_datasets: Path, tmp_path: Path
):
    env = dict(os.environ)
    folder = shared_datasets / "caste-bias" / "results" / "april"
    args = ("import", "caste-bias", str(folder), "--snapshot", "s", "--date", "2025-04-15")
    first = cli(env, *args, "--format", "json")
    assert first.returncode == 0, first.stderr
    db = monitor_env / "monitor.duckdb"
    with duckdb.connect(str(db)) as con:
        [(run_id, n_scores)] = con.execute(
            "SELECT run_id, (SELECT count(*) FROM scores) FROM runs"
        ).fetchall()
        # What kill -9 between the import's one write transaction and its gate leaves
        # (the rows, the run still running, no measures, no verdict).
        con.execute("DELETE FROM axis_measures")
        con.execute("DELETE FROM validations")
        con.execute("UPDATE runs SET status = 'running', finished_at = NULL")

    again = cli(env, *args)
    assert again.returncode == 0, (again.stdout, again.stderr)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchall() == [("complete",)]
        assert con.execute("SELECT count(*) FROM scores").fetchone() == (n_scores,)
        assert con.execute("SELECT count(*) FROM axis_measures").fetchone()[0] > 0
        assert con.execute("SELECT count(*) FROM validations").fetchone() == (1,)
    exported = cli(env, "export", run_id, "--out", str(tmp_path / "exports"))
    assert exported.returncode == 0, exported.stderr
    # A third import finds it complete: refused as before, nothing written.
    third = cli(env, *args)
    assert third.returncode == 2 and "already in the store" in third.stderr


# -- findings 4 (malformed base_url), 5 (no scheme), 7 (query), 8 (endpoint) -----------------

API_SNAPSHOT = """id = "{sid}"
display_name = "{sid}"
kind = "{kind}"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "m"
base_url_env = "HARDEN_URL"
api_key_env = "HARDEN_KEY"
[api]
max_retries = 0
{extra}
"""


@pytest.fixture
def api_env(monitor_env: Path, tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "snapshots"
    folder.mkdir()
    for sid, kind, extra in (
        ("h-chat", "openai-chat", ""),
        ("h-completions", "openai-completions", 'method = "completions-cll"'),
    ):
        (folder / f"{sid}.toml").write_text(API_SNAPSHOT.format(sid=sid, kind=kind, extra=extra))
    return {**os.environ, "MONITOR_SNAPSHOTS_DIR": str(folder), "HARDEN_KEY": "sk-hard-0123456"}


@pytest.mark.parametrize(
    "url",
    [
        "user:pw-secret-1@127.0.0.1/v1",  # finding 5: no scheme, userinfo
        "127.0.0.1:8000/v1",
        "ftp://127.0.0.1/v1",
        "http://127.0.0.1:abc/v1",  # finding 4: malformed port / host
        "http://[::1/v1",
        "http://127.0.0.1:99999/v1",
        "http://user:pw-secret-1/v1",  # the password where a port should be
    ],
)
@pytest.mark.parametrize("sid", ["h-chat", "h-completions"])
def test_a_base_url_that_is_not_an_http_url_is_refused_in_one_line(api_env, url, sid):
    proc = cli({**api_env, "HARDEN_URL": url}, "run", "-s", sid, "-b", "bhed-caste")
    message = one_line_refusal(proc)
    assert "$HARDEN_URL" in message and "https://host" in message, message
    assert "pw-secret-1" not in proc.stdout + proc.stderr
    runs = cli(api_env, "runs", "list", "--format", "json")
    assert json.loads(runs.stdout or "[]") == []  # nothing stored, no note holding the URL


@pytest.mark.parametrize(
    ("sid", "path"), [("h-chat", "/v1/chat/completions"), ("h-completions", "/tokenizer_info")]
)
def test_a_base_url_query_stays_after_the_request_path(api_env, sid, path):
    """The echo server quotes the request target: the query comes after the path."""
    with EchoServer() as server:
        url = f"http://127.0.0.1:{server.port}/v1?token=tok-secret-77&tenant=t1"
        proc = cli({**api_env, "HARDEN_URL": url}, "run", "-s", sid, "-b", "bhed-caste")
    assert proc.returncode == 1 and "401" in proc.stderr, proc.stderr
    sent = re.findall(r"You sent (GET|POST) (\S+)", proc.stderr)
    assert sent, proc.stderr
    for _, target in sent:
        assert target.startswith(f"{path}?"), target
        assert "tenant=t1" in target and "token=[REDACTED]" in target, target
    assert "tok-secret-77" not in proc.stderr


def test_a_run_against_another_endpoint_does_not_resume_a_failed_one(api_env):
    ids = []
    for _ in range(2):
        with EchoServer() as server:  # a new server, a new port: another endpoint
            env = {**api_env, "HARDEN_URL": f"http://127.0.0.1:{server.port}/v1"}
            proc = cli(env, "run", "-s", "h-completions", "-b", "bhed-caste")
        assert proc.returncode == 1 and "401" in proc.stderr, proc.stderr
        assert "resum" not in proc.stderr.lower(), proc.stderr
    runs = json.loads(cli(api_env, "runs", "list", "--format", "json").stdout)
    ids = [r["run_id"] for r in runs]
    assert len(ids) == 2, runs


# -- finding 6: a shard's ids must be ids the tool would make --------------------------------


@pytest.mark.parametrize(
    ("run_id", "snapshot_id"),
    [("../../../../tmp/x", "toy-model"), ("r1", "<script>"), ("r 1", "toy-model")],
)
def test_merge_refuses_a_shard_with_an_id_the_tool_would_not_make(
    monitor_env: Path, tmp_path: Path, run_id, snapshot_id
):
    shard = tmp_path / "shard.duckdb"
    store = Store(shard)
    items = make_items(4)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run(run_id, snapshot_id=snapshot_id))
        store.add_scores(run_id, [make_score(i) for i in items])
        store.finish_run(run_id, "complete", make_measures(), 4, 0)
    target = tmp_path / "target.duckdb"
    proc = cli(dict(os.environ), "db", "merge", "--db", str(target), str(shard))
    message = one_line_refusal(proc)
    assert "the tool would never make" in message and "nothing was merged" in message
    assert "<script>" not in message or "snapshot_id" in message
    if target.exists():
        with duckdb.connect(str(target), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


# -- finding 9: Markdown for PR comments has no live mention or bare link ---------------------


def test_markdown_report_neutralises_mentions_and_bare_urls(monitor_env: Path, tmp_path: Path):
    store = Store(monitor_env / "monitor.duckdb")
    items = make_items(5)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("r1"))
        store.add_scores("r1", [make_score(i) for i in items])
        store.finish_run(
            "r1", "quarantined", make_measures(), 5, 0,
            notes="ping @someone, @org/team: https://example.invalid/x or www.example.invalid",
        )  # fmt: skip
    summary = tmp_path / "summary.md"
    proc = cli(dict(os.environ), "report", "--out", str(tmp_path / "r"), "--summary", str(summary))
    assert proc.returncode == 0, proc.stderr
    for text in ((tmp_path / "r" / "report.md").read_text(), summary.read_text()):
        [line] = [line for line in text.splitlines() if "someone" in line]  # still readable
        assert "org/team" in line and "example.invalid/x" in line, line
        assert not re.search(r"@[\w-]", line), line  # no mention GitHub would resolve
        assert not re.search(r"https?://|www\.", line), line  # no autolink


# -- finding 4: one line (exit 2), not a traceback, for each bad input --------------------


def test_a_deeply_nested_snapshot_file_is_one_line(monitor_env: Path, tmp_path: Path):
    folder = tmp_path / "snapshots"
    folder.mkdir()
    (folder / "deep.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    proc = cli({**os.environ, "MONITOR_SNAPSHOTS_DIR": str(folder)}, "snapshots", "list")
    assert "deep.toml is nested too deeply" in one_line_refusal(proc)


def test_a_store_with_a_damaged_data_block_is_one_line(monitor_env: Path, tmp_path: Path):
    """The header intact, one 4 KiB block overwritten: DuckDB notices the checksum only
    when that block is read (here by ``export``). Blocks are tried 256 KiB apart until one
    holds data the export reads."""
    import shutil

    good = tmp_path / "good.duckdb"
    store = Store(good)
    items = make_items(3000)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("r1"))
        store.add_scores("r1", [make_score(i) for i in items])
        store.finish_run("r1", "complete", make_measures(), 3000, 0)
    db = monitor_env / "monitor.duckdb"
    refused = []
    for offset in range(12 * 1024, good.stat().st_size, 256 * 1024):
        shutil.copy(good, db)
        with db.open("r+b") as fh:
            fh.seek(offset)
            fh.write(b"\xab" * 4096)
        proc = cli(dict(os.environ), "export", "r1", "--out", str(tmp_path / f"ex{offset}"))
        if proc.returncode != 0:
            message = one_line_refusal(proc)
            if "cannot open database" not in message:  # a damaged catalog: found at open
                refused.append(message)
                break
    assert refused and "DuckDB store cannot be used" in refused[0], refused


def _export(tmp_path: Path) -> Path:
    from monitor.store.export import export_run

    store = Store(tmp_path / "src.duckdb")
    items = make_items(4)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("r1"))
        store.add_scores("r1", [make_score(i) for i in items])
        store.finish_run("r1", "complete", make_measures(), 4, 0)
    return export_run(store, "r1", tmp_path / "exports")


@pytest.mark.parametrize(
    "damage",
    [
        lambda m: {**m, "format_version": [1]},
        lambda m: {**m, "tables": {**m["tables"], "scores": None}},
        None,  # not UTF-8
    ],
    ids=["format_version-list", "scores-null", "not-utf8"],
)
@pytest.mark.parametrize("command", ["merge", "rebuild"])
def test_a_damaged_export_manifest_is_one_line(monitor_env, tmp_path, damage, command):
    folder = _export(tmp_path)
    manifest = folder / "manifest.json"
    if damage is None:
        manifest.write_bytes(b'{"format": "\xff\xfe"}')
    else:
        manifest.write_text(json.dumps(damage(json.loads(manifest.read_text()))))
    target = str(tmp_path / "target.duckdb")
    source = str(folder) if command == "merge" else str(tmp_path / "exports")
    message = one_line_refusal(cli(dict(os.environ), "db", command, "--db", target, source))
    assert "manifest.json" in message, message


def _with_order(raw: bytes, order: str) -> bytes:
    """history.json with the first run's ``order`` written as ``order`` (raw JSON)."""
    data = json.loads(raw)
    data["runs"][0]["order"] = "__order__"
    return json.dumps(data).replace('"__order__"', order).encode()


@pytest.mark.parametrize(
    "edit",
    [
        lambda raw: _with_order(raw, '"abc"'),
        lambda raw: _with_order(raw, "1e400"),
        lambda raw: b"\xff" + raw,
    ],
    ids=["order-text", "order-1e400", "not-utf8"],
)
def test_a_damaged_history_file_is_one_line(monitor_env, shared_datasets, tmp_path, edit):
    import shutil

    folder = tmp_path / "history"
    shutil.copytree(shared_datasets / "caste-bias" / "history", folder)
    path = folder / "history.json"
    path.write_bytes(edit(path.read_bytes()))
    proc = cli(dict(os.environ), "import", "caste-bias", str(folder), "--snapshot", "s")
    assert "history.json" in one_line_refusal(proc)


@pytest.mark.parametrize("damage", ["not-utf8", "huge-field"])
def test_a_damaged_study_csv_is_one_line(monitor_env, shared_datasets, tmp_path, damage):
    import shutil

    folder = tmp_path / "april"
    shutil.copytree(shared_datasets / "caste-bias" / "results" / "april", folder)
    path = folder / "Caste_results.csv"
    raw = path.read_bytes()
    head, _, rest = raw.partition(b"\n")
    if damage == "not-utf8":
        path.write_bytes(head + b"\n\xff\xfe" + rest)
    else:
        path.write_bytes(head + b'\n"' + b"x" * (200 * 1024) + b'"' + rest)
    proc = cli(dict(os.environ), "import", "caste-bias", str(folder), "--snapshot", "s",
               "--date", "2025-04-15")  # fmt: skip
    assert "Caste_results.csv" in one_line_refusal(proc)


@pytest.fixture
def full_disk(tmp_path: Path):
    """A 12 KiB tmpfs: a real full disk (needs root to mount; skipped where that fails)."""
    mount = tmp_path / "full"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12k", "tmpfs", str(mount)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (not root)")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_an_export_onto_a_full_disk_is_one_line_and_leaves_nothing(monitor_env, full_disk):
    store = Store(monitor_env / "monitor.duckdb")
    items = make_items(2000)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("r1"))
        store.add_scores("r1", [make_score(i) for i in items])
        store.finish_run("r1", "complete", make_measures(), 2000, 0)
    proc = cli(dict(os.environ), "export", "r1", "--out", str(full_disk / "ex"))
    assert "no space left on the device" in one_line_refusal(proc)
    assert list((full_disk / "ex").iterdir()) == []  # no partial export left behind
    assert cli(dict(os.environ), "show", "r1").returncode == 0  # the store is intact
