"""Faults on the chat path, injected by a real proxy in front of the real vLLM server.

Every fault must end either scored correctly (the same numbers as a clean run, each
request stored exactly once) or with one clear error that leaves what was stored intact
and lets the next run finish the job. Rows are counted in the store every time.
"""

from __future__ import annotations

import pytest
from _api_support import chat_snapshot, subset
from servers.fault_proxy import FaultProxy, Rule

from monitor.backends.api_client import make_client, run_bounded
from monitor.backends.openai_chat import ChatCaller
from monitor.families.pairs.api_plans import plan_requests
from monitor.jobs.options import RunOptions
from monitor.jobs.run import run_snapshot
from monitor.scoring.api_tasks import chat_request, score_item
from monitor.store.db import Store

pytestmark = pytest.mark.vllm
pytest_plugins = ["_api_fixtures"]  # fixtures: chat_server

CHAT = "/v1/chat/completions"
N_ITEMS = 6
N_REQUESTS = 2 * N_ITEMS


@pytest.fixture(scope="module")
def caste(shared_datasets, tmp_path_factory):
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MONITOR_DATA_DIR", str(tmp_path_factory.mktemp("data")))
        mp.setenv("MONITOR_DATA_MIRROR", str(shared_datasets))
        manifest = load_manifest()
        fetch(manifest, ["bhed-caste"])
        benches = load_benchmarks(["bhed-caste"], errata="current", manifest=manifest)
    return subset(benches, N_ITEMS)


@pytest.fixture(scope="module")
def reference(chat_server, caste):
    """Each item's row from direct calls, no proxy and no store."""
    snap = chat_snapshot(chat_server.base_url)
    caller = ChatCaller(make_client(snap.id, snap.source, snap.api), "chat.completions")
    plan = plan_requests(caste[0].items, option_order="both", samples=1, seed=0)
    records = {}
    run_bounded(
        [p for reqs in plan.values() for p in reqs],
        lambda p: caller.call(
            chat_request(
                p, method="forced-choice", max_tokens=16, temperature=0.0, top_logprobs=20, seed=0
            )
        ),
        max_concurrency=4,
        on_result=lambda p, r: records.__setitem__(p.key, r),
    )
    return {i: score_item("forced-choice", i, reqs, records) for i, reqs in plan.items()}


@pytest.fixture
def proxy(chat_server):
    with FaultProxy(chat_server.root) as p:
        yield p


def _run(store, proxy, caste, events=None, **api):
    snap = chat_snapshot(f"{proxy.url}/v1", **api)
    sink = events if events is not None else []
    (out,) = run_snapshot(store, snap, caste, RunOptions(), on_event=sink.append)
    return out


def _assert_scored_like_reference(store, out, reference):
    assert out.status == "complete", (out.reason, out.quality_failures)
    rows = store.api_requests(out.run_id)
    assert len(rows) == N_REQUESTS and {r["status"] for r in rows} == {"ok"}
    assert len({r["request_key"] for r in rows}) == N_REQUESTS
    scores = {s["item_id"]: s for s in store.scores(out.run_id)}
    assert set(scores) == set(reference)
    for item_id, ref in reference.items():
        assert scores[item_id]["outcome"] == ref.outcome
        assert scores[item_id]["prob_stereo"] == pytest.approx(ref.prob_stereo, abs=1e-4)
        assert scores[item_id]["prob_anti"] == pytest.approx(ref.prob_anti, abs=1e-4)
    return rows


def _retried(rows):
    return [r for r in rows if r["attempts"] > 1]


def test_429_with_retry_after_is_waited_out(proxy, caste, reference, tmp_path):
    proxy.add(Rule("status", path=CHAT, nth={3}, status=429, retry_after="2"))
    store = Store(tmp_path / "m.duckdb")
    rows = _assert_scored_like_reference(store, _run(store, proxy, caste), reference)
    (row,) = _retried(rows)
    assert row["retries"][0]["error"].startswith("HTTP 429")
    assert 2.0 <= row["retries"][0]["wait_s"] <= 2.2
    assert sum(e.client_status == 429 for e in proxy.exchanges(CHAT)) == 1


def test_500s_are_retried_with_backoff(proxy, caste, reference, tmp_path):
    proxy.add(Rule("status", path=CHAT, nth={3, 4, 5}, status=500))
    store = Store(tmp_path / "m.duckdb")
    rows = _assert_scored_like_reference(
        store, _run(store, proxy, caste, max_concurrency=1), reference
    )
    (row,) = _retried(rows)
    assert (
        row["attempts"] == 4
        and [r["error"] for r in row["retries"]] == ["HTTP 500: injected 500"] * 3
    )


def test_an_answer_slower_than_the_timeout_is_asked_again(proxy, caste, reference, tmp_path):
    proxy.add(Rule("slow", path=CHAT, nth={3}, delay_s=8.0))
    store = Store(tmp_path / "m.duckdb")
    rows = _assert_scored_like_reference(
        store, _run(store, proxy, caste, timeout_s=4.0, max_concurrency=2), reference
    )
    slow = [r for r in _retried(rows) if r["retries"][0]["error"] == "timed out"]
    assert len(slow) == 1


def test_a_body_cut_short_is_asked_again(proxy, caste, reference, tmp_path):
    proxy.add(Rule("truncate", path=CHAT, nth={3, 6}, keep_fraction=0.6))
    store = Store(tmp_path / "m.duckdb")
    rows = _assert_scored_like_reference(store, _run(store, proxy, caste), reference)
    # Two cut bodies; a retry may itself be the 6th request, so count retries, not rows.
    errors = [x["error"].split(" (")[0] for r in _retried(rows) for x in r["retries"]]
    assert errors == ["unusable response body"] * 2


def test_a_dropped_connection_is_asked_again(proxy, caste, reference, tmp_path):
    proxy.add(Rule("drop", path=CHAT, nth={4}))
    store = Store(tmp_path / "m.duckdb")
    rows = _assert_scored_like_reference(store, _run(store, proxy, caste), reference)
    (row,) = _retried(rows)
    assert row["retries"][0]["error"].startswith("connection failed")


def test_a_changed_fingerprint_is_recorded_not_fatal(proxy, caste, reference, tmp_path):
    proxy.add(Rule("rewrite", path=CHAT, from_nth=8, set_fields={"system_fingerprint": "fp-new"}))
    store = Store(tmp_path / "m.duckdb")
    events: list[str] = []
    out = _run(store, proxy, caste, events)
    rows = _assert_scored_like_reference(store, out, reference)
    run = store.get_run(out.run_id)
    fps = run["environment"]["system_fingerprints"]
    assert len(fps) == 2 and fps[1] == "fp-new" and fps[0].startswith("vllm-")
    assert "system_fingerprint changed during the run" in run["notes"]
    assert sum("fp-new" in e for e in events) == 1
    assert sum(r["system_fingerprint"] == "fp-new" for r in rows) == N_REQUESTS + 1 - 7


def test_a_model_change_mid_run_stops_and_the_next_run_finishes(proxy, caste, reference, tmp_path):
    proxy.add(Rule("rewrite", path=CHAT, from_nth=6, set_fields={"model": "other-model"}))
    store = Store(tmp_path / "m.duckdb")
    first = _run(store, proxy, caste, max_concurrency=1)
    assert first.status == "failed"
    assert "reported model 'other-model' after 'smollm2-135m-instruct'" in first.reason
    assert store.get_run(first.run_id)["status"] == "failed"
    rows = store.api_requests(first.run_id)
    by_status = {s: [r for r in rows if r["status"] == s] for s in ("ok", "model_changed")}
    assert len(by_status["ok"]) == 4 and len(by_status["model_changed"]) == 1
    assert by_status["model_changed"][0]["reported_model"] == "other-model"
    assert len({r["request_key"] for r in rows}) == len(rows) == 5
    assert len(store.scores(first.run_id)) == 2  # the two items both of whose orders came back

    proxy.clear()
    before = len(proxy.log)
    second = _run(store, proxy, caste)
    assert second.run_id == first.run_id
    _assert_scored_like_reference(store, second, reference)
    resent = [e for e in proxy.log[before:] if e.path == CHAT]
    assert len(resent) == 1 + N_REQUESTS - 4  # the probe and every request not stored ok


def test_a_server_that_stays_down_fails_clearly_and_keeps_what_it_had(
    proxy, caste, reference, tmp_path
):
    proxy.add(Rule("status", path=CHAT, from_nth=5, status=503))
    store = Store(tmp_path / "m.duckdb")
    first = _run(store, proxy, caste, max_retries=2, max_concurrency=1)
    assert first.status == "failed"
    assert "failed after 3 attempts: HTTP 503" in first.reason
    kept = store.api_requests(first.run_id)
    assert len(kept) == 3 and {r["status"] for r in kept} == {"ok"}
    proxy.clear()
    _assert_scored_like_reference(store, _run(store, proxy, caste), reference)
