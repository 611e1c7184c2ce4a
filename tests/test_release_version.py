"""A version to pin (issue 46 item 3): ``bias-monitor --version`` prints the package's
version, and the release workflow refuses a tag that is not ``v`` + that version, so the
tag a caller pins and the version the tool reports are one. The release step's own
script is run here, as a runner runs a ``run:`` block, in a copy of the files it reads."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
STEP = "The tag names pyproject's version"


def _version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def _tag_check(workspace: Path, tag: str) -> subprocess.CompletedProcess:
    """release.yml's tag check, run with ``TAG`` as the tag push sets it."""
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "release.yml").read_text())
    step = next(s for s in workflow["jobs"]["dist"]["steps"] if s.get("name") == STEP)
    assert step["if"] == "startsWith(github.ref, 'refs/tags/v')"
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
        cwd=workspace,
        env={"PATH": os.environ["PATH"], "TAG": tag},
        capture_output=True,
        text=True,
    )


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / "monitor").mkdir()
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copy(REPO / "monitor" / "__init__.py", tmp_path / "monitor" / "__init__.py")
    return tmp_path


def test_version_flag_prints_the_package_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"bias-monitor {_version()}\n"
    assert proc.stderr == ""
    help_text = subprocess.run(
        [sys.executable, "-m", "monitor", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "--version" in help_text


def test_release_accepts_the_tag_of_pyprojects_version(tmp_path: Path) -> None:
    proc = _tag_check(_workspace(tmp_path), f"v{_version()}")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_release_refuses_a_tag_that_differs_from_the_version(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path)
    for tag in (f"v{_version()}.1", _version(), "v9.9.9"):
        proc = _tag_check(workspace, tag)
        assert proc.returncode == 1, tag
        assert f"::error::tag {tag} does not match pyproject.toml's version" in proc.stdout


def test_release_refuses_a_package_version_other_than_pyprojects(tmp_path: Path) -> None:
    """``--version`` from an uninstalled checkout prints ``monitor.__version__``: a
    release whose two versions differ would report one and be tagged with the other."""
    workspace = _workspace(tmp_path)
    init = workspace / "monitor" / "__init__.py"
    init.write_text(init.read_text().replace(f'"{_version()}"', '"0.0.0-stale"'))
    proc = _tag_check(workspace, f"v{_version()}")
    assert proc.returncode == 1
    assert "__version__ 0.0.0-stale differs from pyproject.toml's" in proc.stdout
