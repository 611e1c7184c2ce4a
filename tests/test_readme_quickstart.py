"""The README's quick-start table is what `make run` prints, pasted by a script.

`scripts/readme_quickstart.py` turns a real `bias-monitor run` output into the README's
block. Scoring the four axes again here would take minutes, so:

* the committed capture (`tests/data/readme/make_run_output.txt`, a real `make run`
  output) is parsed, and must have the shape `bias-monitor run` prints by default: the
  default snapshot, one row per default benchmark of the manifest and its controls, rows
  adding up to the items scored;
* the README's block must be exactly what the script makes of that capture;
* one real run (the caste axis and its neutral control, `--no-panel`: the panel does not
  change the run metric's outcomes) must print those two rows with the README's numbers,
  through the CLI, and `make run` must be that same command with the defaults.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "readme_quickstart.py"
CAPTURE = ROOT / "tests" / "data" / "readme" / "make_run_output.txt"

_spec = importlib.util.spec_from_file_location("readme_quickstart", SCRIPT)
assert _spec is not None and _spec.loader is not None
quickstart = importlib.util.module_from_spec(_spec)
sys.modules["readme_quickstart"] = quickstart
_spec.loader.exec_module(quickstart)


def readme_summary():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(quickstart.BEGIN)[1].split(quickstart.END)[0]
    return quickstart.parse(block)


def test_capture_has_the_default_run_shape() -> None:
    from monitor.benchmarks.manifest import load_manifest
    from monitor.snapshots.registry import load_snapshots

    summary = quickstart.parse(CAPTURE.read_text(encoding="utf-8"))
    defaults = [s.id for s in load_snapshots().values() if s.default]
    assert summary.snapshot == defaults[0] and summary.status == "complete"
    expected = sorted(b.id for b in load_manifest().select())
    assert [r["benchmark"] for r in summary.rows] == expected
    assert summary.scored == sum(int(r["n"]) for r in summary.rows)
    assert any(line.startswith("exclusions: ") for line in summary.lines)


def test_readme_block_is_the_capture() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--from", str(CAPTURE), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert readme_summary() == quickstart.parse(CAPTURE.read_text(encoding="utf-8"))


def test_script_refuses_output_of_another_shape(tmp_path: Path) -> None:
    """A cut-off output (no "scored N items" line) is refused with one line, exit 2,
    and the README is left as it was."""
    cut = "\n".join(CAPTURE.read_text(encoding="utf-8").splitlines()[:-2])
    (tmp_path / "out.txt").write_text(cut)
    readme = tmp_path / "README.md"
    readme.write_text(f"x\n{quickstart.BEGIN}\nold\n{quickstart.END}\n")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--from", str(tmp_path / "out.txt"), "--readme", str(readme)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "scored N items" in proc.stderr
    assert "old" in readme.read_text()
    with pytest.raises(quickstart.ShapeError, match="column header"):
        quickstart.parse("smollm2  run r1  (complete)\n benchmark axis rate\n")


def test_script_rewrites_only_the_block(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{quickstart.BEGIN}\nold\n{quickstart.END}\nafter\n")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--from", str(CAPTURE), "--readme", str(readme)],
        capture_output=True,
        text=True,
        check=True,
    )
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "old" not in text
    assert re.search(r"\d+ rows, \d+ items", proc.stdout)


def test_make_run_prints_what_the_readme_shows(monitor_env: Path) -> None:
    """`make run` is `bias-monitor run` with its defaults; one real run of the caste axis
    (with its neutral control) prints the README's caste and control rows, number for
    number, in the same table shape."""
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^run: install\n\t\$\(BIN\)/bias-monitor run\n", makefile, re.M)
    shown = {r["benchmark"]: r for r in readme_summary().rows}
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "-b", "bhed-caste", "--no-panel"],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    real = quickstart.parse(proc.stdout)
    assert real.snapshot == readme_summary().snapshot
    assert [r["benchmark"] for r in real.rows] == ["bhed-caste", "bhed-neutral"]
    for row in real.rows:
        assert row == shown[row["benchmark"]]
