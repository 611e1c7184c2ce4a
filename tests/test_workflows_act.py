"""The workflows themselves, run here with act (scripts/act-local): schedule, then a pull
request that adds a snapshot, then a manual dispatch's plan; and a night plus a pull request
on a team store (a DuckLake on the CI's lake servers).

Marked ``act`` (its own pytest session in .ci/run; minutes): real act, real jobs on this
host, the real image built with podman for the nightly's local model, a real bare git
repository as the history branch's remote. Needs root for podman (as CI has).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import _lake
import duckdb
import pytest
from _lake import new_location
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
            "SELECT run_id, snapshot_id, trigger, status, environment, metric FROM runs "
            "ORDER BY started_at"
        ).fetchall()
    finally:
        con.close()
    keys = ("run_id", "snapshot_id", "trigger", "status", "environment", "metric")
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
    # Two runs in the snapshot's shard: the pair benchmarks, then the choice questions
    # (MONITOR_QA_BENCHMARKS, a run of its own with its own metric).
    run, questions = runs(shard)
    assert (run["metric"], questions["metric"]) == ("cll", "mc-loglik")
    for r in (run, questions):
        assert r["snapshot_id"] == SMOLLM2 and r["trigger"] == "schedule"
        assert r["status"] == "complete"
        digest = json.loads(r["environment"])["ci"]["MONITOR_IMAGE_DIGEST"]
        assert digest.startswith("sha256:")  # scored inside the image, which named itself
    assert (state / "schedule" / "report" / "report.html").is_file()
    # Drift follows each kind along its own runs: on the first night neither has a baseline.
    drift = json.loads((state / "schedule" / "drift.json").read_text())
    assert {p["new_run_id"]: p["baseline_run_id"] for p in drift["pairs"]} == {
        run["run_id"]: None,
        questions["run_id"]: None,
    }

    # The history branch got one normal commit holding exactly those runs' exports ...
    remote = state / "history.git"
    subjects = subprocess.run(
        ["git", "--git-dir", str(remote), "log", "--format=%s", "monitor-history"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(subjects) == 1 and ": 2 run(s)" in subjects[0]
    checkout = tmp_path / "history"
    subprocess.run(
        ["git", "clone", "--quiet", "--branch", "monitor-history", str(remote), str(checkout)],
        check=True,
    )
    exports = sorted(p.parent.name for p in checkout.glob("runs/*/*/manifest.json"))
    assert exports == sorted([run["run_id"], questions["run_id"]])

    # ... from which one command rebuilds the store with the same scores, item for item.
    rebuilt = tmp_path / "rebuilt.duckdb"
    subprocess.run(
        [str(BIN / "bias-monitor"), "db", "rebuild", str(checkout), "--db", str(rebuilt)],
        check=True,
        capture_output=True,
    )
    for r in (run, questions):
        ours, shards = _run_rows(rebuilt, r["run_id"]), _run_rows(shard, r["run_id"])
        for table in ("items", "scores", "exclusions", "axis_measures"):
            assert ours[table] == shards[table], table


def test_pull_request_scores_only_the_added_snapshot(state, pull_request):
    log = pull_request.stdout
    store = state / "pull_request" / f"pr-{FIXTURE}.duckdb"
    stored = runs(store)
    new = [r for r in stored if r["trigger"] == "pull_request"]
    assert [r["snapshot_id"] for r in new] == [FIXTURE]  # scored: the added snapshot alone
    restored = [r for r in stored if r["trigger"] != "pull_request"]
    # its baseline, from history: the nightly's pair run and its question run
    assert [(r["snapshot_id"], r["metric"]) for r in restored] == [
        (SMOLLM2, "cll"),
        (SMOLLM2, "mc-loglik"),
    ]
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


# -- the reusable workflow from another repository (examples/consumer-repo) -------------

EXAMPLE = REPO / "examples" / "consumer-repo"
NOOP = REPO / ".github" / "act" / "noop"
REMOTE_ACTIONS = (
    "actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1",
    "actions/upload-artifact@bbbca2ddaa5d8feaa63e36b76fdaad77386f024f",
    "actions/download-artifact@3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c",
)


def consumer_repo(
    tmp_path: Path,
    snapshots: dict[str, str] | None = None,
    pull_request: dict[str, str] | None = None,
    size: str | None = None,
) -> Path:
    """The example consumer repository as a git repository of its own, plus this repository's
    reusable workflow; the caller's `uses:` is rewritten from the published workflow to that
    local copy (act runs a local reusable workflow), nothing else. ``snapshots`` replaces the
    example's snapshot files (name -> TOML text); ``pull_request`` adds snapshot files in a
    second commit, the pull request's head (its base is then ``HEAD~1``); ``size`` sets the
    caller's ``size`` input (``mini``: a cheap check)."""
    repo = tmp_path / "consumer"
    shutil.copytree(EXAMPLE, repo)
    workflows = repo / ".github" / "workflows"
    shutil.copy(REPO / ".github" / "workflows" / "bias-check.yml", workflows / "bias-check.yml")
    caller = workflows / "bias.yml"
    text, n = re.subn(
        r"uses: bias-monitor/bias-monitor/\.github/workflows/bias-check\.yml@\S+",
        "uses: ./.github/workflows/bias-check.yml",
        caller.read_text(),
    )
    assert n == 1, "the example's caller must use the published reusable workflow"
    if size is not None:
        text, n = re.subn(r"( +)benchmarks: (\S+)\n", rf"\g<0>\g<1>size: {size}\n", text)
        assert n == 1, "the example's caller names its benchmarks"
    caller.write_text(text)
    if snapshots is not None:
        for old in (repo / "snapshots").glob("*.toml"):
            old.unlink()
        for name, toml in snapshots.items():
            (repo / "snapshots" / name).write_text(toml)
    git = ["git", "-C", str(repo), "-c", "user.name=act", "-c", "user.email=act@localhost"]
    subprocess.run([*git, "init", "--quiet", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "consumer"], check=True)
    if pull_request is not None:
        for name, toml in pull_request.items():
            (repo / "snapshots" / name).write_text(toml)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "--quiet", "-m", "pull request"], check=True)
    # act names the repository after origin; the event's pull request comes from it, so the
    # comment job (same-repository pull requests only) runs, in dry-run mode.
    subprocess.run(
        [*git, "remote", "add", "origin", "https://github.com/example/consumer.git"], check=True
    )
    return repo


def act_consumer(repo: Path, out: Path, base: str = "HEAD") -> subprocess.CompletedProcess:
    out.mkdir(parents=True, exist_ok=True)

    def rev(name: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), "rev-parse", name], capture_output=True, text=True, check=True
        ).stdout.strip()

    sha = rev("HEAD")
    full = "example/consumer"
    pr = {
        "number": 7,
        "base": {"ref": "main", "sha": rev(base), "repo": {"full_name": full}},
        "head": {"ref": "model", "sha": sha, "repo": {"full_name": full}},
    }
    event = out / "event.json"
    event.write_text(
        json.dumps(
            {"action": "opened", "number": 7, "pull_request": pr, "repository": {"full_name": full}}
        )
    )
    mirror = os.environ.get("MONITOR_DATA_MIRROR") or str(REPO.parent / "shared" / "datasets")
    cache = os.environ.get("MONITOR_CACHE_DIR") or str(REPO / ".monitor-cache")
    cmd = [
        str(BIN / "act"),
        "pull_request",
        "-W",
        ".github/workflows/bias.yml",
        "-e",
        str(event),
        "-P",
        "ubuntu-latest=-self-hosted",
        "--env",
        f"MONITOR_ACT_BIAS_MONITOR={BIN / 'bias-monitor'}",
        "--env",
        f"MONITOR_ACT_SHARDS={out}",
        "--env",
        f"MONITOR_DATA_MIRROR={mirror}",
        "--env",
        f"MONITOR_CACHE_DIR={cache}",
    ]
    for action in REMOTE_ACTIONS:
        cmd += ["--local-repository", f"{action}={NOOP}"]
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, timeout=1200)
    (out / "act.log").write_text(proc.stdout + proc.stderr)
    return proc


def test_consumer_example_runs_green_and_posts_its_summary(tmp_path):
    proc = act_consumer(consumer_repo(tmp_path), tmp_path / "out")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, "\n".join(log.splitlines()[-60:])
    summary = (tmp_path / "out" / "summary.md").read_text()
    # Both the caller's snapshot and its shipped baseline were scored and compared.
    assert "my-finetune" in summary and "smollm2-135m-instruct-q4" in summary
    assert (tmp_path / "out" / "scored.txt").read_text().split() == [
        "my-finetune",
        "smollm2-135m-instruct-q4",
    ]
    assert "dry run: would comment on example/consumer#7" in log
    assert "Job succeeded" in log


def test_consumer_example_fails_when_its_snapshot_is_skipped(tmp_path):
    # A hub snapshot at a commit nobody has cached: its weights cannot be had offline (exit 3).
    unreachable = (REPO / "snapshots" / "gpt2.toml").read_text()
    unreachable = unreachable.replace('id = "gpt2"', 'id = "unreachable-model"').replace(
        "607a30d783dfa663caf39e06633721c8d4cfcd7e", "0" * 40
    )
    repo = consumer_repo(tmp_path, {"unreachable-model.toml": unreachable})
    proc = act_consumer(repo, tmp_path / "out")
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "\n".join(log.splitlines()[-60:])
    assert (tmp_path / "out" / "skipped.txt").read_text().split() == ["unreachable-model"]
    assert "unreachable-model not scored; the check fails" in log
    assert "**unreachable-model was not scored**" in (tmp_path / "out" / "summary.md").read_text()


def test_consumer_pull_request_that_redefines_its_baseline_fails_naming_the_file(tmp_path):
    """Issue 44: a pull request that adds a TOML under the shipped baseline's id (the
    candidate's weights, the baseline's display name) made the candidate its own baseline,
    and a regression passed. The baselines come from the base commit or the shipped folder:
    the check fails before scoring, naming the file."""
    candidate = (EXAMPLE / "snapshots" / "my-finetune.toml").read_text()
    shipped = (REPO / "snapshots" / f"{SMOLLM2}.toml").read_text()
    display = re.search(r"^display_name = .*$", shipped, re.M).group(0)
    redefined = (
        re.sub(r"^display_name = .*$", display, candidate, flags=re.M)
        .replace('id = "my-finetune"', f'id = "{SMOLLM2}"')
        .replace(f'baselines = ["{SMOLLM2}"]\n', "")
    )
    repo = consumer_repo(tmp_path, pull_request={f"{SMOLLM2}.toml": redefined})
    proc = act_consumer(repo, tmp_path / "out", base="HEAD~1")
    log = proc.stdout + proc.stderr
    assert proc.returncode != 0, "\n".join(log.splitlines()[-60:])
    assert (
        f"snapshots/{SMOLLM2}.toml: this pull request adds or changes the file of its "
        f"baseline {SMOLLM2}"
    ) in log
    assert "::group::score" not in log and "score my-finetune" not in log  # nothing scored
    assert "**Nothing was checked**" in (tmp_path / "out" / "summary.md").read_text()
    assert (tmp_path / "out" / "scored.txt").read_text() == ""


def test_release_builds_a_checked_wheel_and_sdist_up_to_the_push(state):
    # A manual run on a branch: everything before the push runs (the wheel, the sdist and
    # the image, built with podman under act); the push and both publishing steps are
    # skipped (no tag, no registry).
    proc = act("release", state)
    dist = state / "release" / "dist"
    wheel, sdist = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert [p.name for p in wheel] == ["bias_monitor-0.1.0-py3-none-any.whl"]
    assert [p.name for p in sdist] == ["bias_monitor-0.1.0.tar.gz"]
    assert proc.stdout.count("PASSED") >= 2  # twine check --strict, both files
    with zipfile.ZipFile(wheel[0]) as zf:
        names = zf.namelist()
        meta = zf.read("bias_monitor-0.1.0.dist-info/METADATA").decode()
    assert "monitor/report/templates/report.html.j2" in names or any(
        n.startswith("monitor/report/templates/") for n in names
    )
    assert "Requires-Python: <3.14,>=3.11" in meta or "Requires-Python: >=3.11,<3.14" in meta
    assert "Project-URL: Source," in meta
    assert re.search(
        r"image built: localhost/bias-monitor:release sha256:[0-9a-f]{64}", proc.stdout
    )
    assert "not pushed: a release pushes only from a v* tag" in proc.stdout
    assert "gh-action-pypi-publish" not in proc.stdout  # the pypi job did not run


# -- a team store: the nightly writes into a lake, the PR check reads it (issue 47, item 5) --

LAKE_NIGHT_VARS = "MONITOR_QA_BENCHMARKS=none MONITOR_SNAPSHOTS=smollm2-135m-instruct-q4"


def lake_runs(db: str, env: dict[str, str]) -> list[dict]:
    """``runs list --db LAKE --format json``, as a user reads the lake back."""
    proc = subprocess.run(
        [str(BIN / "bias-monitor"), "runs", "list", "--db", db, "--format", "json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def test_with_a_lake_the_nightly_writes_into_it_and_the_pr_check_reads_its_baseline(tmp_path):
    """The cheapest night that proves the lake path: SmolLM2 on bhed-caste, scored in the
    image (which holds the lake's extensions and gets a network to reach them), with
    MONITOR_DB a DuckLake on the CI's lake servers (PostgreSQL catalog, moto S3 data path,
    tests/_lake.py). Its run is in the lake; no shard, no history commit. Then the PR check,
    holding only a catalog role that can read, copies its baseline from the lake and writes
    nothing there."""
    if os.geteuid() != 0:
        pytest.skip("act runs of the nightly build the image with podman as root")
    db, lake_env = new_location("lake-postgres", tmp_path)  # skips (fails in CI) without servers
    state = tmp_path / "act-state"
    night = subprocess.run(
        ["bash", str(REPO / "scripts" / "act-local"), "schedule"],
        cwd=REPO,
        env={
            **os.environ,
            **lake_env,
            "MONITOR_DB": db,
            "ACT_STATE": str(state),
            "ACT_BIN": str(BIN / "act"),
            "ACT_VARS": LAKE_NIGHT_VARS,
        },
        capture_output=True,
        text=True,
        timeout=1800,
    )
    log = night.stdout + night.stderr
    (tmp_path / "schedule.log").write_text(log)
    assert night.returncode == 0, "\n".join(log.splitlines()[-60:])

    [run] = lake_runs(db, lake_env)
    assert (run["snapshot_id"], run["trigger"], run["status"]) == (SMOLLM2, "schedule", "complete")
    environment = run["environment"]
    environment = json.loads(environment) if isinstance(environment, str) else environment
    assert environment["ci"]["MONITOR_IMAGE_DIGEST"].startswith("sha256:")  # in the image
    assert environment["ci"]["origin"] == "nightly"
    assert f"runs added: {run['run_id']}" in log
    out = state / "schedule"
    assert not list(out.glob("*.duckdb")), "a shard was handed over"
    refs = subprocess.run(
        ["git", "--git-dir", str(state / "history.git"), "for-each-ref"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert refs == "", "the night committed to the history branch"
    drift = json.loads((out / "drift.json").read_text())
    assert [p["new_run_id"] for p in drift["pairs"]] == [run["run_id"]]
    report = json.loads((out / "report" / "report.json").read_text())
    assert "lake_snapshot" in report  # the report read the lake

    # The PR check: a catalog role that can only read (the lake's tables exist now).
    conninfo = db.removeprefix("ducklake:postgres:")
    reader = "reader_" + conninfo.rpartition("dbname=")[2]  # the lake's database is new
    as_reader = conninfo.replace("user=postgres", f"user={reader}")
    psql = _lake._psql()
    subprocess.run([psql, conninfo, "-q", "-c", f"CREATE ROLE {reader} LOGIN"], check=True)
    grants = f"GRANT USAGE ON SCHEMA public TO {reader}; " + (
        f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}"
    )
    subprocess.run([psql, conninfo, "-q", "-c", grants], check=True)
    read_only = {
        "MONITOR_DB_READ": f"ducklake:postgres:{as_reader}",
        "MONITOR_LAKE_DATA": lake_env["MONITOR_LAKE_DATA"],
        "AWS_ENDPOINT_URL": lake_env["AWS_ENDPOINT_URL"],
        "AWS_REGION": lake_env["AWS_REGION"],
        "AWS_ACCESS_KEY_ID_READ": lake_env["AWS_ACCESS_KEY_ID"],
        "AWS_SECRET_ACCESS_KEY_READ": lake_env["AWS_SECRET_ACCESS_KEY"],
    }
    assert f"user={reader}" in read_only["MONITOR_DB_READ"]
    pr = subprocess.run(
        ["bash", str(REPO / "scripts" / "act-local"), "pull_request"],
        cwd=REPO,
        env={**os.environ, **read_only, "ACT_STATE": str(state), "ACT_BIN": str(BIN / "act")},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    log = pr.stdout + pr.stderr
    (tmp_path / "pull_request.log").write_text(log)
    assert pr.returncode == 0, "\n".join(log.splitlines()[-60:])
    assert f"history: copied 1 run(s) of {FIXTURE} {SMOLLM2} from the team store" in log
    stored = runs(state / "pull_request" / f"pr-{FIXTURE}.duckdb")
    assert [(r["run_id"], r["trigger"]) for r in stored if r["snapshot_id"] == SMOLLM2] == [
        (run["run_id"], "schedule")
    ]  # the baseline: the nightly's run, from the lake
    assert [r["snapshot_id"] for r in stored if r["trigger"] == "pull_request"] == [FIXTURE]
    summary = (state / "pull_request" / f"{FIXTURE}.md").read_text()
    assert f"**baseline** {SMOLLM2}, run {run['run_id']}" in summary
    assert [r["run_id"] for r in lake_runs(db, lake_env)] == [run["run_id"]]  # nothing written
