"""Baselines scored once, under act (issue 46, item 2): the consumer example's check runs on
a push to main (origin default-branch), which scores its snapshot and baseline and keeps its
store; a pull request then starts from that store and scores nothing new: the store's runs
are the same ones, and the summary says "reused".

On GitHub the pull request's job downloads main's newest ``bias-check-store`` artifact (the
artifacts API; act has none), so here the test hands that store over by path
(``MONITOR_ACT_BASELINE_STORE``), the one step act cannot run as GitHub does. Marked
``act`` like tests/test_workflows_act.py (minutes: two act runs of the example).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import duckdb
import pytest
from test_workflows_act import BIN, NOOP, REMOTE_ACTIONS, REPO, SMOLLM2, consumer_repo

pytestmark = pytest.mark.act

FULL = "example/consumer"


def act_event(
    repo: Path, out: Path, event: str, payload: dict, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """The example's caller workflow under act for ``event`` with ``payload``; its check
    job's files (summary, store, lists) land in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "event.json"
    path.write_text(json.dumps(payload))
    mirror = os.environ.get("MONITOR_DATA_MIRROR") or str(REPO.parent / "shared" / "datasets")
    cache = os.environ.get("MONITOR_CACHE_DIR") or str(REPO / ".monitor-cache")
    cmd = [
        str(BIN / "act"), event, "-W", ".github/workflows/bias.yml", "-e", str(path),
        "-P", "ubuntu-latest=-self-hosted",
        "--env", f"MONITOR_ACT_BIAS_MONITOR={BIN / 'bias-monitor'}",
        "--env", f"MONITOR_ACT_SHARDS={out}",
        "--env", f"MONITOR_DATA_MIRROR={mirror}",
        "--env", f"MONITOR_CACHE_DIR={cache}",
    ]  # fmt: skip
    for name, value in (env or {}).items():
        cmd += ["--env", f"{name}={value}"]
    for action in REMOTE_ACTIONS:
        cmd += ["--local-repository", f"{action}={NOOP}"]
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=1200)
    (out / "act.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
    return proc


def runs(db: Path) -> list[tuple[str, str, str | None]]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "SELECT run_id, snapshot_id, json_extract_string(environment, '$.ci.origin') "
            "FROM runs ORDER BY started_at"
        ).fetchall()
    return [(r, s, o) for r, s, o in rows]


def test_a_pull_request_after_main_reuses_mains_runs(tmp_path):
    repo = consumer_repo(tmp_path, size="mini")  # cheap: the reuse is what is tested
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    repository = {"full_name": FULL, "default_branch": "main"}
    main = tmp_path / "main"
    act_event(
        repo, main, "push", {"ref": "refs/heads/main", "after": sha, "repository": repository}
    )
    written = runs(main / "monitor.duckdb")
    assert sorted(s for _, s, _ in written) == ["my-finetune", SMOLLM2]
    assert {o for *_, o in written} == {"default-branch"}
    assert (
        "Runs: `my-finetune` scored; `smollm2-135m-instruct-q4` scored."
        in (main / "summary.md").read_text()
    )

    pr = {
        "number": 7,
        "base": {"ref": "main", "sha": sha, "repo": {"full_name": FULL}},
        "head": {"ref": "model", "sha": sha, "repo": {"full_name": FULL}},
    }
    pull = tmp_path / "pull-request"
    proc = act_event(
        repo,
        pull,
        "pull_request",
        {"action": "opened", "number": 7, "pull_request": pr, "repository": repository},
        {"MONITOR_ACT_BASELINE_STORE": str(main / "monitor.duckdb")},
    )
    assert "starting from the default branch's store (act)" in proc.stdout
    # No new run, of the baseline or of the unchanged snapshot: the store holds main's.
    assert runs(pull / "monitor.duckdb") == written
    baseline = next(r for r, s, _ in written if s == SMOLLM2)
    summary = (pull / "summary.md").read_text()
    assert f"`{SMOLLM2}` reused run {baseline} (from default-branch, " in summary
    assert "vs smollm2-135m-instruct-q4" in summary  # still compared and reported
    assert "dry run: would comment on example/consumer#7" in proc.stdout + proc.stderr
