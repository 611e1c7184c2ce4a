"""scripts/golden_outputs.py: the before/after output check of issue 45.

A capture takes minutes of real model runs, so these tests exercise the parts that decide
the verdict on small hand-made capture folders: `compare` through the command line (exit 0
only when every file is identical, 1 naming the first differing JSON path or line), and the
normaliser that makes two captures of the same code comparable without hiding a figure.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "golden_outputs.py"

SHOW = {
    "run": {"run_id": "<run:smollm2-135m-instruct-q4:1>", "status": "complete"},
    "measures": [
        {"benchmark": "bhed-caste", "axis": "caste", "measure": "bias_rate", "value": 0.3867,
         "ci_low": 0.3, "ci_high": 0.482, "k": 41, "n": 106},
        {"benchmark": "bhed-race", "axis": "race", "measure": "bias_rate", "value": 0.7194,
         "ci_low": 0.673, "ci_high": 0.762, "k": 277, "n": 385},
    ],
}  # fmt: skip
DRIFT_TXT = "axis  old → new  Δ pp\ncaste balanced  68.2% → 66.0%  −1.6 [−12.4, +9.3]\n"


def compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "compare", str(a), str(b)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _capture(root: Path, show: dict, drift: str = DRIFT_TXT) -> Path:
    """A capture folder as `capture` writes one: a group folder, JSON and text outputs, and
    the uncompared `_capture.json` (durations) and `_logs/`."""
    group = root / "make-run"
    group.mkdir(parents=True)
    (group / "show-smollm2-135m-instruct-q4-1.json").write_text(
        json.dumps(show, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (group / "drift.txt").write_text(drift, encoding="utf-8")
    (root / "_capture.json").write_text(json.dumps({"seconds": len(str(root))}))
    (root / "_logs").mkdir()
    (root / "_logs" / "run.stderr").write_text(f"scored in {len(str(root))} s\n")
    return root


def _changed(value: float) -> dict:
    show = json.loads(json.dumps(SHOW))
    show["measures"][1]["value"] = value
    return show


def test_identical_captures_exit_0_and_say_so(tmp_path):
    a = _capture(tmp_path / "before", SHOW)
    b = _capture(tmp_path / "before2-longer-name", SHOW)  # its _-files differ: not compared
    proc = compare(a, b)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "identical  make-run/drift.txt" in proc.stdout
    assert "identical  make-run/show-smollm2-135m-instruct-q4-1.json" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("all 2 files identical")
    assert "_capture.json" not in proc.stdout and "_logs/" not in proc.stdout


def test_one_changed_figure_exits_1_naming_its_json_path(tmp_path):
    a = _capture(tmp_path / "before", SHOW)
    b = _capture(tmp_path / "after", _changed(0.7195))
    proc = compare(a, b)
    assert proc.returncode == 1, proc.stdout
    assert (
        "differs    make-run/show-smollm2-135m-instruct-q4-1.json: "
        "$.measures[1].value: 0.7194 vs 0.7195"
    ) in proc.stdout
    assert "identical  make-run/drift.txt" in proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("1 of 2 files differ")
    # A number that prints differently is a different output, though Python calls it equal.
    c = _capture(tmp_path / "int", {**SHOW, "measures": [{"k": 41}]})
    d = _capture(tmp_path / "float", {**SHOW, "measures": [{"k": 41.0}]})
    assert "$.measures[0].k: 41 vs 41.0" in compare(c, d).stdout


def test_a_changed_line_a_missing_file_and_a_non_capture(tmp_path):
    a = _capture(tmp_path / "before", SHOW)
    b = _capture(tmp_path / "after", SHOW, drift=DRIFT_TXT.replace("−1.6", "−1.7"))
    (a / "make-run" / "report.md").write_text("**Verdict:** no change\n", encoding="utf-8")
    proc = compare(a, b)
    assert proc.returncode == 1
    assert "differs    make-run/drift.txt: line 2:" in proc.stdout and "−1.7" in proc.stdout
    assert f"differs    make-run/report.md: only in {a}" in proc.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = compare(a, empty)
    assert bad.returncode == 2 and "not a capture" in bad.stderr


def _module():
    spec = importlib.util.spec_from_file_location("golden_outputs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while defined
    spec.loader.exec_module(module)
    return module


def test_the_normaliser_replaces_what_varies_and_keeps_every_figure():
    golden = _module()
    norm = golden.Normaliser(since=datetime(2026, 11, 28, 17, 0, tzinfo=UTC))
    norm.paths["/tmp/golden-abc"] = "<work>"
    norm.commit = "b97a9ca9e469" + "0" * 28
    norm.add_runs(
        ["20261128T171502Z-smollm2-135m-instruct-q4-0f3a9c", "20261128T170101Z-smollm2-135m-"
         "instruct-q4-b87578", "import-gpt-4o-caste-study-20250725T175710-10-39b7ffbc"]
    )  # fmt: skip
    doc = {
        "run_id": "20261128T170101Z-smollm2-135m-instruct-q4-b87578",
        "baseline": "20261128T171502Z-smollm2-135m-instruct-q4-0f3a9c",
        "imported": "import-gpt-4o-caste-study-20250725T175710-10-39b7ffbc",
        "started_at": "2025-07-25T17:57:10+00:00",  # an imported study's time: data
        "finished_at": "2026-11-28 17:16:05.349129+00:00",
        "generated_at": "2026-11-28T17:16:30.576476Z",
        "local": "2026-11-28T12:30:00-05:00",  # 17:30 UTC: written by the capture
        "git_commit": norm.commit + "-dirty",
        "store": "/tmp/golden-abc/make-run.duckdb",
        "validations": [{"results": {"elapsed_s": 1.0063, "success_percent": 100.0}}],
        "value": 0.3867,
    }
    assert norm.json(doc) == {
        "run_id": "<run:smollm2-135m-instruct-q4:1>",
        "baseline": "<run:smollm2-135m-instruct-q4:2>",
        "imported": "import-gpt-4o-caste-study-20250725T175710-10-39b7ffbc",
        "started_at": "2025-07-25T17:57:10+00:00",
        "finished_at": "<time>",
        "generated_at": "<time>",
        "local": "<time>",
        "git_commit": "<monitor-commit>",
        "store": "<work>/make-run.duckdb",
        "validations": [{"results": {"elapsed_s": "<seconds>", "success_percent": 100.0}}],
        "value": 0.3867,
    }
    assert norm.text("Generated 2026-11-28 17:40 UTC · 0.3867") == "Generated <time> · 0.3867"
    # A report's run date, and a run id cut short by a table; a study's date stays.
    assert norm.text("cll · 2026-11-28 · n = 385; imported 2025-08-14") == (
        "cll · <date> · n = 385; imported 2025-08-14"
    )
    assert norm.text('<code title="x">20261128T170101Z-smollm2-13…</code>') == (
        '<code title="x"><run:smollm2-135m-instruct-q4:1>…</code>'
    )
    # A chart's time-axis tick placed by the capture's clock; an imported study's day stays.
    tick = (
        '<line class="tick" x1="{x}" x2="{x}" y1="190" y2="194"/>'
        '<text class="xl" x="{x}" y="207">{d}</text>'
    )
    assert norm.text(tick.format(x="124.8", d="29 Nov")) == tick.format(x="<x>", d="<day>")
    assert norm.text(tick.format(x="60.2", d="23 Apr")) == tick.format(x="60.2", d="23 Apr")
    # A cut id that starts no run of the capture is kept as printed.
    assert norm.text("20261128T235959Z-gpt2-…") == "20261128T235959Z-gpt2-…"


def test_renormalise_rewrites_the_compared_files_from_the_raw_outputs(tmp_path):
    """A changed rule applies to kept captures without new model runs: `renormalise`
    rebuilds every compared file from `_raw/` and the normaliser facts in _capture.json."""
    out = tmp_path / "before"
    raw = out / "_raw" / "make-run"
    raw.mkdir(parents=True)
    run_id = "20261128T170101Z-smollm2-135m-instruct-q4-b87578"
    (raw / "run.txt").write_text(f"smollm2-135m-instruct-q4  run {run_id}  (complete)\n")
    show = {"run": {"run_id": run_id, "finished_at": "2026-11-28T17:05:00+00:00"}, "k": 41}
    (raw / "show.json").write_text(json.dumps(show))
    facts = {"since": "2026-11-28T17:00:00+00:00", "paths": {}, "commit": None,
             "run_ids": [[run_id]]}  # fmt: skip
    (out / "_capture.json").write_text(json.dumps({"normalise": facts}))
    (out / "make-run").mkdir()
    (out / "make-run" / "stale.txt").write_text("from an older rule\n")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "renormalise", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (out / "make-run").iterdir()) == ["run.txt", "show.json"]
    text = (out / "make-run" / "run.txt").read_text()
    assert text == "smollm2-135m-instruct-q4  run <run:smollm2-135m-instruct-q4:1>  (complete)\n"
    shown = json.loads((out / "make-run" / "show.json").read_text())
    assert shown == {"run": {"run_id": "<run:smollm2-135m-instruct-q4:1>",
                             "finished_at": "<time>"}, "k": 41}  # fmt: skip
