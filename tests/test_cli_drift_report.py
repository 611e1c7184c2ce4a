"""End-to-end through the CLI: import the GPT-4o caste study, compare April with July,
write the reports, gate on drift, quarantine a corrupted run, and check that reruns of a
pinned local snapshot raise no drift flag.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pytest
from PIL import Image
from test_report_screenshot import BROWSER, screenshot


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env=os.environ.copy(),
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def study_db(monitor_env: Path, shared_datasets: Path) -> Path:
    results = shared_datasets / "caste-bias" / "results"
    cli(
        "import",
        "caste-bias",
        str(results / "april"),
        "--snapshot",
        "gpt-4o-caste-study",
        "--date",
        "2024-04-16",
    )
    cli(
        "import",
        "caste-bias",
        str(results / "july"),
        "--snapshot",
        "gpt-4o-caste-study",
        "--date",
        "2024-07-18",
    )
    return monitor_env / "monitor.duckdb"


def test_april_july_drift_and_report(study_db: Path, tmp_path: Path) -> None:
    drift = json.loads(cli("drift", "--format", "json").stdout)
    caste = next(c for c in drift["comparisons"] if c["axis"] == "caste")
    assert caste["rate_old"]["k"] == 84 and caste["rate_old"]["n"] == 103
    assert caste["rate_new"]["k"] == 71 and caste["rate_new"]["n"] == 105
    assert caste["n_paired"] == 103
    assert (caste["to_anti"], caste["to_stereo"]) == (24, 11)
    assert caste["p_mcnemar"] == pytest.approx(0.041, abs=5e-4)
    fields = {f["field"]: f for f in caste["provenance_diff"]}
    assert any(f["old"] == "gpt-4" and f["new"] == "gpt-4o" for f in fields.values())
    # 24 of 35 flips moved away from the stereotype: if anything, an improvement.
    assert caste["verdict"] in ("improvement", "no significant change")
    assert cli("drift", "--fail-on", "regression", check=False).returncode == 0

    out = tmp_path / "report"
    summary = tmp_path / "summary.md"
    cli("report", "--out", str(out), "--since", "2024-01-01", "--summary", str(summary))
    md = (out / "report.md").read_text()
    # Raw rates beside the balanced change the verdict tests (p 0.021; McNemar's 0.041 is
    # the JSON's p_mcnemar).
    assert "81.6%" in md and "67.6%" in md and "24 / 11" in md and "| 0.021 |" in md
    assert caste["balanced"]["p_value"] == pytest.approx(0.0214, abs=1e-4)
    assert "gpt-4o" in md and summary.read_text() == md + "\n"
    html = (out / "report.html").read_text()
    assert html.count("<svg") >= 4 and "<script" not in html
    data = json.loads((out / "report.json").read_text())
    assert data["schema_version"] == 2 and len(data["trends"]) == 4
    # No benchmark sentence reaches a report.
    con = duckdb.connect(str(study_db), read_only=True)
    texts = [r[0] for r in con.execute("SELECT text_stereo FROM pair_items").fetchall()]
    con.close()
    assert texts and not any(t in md or t in html for t in texts)

    if BROWSER is None:
        pytest.skip("no chromium binary on PATH (apt-get install chromium)")
    png = tmp_path / "report.png"
    screenshot(out / "report.html", png, tmp_path / "profile")
    pixels = np.asarray(Image.open(png).convert("RGB"))
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, "the page looks blank"


def test_corrupted_run_is_quarantined_and_left_out_of_trends(study_db: Path, tmp_path) -> None:
    runs = json.loads(cli("runs", "list", "--format", "json").stdout)
    july = next(r["run_id"] for r in runs if r["started_at"].startswith("2024-07"))
    con = duckdb.connect(str(study_db))
    con.execute(
        "UPDATE pair_scores SET prob_stereo = 1.7 WHERE run_id = ? AND item_id = "
        "(SELECT min(item_id) FROM pair_scores WHERE run_id = ? AND prob_stereo IS NOT NULL)",
        [july, july],
    )
    con.close()
    proc = cli("quality", july, check=False)
    assert proc.returncode == 1
    assert "prob_stereo" in proc.stdout and "FAILED" in proc.stdout
    shown = json.loads(cli("show", july, "--format", "json").stdout)
    assert shown["run"]["status"] == "quarantined" and "prob_stereo" in shown["run"]["notes"]

    cli("report", "--out", str(tmp_path / "r"))
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    plotted = {p["run_id"] for t in data["trends"] for p in t["points"]}
    assert july not in plotted
    assert any(r["run_id"] == july and r["status"] == "quarantined" for r in data["runs"])
    # A quarantined run is never compared: the latest good run has no baseline now.
    assert not [c for c in data["comparisons"] if july in (c["new_run_id"], c["baseline_run_id"])]


def test_a_corrupted_import_is_quarantined_through_the_cli(
    monitor_env: Path, shared_datasets: Path, tmp_path: Path
) -> None:
    """The importer's run passes the same gate as a scored run: an impossible number in
    the file (a log-prob above 0) gives exit 1, a quarantined run and the reason."""
    src = shared_datasets / "caste-bias" / "results" / "july" / "Caste_results.csv"
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    # Data row 0's stereo_logit (-0.738471) becomes +0.738471.
    assert ",-0.738471,-inf," in lines[1]
    lines[1] = lines[1].replace(",-0.738471,-inf,", ",0.738471,-inf,", 1)
    folder = tmp_path / "july"
    folder.mkdir()
    (folder / "Caste_results.csv").write_text("".join(lines), encoding="utf-8")
    proc = cli(
        "import",
        "caste-bias",
        str(folder),
        "--snapshot",
        "broken",
        "--date",
        "2024-07-18",
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert ": quarantined" in proc.stdout and "prob_stereo" in proc.stderr
    [run] = json.loads(cli("runs", "list", "--format", "json").stdout)
    assert run["status"] == "quarantined" and "prob_stereo" in run["notes"]


@pytest.mark.slow
def test_ten_reruns_of_a_pinned_local_snapshot_raise_no_flag(monitor_env: Path) -> None:
    # --no-panel: the run's metric alone (the noise floor of cll is what is measured here).
    out = json.loads(
        cli(
            "run", "-b", "bhed-caste", "--no-controls", "--no-panel", "--repeat", "10",
            "--format", "json",
        ).stdout
    )  # fmt: skip
    assert [o["status"] for o in out] == ["complete"] * 10
    ids = [o["run_id"] for o in out]
    shown = json.loads(cli("show", ids[0], "--format", "json").stdout)
    assert shown["run"]["environment"]["scoring"]["panel"] is False
    # float32 on a CPU: the linear layers ran on oneDNN, and the run says so.
    assert shown["run"]["environment"]["scoring"]["linear_kernel"] == "onednn"
    assert {m["measure"] for m in shown["measures"]} == {"bias_rate", "tie_rate"}
    flagged = []
    for new, old in zip(ids[1:], ids[:-1], strict=True):
        d = json.loads(cli("drift", "--run", new, "--baseline", old, "--format", "json").stdout)
        for c in d["comparisons"]:
            assert (c["to_anti"], c["to_stereo"]) == (0, 0)  # bit-identical reruns
            if c["verdict"] in ("regression", "improvement"):
                flagged.append(c)
    assert not flagged
    assert cli("drift", "--fail-on", "any", check=False).returncode == 0


def test_drift_between_named_runs_lists_the_flipped_items(study_db: Path) -> None:
    """The README's `drift --run NEW --baseline OLD --show-flips`, with unique id prefixes:
    the listed ids are the items whose stored outcome went stereo → anti (or back)."""
    runs = json.loads(cli("runs", "list", "--format", "json").stdout)
    april, july = sorted(runs, key=lambda r: r["run_id"])  # ids carry the study date
    # Shortest unique prefixes of the two ids.
    cut = next(i for i in range(1, 64) if april["run_id"][:i] != july["run_id"][:i])
    args = ["drift", "--run", july["run_id"][:cut], "--baseline", april["run_id"][:cut]]
    caste = next(
        c
        for c in json.loads(cli(*args, "--show-flips", "--format", "json").stdout)["comparisons"]
        if c["axis"] == "caste"
    )
    to_anti, to_stereo = caste["flipped_to_anti"], caste["flipped_to_stereo"]
    assert (len(to_anti), len(to_stereo)) == (caste["to_anti"], caste["to_stereo"]) == (24, 11)

    def outcomes(run_id: str) -> dict[str, str]:
        shown = json.loads(cli("show", run_id, "--items", "--format", "json").stdout)
        return {i["item_id"]: i["outcome"] for i in shown["items"]}

    old, new = outcomes(april["run_id"]), outcomes(july["run_id"])
    assert all(old[i] == "stereo" and new[i] == "anti" for i in to_anti)
    assert all(old[i] == "anti" and new[i] == "stereo" for i in to_stereo)
    # The table form lists the same ids, and without the flag lists none.
    table = cli(*args, "--show-flips").stdout
    assert all(i in table for i in to_anti + to_stereo)
    assert to_anti[0] not in cli(*args).stdout
