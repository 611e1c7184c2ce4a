"""``run --help`` and the hint after ``snapshots add`` name the benchmarks the manifest
marks, read from it when they are shown (issue 45: the core names no family's benchmark).

Through the CLI as a user types it: once with the shipped manifest (the ids are read from
``data/benchmarks.toml`` here, not written into the test), once with a project home
(``MONITOR_HOME``) whose manifest marks other defaults and another control, which the
help and the hint must then name instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "data" / "benchmarks.toml"


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _env(tmp_path: Path, home: Path | None = None) -> dict[str, str]:
    snaps = tmp_path / "snaps"
    snaps.mkdir(exist_ok=True)
    env = {**os.environ, "MONITOR_SNAPSHOTS_DIR": str(snaps), "NO_COLOR": "1"}
    env.pop("MONITOR_HOME", None)
    if home is not None:
        env["MONITOR_HOME"] = str(home)
    return env


def _defaults_and_controls(path: Path) -> tuple[list[str], list[tuple[str, str, int]]]:
    """What the manifest at ``path`` marks default, and its controls, in its order."""
    specs = tomllib.loads(path.read_text(encoding="utf-8"))["benchmarks"]
    defaults = [i for i, s in specs.items() if s.get("default")]
    controls = [(i, c, specs[c]["rows"]) for i, s in specs.items() for c in s.get("controls", ())]
    return defaults, controls


def _squeezed(text: str) -> str:
    """Help text without its line breaks and indentation (click wraps it at any width)."""
    return re.sub(r"\s+", "", text)


def _other_home(tmp_path: Path) -> Path:
    """A project home whose manifest marks other defaults: the caste axis no longer, the
    CrowS pairs instead, with the neutral control moved beside them."""
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    text = MANIFEST.read_text(encoding="utf-8")
    caste = 'rows = 106\ndefault = true\ncontrols = ["bhed-neutral"]'
    crows = "rows = 1508\ndefault = false"
    assert text.count(caste) == 1 and text.count(crows) == 1
    text = text.replace(caste, "rows = 106\ndefault = false")
    text = text.replace(crows, 'rows = 1508\ndefault = true\ncontrols = ["bhed-neutral"]')
    (home / "data" / "benchmarks.toml").write_text(text, encoding="utf-8")
    shutil.copy(REPO / "data" / "errata.toml", home / "data" / "errata.toml")
    return home


def _help_names(env: dict[str, str], manifest: Path) -> None:
    proc = _cli(env, "run", "--help")
    assert proc.returncode == 0, proc.stderr
    shown = _squeezed(proc.stdout)
    defaults, controls = _defaults_and_controls(manifest)
    assert defaults and controls
    wanted = f"Default:thebenchmarksthemanifestmarksdefault({','.join(defaults)})."
    assert wanted in shown, proc.stdout
    listed = ",".join(f"{c}beside{b}({rows}rows)" for b, c, rows in controls)
    assert f"Themanifest'scontrols:{listed}." in shown, proc.stdout


def test_run_help_names_the_shipped_manifests_defaults_and_controls(tmp_path: Path) -> None:
    _help_names(_env(tmp_path), MANIFEST)


def test_run_help_follows_the_manifest_it_reads(tmp_path: Path) -> None:
    home = _other_home(tmp_path)
    _help_names(_env(tmp_path, home), home / "data" / "benchmarks.toml")
    shown = _squeezed(_cli(_env(tmp_path, home), "run", "--help").stdout)
    assert "bhed-neutralbesidebhed-caste" not in shown and "(bhed-caste," not in shown


def _model_folder(folder: Path) -> Path:
    """A folder ``snapshots add`` pins as hf-causal (its weights are never read here)."""
    folder.mkdir(parents=True)
    config = {"architectures": ["LlamaForCausalLM"]}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"weights")
    return folder


def _hint(env: dict[str, str], folder: Path) -> str:
    proc = _cli(env, "snapshots", "add", str(folder), "--id", "mine")
    assert proc.returncode == 0, proc.stderr
    [line] = [x for x in proc.stdout.splitlines() if x.startswith("score it with: ")]
    return line


def test_the_snapshots_add_hint_scores_the_first_two_defaults(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path / "models" / "m")
    first, second = _defaults_and_controls(MANIFEST)[0][:2]
    assert _hint(_env(tmp_path), folder) == (
        f"score it with: bias-monitor run -s mine -b {first} -b {second}"
    )
    home = _other_home(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    assert _hint(_env(other, home), folder) == (
        "score it with: bias-monitor run -s mine -b bhed-religion -b bhed-gender"
    )
