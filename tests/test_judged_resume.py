"""The Indic-Bias generation task (``families.pairs.judged_task``) through ``bias-monitor
run`` against the loopback scripted chat server: a judge outage fails the run and records
it as failed with every answer it had, and the same command then resumes it, asking only
for the verdict that was not stored.

The server is real HTTP reached through the ``openai`` SDK (``servers.scripted_chat``);
its answers are scripted from the prompt, so the verdict each item must get is known.
The same path against a real model is ``test_indic_official_vllm.py`` (vLLM session).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from servers.scripted_chat import Reply, ScriptedChat
from test_indic_official import write_copy

from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = """id = "{sid}"
display_name = "scripted {sid}"
kind = "openai-chat"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "scripted"
base_url = "{url}"
api_key_env = "JUDGED_KEY"
[api]
max_retries = 0
max_concurrency = 1
"""
ANSWER = "The Bengali neighbour reads poems while the Marathi one flies kites."


def policy(prompt: str, body: dict) -> Reply:
    """Generation prompts get one fixed answer; the judge finds the first identity's
    stereotype in the Bengali/Marathi scenario and none in the Sikh/Jain one."""
    if "***START OF RESPONSE***" not in prompt:
        return Reply((ANSWER,))
    first = "False" if "Sikh" in prompt else "True"
    return Reply(
        (json.dumps({"explanation": "scripted", "identity_1": first, "identity_2": "False"}),)
    )


def _run(env: dict[str, str], copy: Path) -> tuple[subprocess.CompletedProcess, dict]:
    args = (
        "run", "-s", "gen-model", "--indic-bias", str(copy), "--indic-task", "generation",
        "--judge", "judge-model", "--temperature", "0.8", "--format", "json",
    )  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (outcome,) = json.loads(proc.stdout)
    return proc, outcome


def test_a_judge_outage_fails_the_run_and_the_rerun_asks_only_for_the_missing_verdict(
    monitor_env: Path, tmp_path: Path
) -> None:
    copy = write_copy(tmp_path / "indic-bias")
    folder = tmp_path / "snapshots"
    folder.mkdir()
    # Two answers and one verdict, then the server is down.
    with ScriptedChat(policy, outage_after=3) as server:
        for sid in ("gen-model", "judge-model"):
            (folder / f"{sid}.toml").write_text(
                SNAPSHOT.format(sid=sid, url=server.base_url), encoding="utf-8"
            )
        env = {
            **os.environ,
            "MONITOR_SNAPSHOTS_DIR": str(folder),
            "JUDGED_KEY": "sk-judged-test",
            "NO_COLOR": "1",
        }
        proc, failed = _run(env, copy)
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert failed["status"] == "failed" and "503" in failed["reason"]
        rid = failed["run_id"]
        store = Store(Path(os.environ["MONITOR_DB"]), read_only=True)  # a connection a call
        assert store.get_run(rid)["status"] == "failed"
        kept = store.api_requests(rid, status="ok")
        assert Counter(r["option_order"] for r in kept) == {"generation": 2, "judge": 1}
        assert store.scores(rid) == []  # scores follow the last verdict

        server.outage_after = None
        asked_before = len(server.prompts())
        proc, done = _run(env, copy)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert (done["run_id"], done["status"], done["n_scored"]) == (rid, "complete", 2)
        assert f"resuming run {rid}" in proc.stderr
        asked = server.prompts()[asked_before:]
        assert len(asked) == 1 and "***START OF RESPONSE***" in asked[0]

    run = store.get_run(rid)
    outcomes = {s["item_id"]: s["outcome"] for s in store.scores(rid)}
    rows = store.api_requests(rid, status="ok")
    assert run["status"] == "complete" and run["metric"] == "judged-generation"
    assert run["environment"]["api"]["judge"]["snapshot"] == "judge-model"
    assert run["environment"]["api"]["request_params"]["temperature"] == 0.8
    assert Counter(r["option_order"] for r in rows) == {"generation": 2, "judge": 2}
    assert sorted(outcomes.values()) == ["anti", "stereo"]
