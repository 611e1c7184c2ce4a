"""Issue 44, findings 2 and 3, through the command a user types: a snapshot folder may not
replace a shipped snapshot (the baseline a pull request is compared with), and a PyPI
snapshot's ``module`` must be its package's own before anything of it is imported.

Finding 10 and the pull-request check's baselines are tested on the workflow's own scripts
in tests/test_ci_scripts.py and under act in tests/test_workflows_act.py.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
SMOLLM2 = "smollm2-135m-instruct-q4"
SHIPPED_SMOLLM2 = REPO / "snapshots" / f"{SMOLLM2}.toml"


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


def stored_runs(db: Path) -> int:
    if not db.exists():
        return 0
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]


# -- finding 2: a user folder may not reuse a shipped id ------------------------------------


@pytest.fixture
def shadowing_folder(tmp_path: Path) -> Path:
    """The issue's pull request: its own model, plus a file that reuses the shipped
    baseline's id and display name, pointing at the candidate's weights (here SmolLM2's
    own, as a stand-in for any other)."""
    folder = tmp_path / "pr-snapshots"
    folder.mkdir()
    shipped = SHIPPED_SMOLLM2.read_text(encoding="utf-8")
    (folder / "my-model.toml").write_text(
        shipped.replace(f'id = "{SMOLLM2}"', 'id = "my-model"').replace(
            "default = true", "default = false"
        ),
        encoding="utf-8",
    )
    (folder / f"{SMOLLM2}.toml").write_text(
        shipped.replace("# SmolLM2", "# The candidate under the baseline's name; SmolLM2"),
        encoding="utf-8",
    )
    return folder


@pytest.mark.parametrize(
    "command",
    [
        ("run", "-s", "my-model", "-b", "bhed-caste"),
        ("run", "-s", SMOLLM2, "-b", "bhed-caste"),
        ("run", "-b", "bhed-caste"),  # the folder's defaults
        ("snapshots", "list"),
    ],
    ids=["run-own", "run-baseline", "run-default", "list"],
)
def test_a_folder_that_reuses_a_shipped_id_is_refused_naming_both_files(
    monitor_env: Path, shadowing_folder: Path, command
):
    env = {**os.environ, "MONITOR_SNAPSHOTS_DIR": str(shadowing_folder)}
    message = one_line_refusal(cli(env, *command))
    assert f"{shadowing_folder / f'{SMOLLM2}.toml'} reuses the id '{SMOLLM2}'" in message
    assert f"shipped snapshot {SHIPPED_SMOLLM2}" in message
    assert stored_runs(monitor_env / "monitor.duckdb") == 0  # nothing scored, nothing stored
    # --snapshots-dir is the same folder by another name.
    flag = cli(dict(os.environ), *command, "--snapshots-dir", str(shadowing_folder))
    assert one_line_refusal(flag) == message


def test_snapshots_add_refuses_a_shipped_id_before_writing(monitor_env: Path, tmp_path: Path):
    folder = tmp_path / "mine"
    folder.mkdir()
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"architectures": ["GPT2LMHeadModel"]}')
    (model / "model.safetensors").write_bytes(b"\0" * 16)
    proc = cli(
        {**os.environ, "MONITOR_SNAPSHOTS_DIR": str(folder)},
        *("snapshots", "add", str(model), "--id", SMOLLM2, "--kind", "hf-causal"),
    )
    message = one_line_refusal(proc)
    assert f"{folder / f'{SMOLLM2}.toml'} reuses the id '{SMOLLM2}'" in message
    assert list(folder.iterdir()) == []  # nothing written, no leftover draft


# -- finding 3: `module` must be a top-level module of `package` ----------------------------


def _pypi_snapshot(folder: Path, sid: str, module: str, assemble: str | None) -> None:
    sha = f"{len(sid):064x}"  # a pin no real file has: nothing can be found under it
    line = f'assemble = "{assemble}"\n' if assemble else ""
    (folder / f"{sid}.toml").write_text(
        f'id = "{sid}"\nkind = "hf-causal"\ndisplay_name = "{sid}"\n\n[source]\n'
        f'type = "pypi"\npackage = "duckdb"\nversion = "{importlib.metadata.version("duckdb")}"\n'
        f'module = "{module}"\nfile = "x.gguf"\nsha256 = "{sha}"\n{line}',
        encoding="utf-8",
    )


@pytest.mark.parametrize(
    ("module", "assemble"),
    [("os", "os:mkdir"), ("this", "this:x"), ("this", None), ("antigravity", None)],
)
def test_a_module_that_is_not_the_packages_own_is_refused_before_it_runs(
    monitor_env: Path, tmp_path: Path, module: str, assemble: str | None
):
    """The issue's TOMLs: ``package = "duckdb"`` with ``module = "os"`` created a folder in
    the cache through ``os:mkdir``; ``module = "this"`` printed the Zen of Python (its
    top-level code ran). Refused in one line before anything of the module is imported."""
    folder = tmp_path / "snapshots"
    folder.mkdir()
    cache = tmp_path / "cache"
    _pypi_snapshot(folder, "not-its-own", module, assemble)
    env = {**os.environ, "MONITOR_SNAPSHOTS_DIR": str(folder), "MONITOR_CACHE_DIR": str(cache)}
    proc = cli(env, "run", "-s", "not-its-own", "-b", "bhed-caste")
    message = one_line_refusal(proc)
    assert f"module '{module}' is not a top-level module of the package duckdb" in message
    assert "it installs " in message and "duckdb" in message.split("it installs ")[1]
    output = proc.stdout + proc.stderr
    assert "assembling" not in output and "Beautiful is better than ugly" not in output
    assert not (cache / "files").exists()  # os.mkdir made nothing
    assert stored_runs(monitor_env / "monitor.duckdb") == 0


def test_a_dotted_module_is_refused_when_the_file_is_read(tmp_path: Path):
    """Finding a dotted module's spec imports its parents, so only a top-level name is
    accepted, whatever the package."""
    folder = tmp_path / "snapshots"
    folder.mkdir()
    _pypi_snapshot(folder, "dotted", "duckdb.experimental", "duckdb.experimental:x")
    proc = cli({**os.environ, "MONITOR_SNAPSHOTS_DIR": str(folder)}, "snapshots", "list")
    message = one_line_refusal(proc)
    assert "dotted.toml is invalid: source.pypi.module: module must be the package's" in message
