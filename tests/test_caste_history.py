"""The GPT-4o caste study's whole history as a longitudinal case, through the CLI.

Ten committed results (``../shared/datasets/caste-bias/history``): six runs of the April
configuration, two July 15 runs whose code read the log-probabilities from the wrong
field, and two runs of the final July configuration. Acceptance:

* ten runs; the six April runs are one repeat group with caste rates 71.8, 74.5, 77.5,
  84.6, 74.7 and 81.6%, the two final July runs another;
* both broken July 15 runs are quarantined as measurement failures naming coverage, and
  are in no trend, baseline or group;
* April → July: 24 moved away / 11 towards the stereotype over 103 paired items,
  McNemar p = 0.041, the Benjamini–Hochberg result, the noise floor of each side, the
  minimum detectable change and the model/API/prompt changes, with a verdict in words;
* re-importing adds nothing (exit 0).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

SNAPSHOT = "gpt-4o-caste-study"
APRIL_RATES = [71.8, 74.5, 77.5, 84.6, 74.7, 81.6]


def cli(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def _env(base: Path, shared: Path, cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MONITOR_DB": str(base / "monitor.duckdb"),
        "MONITOR_DATA_DIR": str(base / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared),
        "MONITOR_CACHE_DIR": str(cache),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }


@pytest.fixture(scope="module")
def history(tmp_path_factory, shared_datasets, session_cache):
    base = tmp_path_factory.mktemp("history")
    env = _env(base, shared_datasets, session_cache)
    folder = shared_datasets / "caste-bias" / "history"
    proc = cli(env, "import", "caste-bias", str(folder), "--snapshot", SNAPSHOT, "--format",
               "json", check=False)  # fmt: skip
    runs = json.loads(cli(env, "runs", "list", "--format", "json").stdout)
    runs.sort(key=lambda r: r["run_id"])  # ids sort in history order (time, then order)
    return {"env": env, "base": base, "import": proc, "runs": runs, "folder": folder}


def _caste_rate(env, run_id: str) -> tuple[float, str]:
    shown = json.loads(cli(env, "show", run_id, "--format", "json").stdout)
    m = next(m for m in shown["measures"] if m["measure"] == "bias_rate")
    return round(100 * m["value"], 1), shown["run"]["status"]


def test_ten_runs_dated_by_commit_with_the_study_facts(history):
    proc = history["import"]
    assert proc.returncode == 1, proc.stderr  # two runs were quarantined: exit 1, as documented
    data = json.loads(proc.stdout)
    assert len(data["run_ids"]) == 10 and data["skipped"] == []
    runs = history["runs"]
    assert len(runs) == 10
    facts = json.loads((history["folder"] / "history.json").read_text())["runs"]
    by_order = sorted(facts, key=lambda f: f["order"])
    for run, fact in zip(runs, by_order, strict=True):
        shown = json.loads(cli(history["env"], "show", run["run_id"], "--format", "json").stdout)
        env = shown["run"]["environment"]
        assert env["api"]["model_requested"] == fact["model_requested"]
        assert env["api"]["endpoint"] == fact["api"]
        assert env["prompt_template"] == fact["prompt"]
        assert env["import"]["source_commit"] == fact["commit"]
        assert env["import"]["sha256"] == fact["sha256"]
        assert shown["run"]["git_commit"].endswith(fact["commit"])
        assert run["started_at"].startswith(_utc_prefix(fact["committed_at"]))
    # The April runs use seed 1 and Chat Completions; the final July ones send no seed.
    first = json.loads(cli(history["env"], "show", runs[0]["run_id"], "--format", "json").stdout)
    assert first["run"]["environment"]["api"]["seed"] == 1


def _utc_prefix(iso: str) -> str:
    from datetime import UTC, datetime

    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%dT%H:%M")


def test_april_rates_and_the_broken_july_runs(history):
    env, runs = history["env"], history["runs"]
    rates = [_caste_rate(env, r["run_id"]) for r in runs]
    assert [r for r, _ in rates[:6]] == APRIL_RATES
    statuses = [s for _, s in rates]
    assert statuses == ["complete"] * 6 + ["quarantined"] * 2 + ["complete"] * 2
    notes = [r["notes"] for r in runs[6:8]]
    assert "measurement failure: coverage 19.0% (20/105)" in notes[0]
    assert "measurement failure: coverage 4.8% (5/105)" in notes[1]
    assert all("94.3–99.0%" in n for n in notes)
    # The quality command re-runs the same gate and agrees.
    proc = cli(env, "quality", runs[6]["run_id"], check=False)
    assert proc.returncode == 1 and "coverage 19.0%" in proc.stdout


def test_reimport_adds_nothing(history):
    env = history["env"]
    proc = cli(env, "import", "caste-bias", str(history["folder"]), "--snapshot", SNAPSHOT)
    assert "nothing new: all 10 runs" in proc.stdout
    assert len(json.loads(cli(env, "runs", "list", "--format", "json").stdout)) == 10
    # --date makes no sense for a history (commit times date it): a one-line refusal.
    bad = cli(env, "import", "caste-bias", str(history["folder"]), "--snapshot", SNAPSHOT,
              "--date", "2025-01-01", check=False)  # fmt: skip
    assert bad.returncode == 2 and "drop --date" in bad.stderr


@pytest.fixture(scope="module")
def report(history):
    out = history["base"] / "report"
    cli(history["env"], "report", "--out", str(out))
    return {
        "md": (out / "report.md").read_text(),
        "html": (out / "report.html").read_text(),
        "json": json.loads((out / "report.json").read_text()),
    }


def test_repeat_groups_trends_and_quarantine_in_the_report(history, report):
    runs = [r["run_id"] for r in history["runs"]]
    data = report["json"]
    groups = {tuple(g["run_ids"]): g for g in data["repeat_groups"]}
    assert set(groups) == {tuple(runs[:6]), tuple(runs[8:])}
    april, july = groups[tuple(runs[:6])], groups[tuple(runs[8:])]
    [a_axis] = april["axes"]
    assert [round(100 * r, 1) for r in a_axis["bias_rates"]] == APRIL_RATES
    assert len(a_axis["pair_flip_rates"]) == 15
    assert min(a_axis["pair_flip_rates"]) == pytest.approx(18 / 99)  # the noise, as a spread
    assert len(july["axes"][0]["pair_flip_rates"]) == 1
    [trend] = data["trends"]
    plotted = [p["run_id"] for p in trend["points"]]
    assert plotted == runs[:6] + runs[8:]  # the broken runs are no trend point
    assert [q["run_id"] for q in trend["quarantined"]] == runs[6:8]
    assert all("coverage" in q["reason"] for q in trend["quarantined"])
    assert [g["run_ids"] for g in trend["groups"]] == [runs[:6], runs[8:]]
    [brk] = trend["breaks"]
    assert brk["before_run_id"] == runs[5] and brk["after_run_id"] == runs[8]
    assert brk["changes"][:3] == [
        "model gpt-4 → gpt-4o",
        "API chat.completions → responses",
        "prompt",
    ]
    svg = re.search(r'<svg class="plot" .*?</svg>', report["html"], flags=re.S).group(0)
    assert svg.count('<g class="grp">') == 2  # each repeat group's spread: a noise band
    assert svg.count('<g class="brk">') == 1 and svg.count('<g class="qua">') == 2
    # Every plotted run is a dot with its interval, grouped or not.
    assert svg.count('<circle class="dot"') == svg.count('<line class="whisker"') == 8
    assert "Repeat groups and their noise" in report["html"]


def test_april_to_july_with_noise_mde_and_what_changed(history, report):
    runs = [r["run_id"] for r in history["runs"]]
    env = history["env"]
    drift = json.loads(cli(env, "drift", "--format", "json").stdout)
    assert [(p["new_run_id"], p["baseline_run_id"]) for p in drift["pairs"]] == [
        (runs[9], runs[8]),  # the latest run against the one before it
        (runs[9], runs[5]),  # and against the last run of the previous configuration
    ]
    assert drift["pairs"][1]["role"] == "configuration change"
    comps = {(c["new_run_id"], c["baseline_run_id"]): c for c in drift["comparisons"]}
    details = {(d["new_run_id"], d["baseline_run_id"]): d for d in drift["comparison_details"]}
    c, d = comps[(runs[9], runs[5])], details[(runs[9], runs[5])]
    assert (c["n_paired"], c["to_anti"], c["to_stereo"]) == (103, 24, 11)
    assert c["p_mcnemar"] == pytest.approx(0.041, abs=5e-4)
    assert c["p_bh"] == pytest.approx(2 * c["p"])  # BH over the report's 2 tests
    assert c["tested"] == "balanced" and c["p"] == c["balanced"]["p_value"]
    assert c["verdict"] == "no significant change"
    assert d["mde"]["mde"] == pytest.approx(0.172, abs=0.002)  # the balanced change's
    sides = {s["side"]: s for s in d["noise"]["sides"]}
    assert sides["baseline"]["run_ids"] == runs[:6] and sides["new"]["run_ids"] == runs[8:]
    assert d["noise"]["rate_bound"] == pytest.approx(88 / 104 - 74 / 103)
    labels = [x["label"] for x in d["configuration_changes"]]
    assert labels[:3] == ["model", "API", "prompt"]
    # The within-July pair is judged against the nearest repeat group, said so.
    within = details[(runs[9], runs[8])]
    assert [s["side"] for s in within["noise"]["sides"]] == ["nearest"]
    assert cli(env, "drift", "--fail-on", "any", check=False).returncode == 0

    md = report["md"]
    row = next(line for line in md.splitlines() if "| 24 / 11 |" in line)
    # The verdict tests the balanced rate (Brahmin and Dalit items weighed equally); the
    # raw rates stay beside it, and exact McNemar's 0.041 stays in the JSON (p_mcnemar).
    assert "balanced 81.7% [72.4, 87.6] → 66.0% [56.3, 74.3]" in row and "| 0.021 | 0.043 |" in row
    assert "raw (mixes name preference) 81.6% → 67.6%" in row and "MDE ±17.2 pp" in row
    assert "raw −12.6 pp, of which +1.5 pp name preference" in row
    meaning = md.split("### What the verdicts mean", 1)[1].split("###", 1)[0]
    april_july = next(line for line in meaning.splitlines() if "24 items moved away" in line)
    for text in (
        "Across a configuration change",
        "No change beyond the noise",
        "0.043 after the Benjamini–Hochberg correction",
        "6 runs of gpt-4 via chat.completions",
        "2 runs of gpt-4o via responses",
        "18.2%–32.7% of items",
        "ranged 71.8%–84.6%",
        "within the noise floor of 35.6%",
        "about 17.2 points or more",
        "the model (gpt-4 → gpt-4o), the API (chat.completions → responses), the prompt",
    ):
        assert text in april_july, text
    groups = md.split("### Repeat groups (noise floors)", 1)[1].split("###", 1)[0]
    assert "71.8, 74.5, 77.5, 84.6, 74.7, 81.6%" in groups
    quarantined = md.split("### Quarantined runs", 1)[1]
    assert quarantined.count("measurement failure: coverage") == 2

    # No benchmark sentence reaches a report.
    with duckdb.connect(env["MONITOR_DB"], read_only=True) as con:
        texts = [r[0] for r in con.execute("SELECT text_stereo FROM pair_items").fetchall()]
    assert texts and not any(t in md or t in report["html"] for t in texts)


def test_the_published_pair_alone_is_judged_against_both_noise_floors(history):
    runs = [r["run_id"] for r in history["runs"]]
    one = json.loads(
        cli(
            history["env"], "drift", "--run", runs[9], "--baseline", runs[5], "--format", "json"
        ).stdout
    )
    [c] = one["comparisons"]
    [d] = one["comparison_details"]
    assert c["p_bh"] == pytest.approx(c["p"])  # a family of one
    # Significant on its own, but 34.0% of items changed side, within the July noise floor.
    assert c["verdict"] == "no significant change" and "within the noise floor" in c["reason"]
    assert d["summary"].startswith("No change beyond the noise")


def test_a_damaged_history_writes_nothing(tmp_path, shared_datasets, session_cache):
    env = _env(tmp_path, shared_datasets, session_cache)
    folder = tmp_path / "history"
    shutil.copytree(shared_datasets / "caste-bias" / "history", folder)
    target = folder / "2025-07-15-673aab5" / "Caste_results.csv"
    target.write_text(target.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    proc = cli(env, "import", "caste-bias", str(folder), "--snapshot", SNAPSHOT, check=False)
    assert proc.returncode == 2 and "has the recorded sha256" in " ".join(proc.stderr.split())
    runs = cli(env, "runs", "list", "--format", "json", check=False)
    assert runs.returncode != 0 or json.loads(runs.stdout) == []
