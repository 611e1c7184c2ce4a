"""Baselines scored once (issue 46, item 2): a pull request's ``run`` reuses the snapshot's
latest complete run when the default branch wrote it and it is the same measurement, and
scores otherwise, saying which. Through the CLI, with the real SmolLM2, real files and a
real DuckDB store; the origin is read from GitHub Actions' own variables, as on a runner.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from monitor.provenance import detect_origin

pytestmark = pytest.mark.slow

SNAPSHOT = "smollm2-135m-instruct-q4"
# The smallest pair benchmark (121 items), without the control and the panel: seconds.
RUN = ("run", "-b", "bhed-religion", "--no-controls", "--no-panel", "--format", "json")


def github(root: Path, event: str, ref: str = "refs/heads/main") -> dict[str, str]:
    """What a GitHub Actions runner sets for ``event`` on ``ref`` (default branch main)."""
    payload = root / f"{event}.json"
    payload.write_text(json.dumps({"repository": {"default_branch": "main"}}))
    return {"GITHUB_EVENT_NAME": event, "GITHUB_REF": ref, "GITHUB_EVENT_PATH": str(payload)}


def cli(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    base.pop("MONITOR_RUN_ORIGIN", None)
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={
            **base,
            "MONITOR_DB": str(root / "monitor.duckdb"),
            "MONITOR_DATA_DIR": str(root / "datasets"),
            **(env or {}),
        },
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def stored(root: Path) -> list[tuple[str, str | None]]:
    """Every run of the store, oldest first: its id and recorded origin."""
    con = duckdb.connect(str(root / "monitor.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT run_id, json_extract_string(environment, '$.ci.origin') FROM runs "
            "ORDER BY started_at"
        ).fetchall()
    finally:
        con.close()
    return [(r, o) for r, o in rows]


@pytest.fixture(scope="module")
def default_branch_store(tmp_path_factory, session_cache, shared_datasets) -> Path:
    """A store holding one run written by a push to the default branch."""
    root = tmp_path_factory.mktemp("default-branch")
    env = {
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        **github(root, "push"),
    }
    (outcome,) = json.loads(cli(root, *RUN, env=env).stdout)
    assert outcome["status"] == "complete"
    return root


@pytest.fixture
def store(
    default_branch_store: Path, tmp_path: Path, monkeypatch, session_cache, shared_datasets
) -> Path:
    """A copy of the default branch's store, as a pull request's job downloads it."""
    shutil.copy(default_branch_store / "monitor.duckdb", tmp_path / "monitor.duckdb")
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(session_cache))
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(shared_datasets))
    return tmp_path


def test_a_pull_request_reuses_the_default_branch_run_until_told_to_score(store: Path):
    ((baseline, origin),) = stored(store)
    assert origin == "default-branch"
    pr = github(store, "pull_request", ref="refs/pull/7/merge")

    proc = cli(store, *RUN, env=pr)
    (outcome,) = json.loads(proc.stdout)
    assert stored(store) == [(baseline, "default-branch")]  # no new run
    assert outcome["status"] == "reused" and outcome["run_id"] == baseline
    assert outcome["reason"].startswith(f"reused run {baseline} (from default-branch, 20")
    assert f"{SNAPSHOT}: reused run {baseline} (from default-branch, " in proc.stderr
    assert {m["measure"] for m in outcome["measures"]} >= {"bias_rate"}
    assert outcome["n_scored"] == 121
    # The terminal table's line leads with the answer: which run, not "scored 121 items".
    table = cli(store, *RUN[:-2], env=pr).stdout
    [line] = [x for x in table.splitlines() if "121 items" in x]
    assert line.startswith(f"{outcome['reason']}: 121 items, not scored again; excluded "), line
    assert "scored 121" not in table and stored(store) == [(baseline, "default-branch")]

    # --no-reuse scores anyway; that run is the pull request's own, and the next pull
    # request's run does not trust it: the latest complete run is now untrusted, so it scores.
    forced = json.loads(cli(store, *RUN, "--no-reuse", env=pr).stdout)
    assert forced[0]["status"] == "complete" and forced[0]["run_id"] != baseline
    assert stored(store) == [(baseline, "default-branch"), (forced[0]["run_id"], "pull-request")]
    again = cli(store, *RUN, env=pr)
    assert json.loads(again.stdout)[0]["status"] == "complete"
    assert (
        f"scored {SNAPSHOT}: its latest complete run {forced[0]['run_id']} was written by "
        "pull-request; only nightly or default-branch runs are reused"
    ) in again.stderr
    assert len(stored(store)) == 3


def test_another_benchmark_version_is_scored_not_reused(store: Path):
    pr = github(store, "pull_request", ref="refs/pull/7/merge")
    proc = cli(store, *RUN, "--errata", "none", env=pr)  # the raw files: other versions
    (outcome,) = json.loads(proc.stdout)
    assert outcome["status"] == "complete"
    assert "differs in benchmark versions" in proc.stderr
    assert len(stored(store)) == 2


def test_origin_is_read_from_the_github_event(tmp_path: Path):
    assert detect_origin({}) == "local"
    assert detect_origin(github(tmp_path, "schedule")) == "nightly"
    assert detect_origin(github(tmp_path, "push")) == "default-branch"
    assert detect_origin(github(tmp_path, "workflow_dispatch")) == "default-branch"
    assert detect_origin(github(tmp_path, "push", ref="refs/heads/feature")) == "branch"
    assert detect_origin(github(tmp_path, "pull_request", ref="refs/heads/main")) == (
        "pull-request"
    )
    assert detect_origin(github(tmp_path, "merge_group")) == "pull-request"
    # Without the payload the default branch is unknown: not trusted.
    assert detect_origin({"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main"}) == (
        "branch"
    )
    assert detect_origin({"MONITOR_RUN_ORIGIN": "nightly"}) == "nightly"
    with pytest.raises(ValueError, match="unknown run origin 'main'"):
        detect_origin({"MONITOR_RUN_ORIGIN": "main"})


def test_an_unknown_origin_is_a_usage_error(tmp_path: Path):
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *RUN, "--origin", "trusted"],
        capture_output=True,
        text=True,
        env={**os.environ, "MONITOR_DB": str(tmp_path / "m.duckdb")},
    )
    assert proc.returncode == 2
    assert "unknown run origin 'trusted'" in proc.stderr
    assert not (tmp_path / "m.duckdb").exists()


def test_migration_6_marks_scheduled_runs_as_the_nightlys(tmp_path: Path):
    """A store written before origins were recorded: its scheduled runs become the
    nightly's (GitHub schedules run on the default branch only); others stay unmarked."""
    from datetime import UTC, datetime

    from monitor.jobs.reuse import run_origin
    from monitor.records import RunRecord
    from monitor.store import codec, migrate
    from monitor.store.db import Store

    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as con:
        migrate.apply_migrations(con, "old", upto=5)
        for run_id, trigger in (("nightly-run", "schedule"), ("pr-run", "pull_request")):
            record = RunRecord(
                run_id=run_id, snapshot_id=SNAPSHOT, snapshot_kind="hf-causal",
                snapshot_revision="r", snapshot_manifest={}, metric="cll", metric_version="3",
                benchmarks=["bhed-religion"], dataset_versions={}, fingerprint="fp",
                trigger=trigger, started_at=datetime(2026, 11, 1, tzinfo=UTC),
                environment={"ci": {"GITHUB_EVENT_NAME": trigger}, "python": "3.11"},
            )  # fmt: skip
            params = codec.run_params(record)
            con.execute(
                f"INSERT INTO runs ({', '.join(params)}) VALUES ({', '.join('?' * len(params))})",
                list(params.values()),
            )
    store = Store(path)
    nightly, pr = store.get_run("nightly-run"), store.get_run("pr-run")
    assert store.schema_version >= 6
    assert nightly["environment"] == {
        "ci": {"GITHUB_EVENT_NAME": "schedule", "origin": "nightly"},
        "python": "3.11",
    }
    assert pr["environment"] == {"ci": {"GITHUB_EVENT_NAME": "pull_request"}, "python": "3.11"}
    assert (run_origin(nightly), run_origin(pr)) == ("nightly", "local")
