"""``bias-monitor ci try`` prepares the user's repository for act without changing it
(quick: ``--print``); tests/test_weights_act.py runs it for real under act."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "consumer-repo"


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def consumer(tmp_path: Path) -> Path:
    repo = tmp_path / "consumer"
    shutil.copytree(EXAMPLE, repo)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "--quiet", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "consumer"], check=True)
    return repo


def test_print_shows_the_act_command_for_a_copy_pointed_at_this_checkout(tmp_path):
    repo = consumer(tmp_path)
    before = (repo / ".github" / "workflows" / "bias.yml").read_text()
    (repo / "snapshots" / "uncommitted.txt").write_text("not committed yet\n")
    work = tmp_path / "work"
    proc = cli("ci", "try", "--print", "--work", str(work), cwd=repo)
    assert proc.returncode == 0, proc.stderr
    copy = work / "repo"
    line = proc.stdout.strip()
    assert (
        line.startswith(f"cd {copy} && ") and " pull_request -W .github/workflows/bias.yml " in line
    )
    assert "-P ubuntu-latest=-self-hosted" in line
    assert f"--env MONITOR_ACT_BIAS_MONITOR={work / 'out' / 'bias-monitor'}" in line
    noop = REPO / ".github" / "act" / "noop"
    assert f"actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1={noop}" in line
    # The copy calls this checkout's workflow; the user's repository is unchanged.
    caller = (copy / ".github" / "workflows" / "bias.yml").read_text()
    assert "uses: ./.github/workflows/bias-monitor-try.yml" in caller
    assert "bias-monitor/bias-monitor/" not in caller
    assert (copy / ".github" / "workflows" / "bias-monitor-try.yml").read_bytes() == (
        REPO / ".github" / "workflows" / "bias-check.yml"
    ).read_bytes()
    assert (copy / "snapshots" / "uncommitted.txt").is_file()  # the working tree, as it is
    assert (repo / ".github" / "workflows" / "bias.yml").read_text() == before
    assert not (repo / ".github" / "workflows" / "bias-monitor-try.yml").exists()
    # The stand-in for the image runs this checkout's monitor.
    version = subprocess.run(
        [str(work / "out" / "bias-monitor"), "snapshots", "list", "--format", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MONITOR_SNAPSHOTS_DIR": str(copy / "snapshots")},
    )
    assert version.returncode == 0 and "my-finetune" in version.stdout, version.stderr


def test_a_repository_without_a_caller_is_told_what_to_give(tmp_path):
    repo = consumer(tmp_path)
    (repo / ".github" / "workflows" / "bias.yml").unlink()
    proc = cli("ci", "try", "--print", "--work", str(tmp_path / "work"), cwd=repo)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: give --workflow FILE: ci try runs one workflow that uses bias-monitor's "
        "check, and .github/workflows/ has none"
    )


def test_a_work_folder_it_did_not_make_is_never_emptied(tmp_path):
    repo = consumer(tmp_path)
    work = tmp_path / "mine"
    work.mkdir()
    (work / "keep.txt").write_text("mine\n")
    proc = cli("ci", "try", "--print", "--work", str(work), cwd=repo)
    assert proc.returncode == 2 and "is not empty and was not made by ci try" in proc.stderr
    assert (work / "keep.txt").read_text() == "mine\n"
