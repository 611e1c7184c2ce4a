"""The workflows themselves, run here with act (scripts/act-local): schedule, then a pull
request that adds a snapshot, then a manual dispatch's plan.

Marked ``act`` (its own pytest session in .ci/run; minutes): real act, real jobs on this
host, the real image built with podman for the nightly's local model, a real bare git
repository as the history branch's remote. Needs root for podman (as CI has).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from test_store_export_merge import _run_rows

pytestmark = pytest.mark.act

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FIXTURE = "smollm2-pr-fixture"
SMOLLM2 = "smollm2-135m-instruct-q4"


def act(event: str, state: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "act-local"), event],
        cwd=REPO,
        env={**os.environ, "ACT_STATE": str(state), "ACT_BIN": str(BIN / "act")},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    (state / f"{event}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-60:])
        raise AssertionError(f"act {event}: exit {proc.returncode}\n{tail}")
    return proc


def runs(db: Path) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT run_id, snapshot_id, trigger, status, environment FROM runs ORDER BY run_id"
        ).fetchall()
    finally:
        con.close()
    keys = ("run_id", "snapshot_id", "trigger", "status", "environment")
    return [dict(zip(keys, r, strict=True)) for r in rows]


@pytest.fixture(scope="module")
def state(tmp_path_factory) -> Path:
    if os.geteuid() != 0:
        pytest.skip("act runs of the nightly build the image with podman as root")
    return tmp_path_factory.mktemp("act-state")


@pytest.fixture(scope="module")
def nightly(state) -> subprocess.CompletedProcess:
    return act("schedule", state)


@pytest.fixture(scope="module")
def pull_request(state, nightly) -> subprocess.CompletedProcess:
    return act("pull_request", state)  # after the nightly: its baseline is in the history


def test_nightly_scores_in_the_container_and_appends_to_the_history(state, nightly, tmp_path):
    log = nightly.stdout
    assert "secret OPENAI_API_KEY is not set; gpt-4o-2024-08-06 was not scored" in log
    shard = state / "schedule" / f"{SMOLLM2}.duckdb"
    (run,) = runs(shard)
    assert run["snapshot_id"] == SMOLLM2 and run["trigger"] == "schedule"
    assert run["status"] == "complete"
    digest = json.loads(run["environment"])["ci"]["MONITOR_IMAGE_DIGEST"]
    assert digest.startswith("sha256:")  # scored inside the image, which named itself
    assert (state / "schedule" / "report" / "report.html").is_file()

    # The history branch got one normal commit holding exactly that run's export ...
    remote = state / "history.git"
    subjects = subprocess.run(
        ["git", "--git-dir", str(remote), "log", "--format=%s", "monitor-history"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(subjects) == 1 and ": 1 run(s)" in subjects[0]
    checkout = tmp_path / "history"
    subprocess.run(
        ["git", "clone", "--quiet", "--branch", "monitor-history", str(remote), str(checkout)],
        check=True,
    )
    exports = sorted(p.parent.name for p in checkout.glob("runs/*/*/manifest.json"))
    assert exports == [run["run_id"]]

    # ... from which one command rebuilds the store with the same scores, item for item.
    rebuilt = tmp_path / "rebuilt.duckdb"
    subprocess.run(
        [str(BIN / "bias-monitor"), "db", "rebuild", str(checkout), "--db", str(rebuilt)],
        check=True,
        capture_output=True,
    )
    ours, shards = _run_rows(rebuilt, run["run_id"]), _run_rows(shard, run["run_id"])
    for table in ("items", "scores", "exclusions", "axis_measures"):
        assert ours[table] == shards[table], table


def test_pull_request_scores_only_the_added_snapshot(state, pull_request):
    log = pull_request.stdout
    store = state / "pull_request" / f"pr-{FIXTURE}.duckdb"
    stored = runs(store)
    new = [r for r in stored if r["trigger"] == "pull_request"]
    assert [r["snapshot_id"] for r in new] == [FIXTURE]  # scored: the added snapshot alone
    restored = [r for r in stored if r["trigger"] != "pull_request"]
    assert [r["snapshot_id"] for r in restored] == [SMOLLM2]  # its baseline, from history
    report = (state / "pull_request" / f"{FIXTURE}.md").read_text()
    assert FIXTURE in report and SMOLLM2 in report
    # Same weights as the baseline: no regression, so the check passed; the comment job
    # ran in dry-run mode (no GitHub under act) against the fixture's PR number.
    assert "dry run: would POST /issues/9009/comments" in log
    assert "plan: changed: 1" in log


def test_manual_dispatch_plans_the_snapshots_it_was_given(state, nightly):
    # The dispatch input (gemma-3-270m-q4) wins over the MONITOR_SNAPSHOTS variable that
    # act-local sets for the scheduled run (SmolLM2 and GPT-4o). Only the plan job runs.
    proc = act("workflow_dispatch", state)
    assert 'local=["gemma-3-270m-q4"]' in proc.stdout
    assert "api=[]" in proc.stdout
