"""Local models through the CLI: repeat groups of bit-identical reruns, the paired test on
continuous per-item deltas, and intervals that respect India_Religious' shared templates.

Real models (SmolLM2-135M and Gemma-3-270m from their PyPI packages) on the real
India_Religious file, whose 121 items come from 107 templates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_reruns_are_noise_free_and_another_model_is_tested_on_its_deltas(monitor_env: Path):
    # --no-panel: what is compared is the run's own metric (cll); half the scoring time.
    smol = cli(
        "run", "-s", "smollm2-135m-instruct-q4", "-b", "bhed-religion", "--repeat", "3",
        "--no-panel",
    )  # fmt: skip
    ids = [o["run_id"] for o in smol]
    assert [o["status"] for o in smol] == ["complete"] * 3

    # Third rerun against the second: the first two are its repeat group (the run under
    # test left out), and they agree on every item.
    d = cli("drift", "--run", ids[2], "--baseline", ids[1])
    [c], [det] = d["comparisons"], d["comparison_details"]
    assert (c["to_anti"], c["to_stereo"], c["verdict"]) == (0, 0, "no significant change")
    [side] = det["noise"]["sides"]
    assert side["side"] == "same configuration" and side["run_ids"] == ids[:2]
    assert side["pair_flip_rates"] == [0.0] and side["bias_rates"][0] == side["bias_rates"][1]
    assert det["delta_test"]["p_value"] == 1.0 and det["delta_test"]["mean_shift"] == 0.0
    assert det["mde"]["mde"] is not None and det["mde"]["discordance"] == 0.0

    gemma = cli("run", "-s", "gemma-3-270m-q4", "-b", "bhed-religion", "--no-panel")
    assert gemma[0]["status"] == "complete"
    pr = cli(
        "drift", "--snapshot", "gemma-3-270m-q4", "--baseline-snapshot", "smollm2-135m-instruct-q4"
    )
    [c], [det] = pr["comparisons"], pr["comparison_details"]
    assert c["n_paired"] > 100
    # Every comparison says what it could have detected, on its effective sample size,
    # for the quantity it tests: religion's stereotypes name Hindus and Muslims each way
    # (issue 43), so the balanced change, over the items of those two directions only.
    mde, b = det["mde"], c["balanced"]
    assert c["tested"] == "balanced" and b["n_paired"] + b["n_outside"] == c["n_paired"]
    assert 0 < b["n_paired"] < c["n_paired"] and b["mde"] == mde["mde"] is not None
    assert mde["n_effective"] <= mde["n"] == b["n_paired"]
    clusters = det["clusters"]
    assert clusters["n_clusters"] < clusters["n_items"] and clusters["largest"] == 3
    assert clusters["design_effect"] >= 1.0
    if clusters["design_effect"] > 1:
        low, high = det["delta_ci_clustered"]
        assert low <= c["delta_ci"][0] and high >= c["delta_ci"][1]
    # Two different models: their per-item CLL deltas differ item by item.
    t = det["delta_test"]
    assert t["n_items"] == c["items_both"] and t["n_clusters"] == clusters["n_clusters"]
    assert 0 < t["p_value"] <= 1 and t["ci_low"] < t["mean_shift"] < t["ci_high"]
    # The baseline's --repeat group is its noise: three bit-identical runs, zero flips.
    [side] = det["noise"]["sides"]
    assert side["side"] == "baseline" and side["run_ids"] == ids
    assert side["pair_flip_rates"] == [0.0, 0.0, 0.0]
    assert "would be detected reliably" in det["summary"]
