"""The API reliability layer without a server: redaction, retry decisions and waits,
bounded concurrency, budget and cost, client configuration from the environment.

Network behaviour (real 429s, timeouts, cut bodies) is tested against the real vLLM
server through the fault proxy in ``test_api_vllm_faults.py``; here the SDK's own
exception objects (built on real HTTP responses) drive the retry policy, and ``sleep``
records the waits instead of sleeping them.
"""

from __future__ import annotations

import threading
import time

import httpx2
import openai
import pytest

from monitor.backends.api_client import (
    ApiBudgetExceeded,
    ApiRejected,
    ApiRequestFailed,
    AttemptLog,
    MalformedResponse,
    Redactor,
    RequestBudget,
    UsageTotals,
    call_with_retries,
    estimate_cost,
    make_client,
    public_url,
    retry_after_seconds,
    run_bounded,
)
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.snapshots.model import ApiSettings, ApiSource

KEY = "sk-proj-DISTINCTIVE-0123456789abcdef"
REQUEST = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def status_error(code: int, headers: dict[str, str] | None = None, message: str = "nope"):
    response = httpx2.Response(code, headers=headers or {}, request=REQUEST)
    cls = {429: openai.RateLimitError, 400: openai.BadRequestError}.get(
        code, openai.InternalServerError if code >= 500 else openai.APIStatusError
    )
    return cls(message, response=response, body={"error": {"message": message}})


def failing(errors: list[BaseException], value: str = "ok"):
    """A call that raises each error in turn, then returns ``value``."""
    pending = list(errors)

    def call() -> str:
        if pending:
            raise pending.pop(0)
        return value

    return call


def test_redactor_removes_the_key_and_key_shaped_strings():
    r = Redactor([KEY])
    text = f"failed with {KEY}; header Authorization: Bearer abc.def and sk-other1234567 ok"
    out = r(text)
    assert KEY not in out and "abc.def" not in out and "sk-other1234567" not in out
    assert out.count("[REDACTED]") >= 3 and out.endswith("ok")
    assert r("api_key=hunter22&x=1") == "api_key=[REDACTED]&x=1"


def test_a_remembered_text_is_redacted_again_once_a_secret_is_added():
    """The redactor remembers short texts it has seen (a report repeats its ids thousands
    of times); a secret registered later must still reach a text seen before it."""
    secret = "DISTINCTIVE-0123456789abcdef"  # no credential shape: known or not at all
    r = Redactor()
    text = f"run failed: {secret}"
    assert r(text) == text
    assert r(text) == text  # now from the memo
    r.add(secret)
    assert r(text) == "run failed: [REDACTED]"
    long_text = "x" * 300 + secret  # past the memo's length: recomputed every time
    assert r(long_text) == r(long_text) == "x" * 300 + "[REDACTED]"


def test_public_url_drops_credentials_and_query():
    assert public_url("https://user:pw@host.example:8443/v1?api-key=x") == (
        "https://host.example:8443/v1"
    )


def test_retry_after_header_is_honoured_exactly():
    waits: list[float] = []
    log = AttemptLog()
    result = call_with_retries(
        failing([status_error(429, {"retry-after": "3"}), status_error(503)]),
        what="req",
        max_retries=5,
        redact=Redactor([KEY]),
        log=log,
        sleep=waits.append,
    )
    assert result == "ok" and log.attempts == 3
    assert 3.0 <= waits[0] <= 3.1  # the server's wait (+ at most 0.1 s jitter)
    assert 0.0 <= waits[1] <= 1.0  # backoff after the 2nd attempt: uniform in [0, 2 * 0.5]
    assert [r["error"].split(":")[0] for r in log.retries] == ["HTTP 429", "HTTP 503"]
    assert retry_after_seconds(status_error(429, {"retry-after-ms": "250"})) == 0.25


def test_backoff_grows_exponentially_with_full_jitter_and_a_cap():
    waits: list[float] = []
    with pytest.raises(ApiRequestFailed, match="failed after 9 attempts: HTTP 500"):
        call_with_retries(
            failing([status_error(500)] * 20),
            what="req",
            max_retries=8,
            redact=Redactor(),
            sleep=waits.append,
            backoff_base_s=1.0,
            backoff_max_s=10.0,
        )
    assert len(waits) == 8
    for n, w in enumerate(waits, 1):
        assert 0.0 <= w <= min(10.0, 2 ** (n - 1))
    assert len(set(waits)) > 1  # jittered, not a fixed schedule


def test_timeouts_resets_and_bad_bodies_are_retried_but_4xx_is_not():
    waits: list[float] = []
    errors = [
        openai.APITimeoutError(request=REQUEST),
        openai.APIConnectionError(request=REQUEST),
        MalformedResponse("cut short"),
    ]
    assert (
        call_with_retries(
            failing(errors), what="r", max_retries=3, redact=Redactor(), sleep=waits.append
        )
        == "ok"
    )
    assert len(waits) == 3
    with pytest.raises(ApiRejected) as exc:
        call_with_retries(
            failing([status_error(400, message=f"bad key {KEY}")]),
            what="r",
            max_retries=3,
            redact=Redactor([KEY]),
            sleep=waits.append,
        )
    assert exc.value.status_code == 400 and KEY not in str(exc.value)
    assert KEY not in exc.value.server_message and len(waits) == 3  # no retry


def test_run_bounded_never_exceeds_the_limit_and_delivers_in_flight_results():
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work(n: int) -> int:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.02)
        with lock:
            state["now"] -= 1
        if n == 5:
            raise RuntimeError("task 5 failed")
        return n * n

    got: dict[int, int] = {}
    with pytest.raises(RuntimeError, match="task 5 failed"):
        run_bounded(range(100), work, max_concurrency=3, on_result=got.__setitem__)
    assert state["peak"] == 3
    assert all(got[k] == k * k for k in got) and 5 not in got
    assert len(got) < 20  # stopped starting new tasks soon after the failure
    assert set(range(5)) <= set(got)  # everything before the failure was delivered


def test_budget_refuses_a_plan_and_stops_a_run_at_the_limit():
    budget = RequestBudget(3, "snap")
    with pytest.raises(
        ApiBudgetExceeded, match=r"needs 4 requests \(0 already sent\) but api.request_budget is 3"
    ):
        budget.check_plan(4)
    for _ in range(3):
        budget.take()
    with pytest.raises(ApiBudgetExceeded, match="used up"):
        budget.take()
    assert isinstance(ApiBudgetExceeded("x"), UserInputError)


def test_cost_estimate_and_actual_cost_use_the_snapshot_prices():
    settings = ApiSettings(usd_per_1m_input_tokens=2.5, usd_per_1m_output_tokens=10.0)
    est = estimate_cost(["x" * 400] * 10, settings, max_output_tokens=16)
    assert est.requests == 10 and est.input_tokens == 1000 + 10 * 8
    assert est.usd == pytest.approx((1080 * 2.5 + 160 * 10.0) / 1e6)
    assert estimate_cost(["x" * 400] * 10, settings, max_output_tokens=16, batch=True).usd == (
        pytest.approx(est.usd / 2)
    )
    assert "cost unknown" in estimate_cost(["x"], ApiSettings(), max_output_tokens=1).describe()
    totals = UsageTotals()
    totals.add({"input_tokens": 100, "output_tokens": 20}, attempts=2, latency_s=0.5)
    d = totals.as_dict(settings)
    assert d["usd"] == pytest.approx((100 * 2.5 + 20 * 10) / 1e6) and d["attempts"] == 2


def test_client_comes_from_the_environment_only(monkeypatch):
    src = ApiSource(type="openai-api", model="gpt-4o-2024-08-06", api_key_env="MY_KEY_VAR")
    monkeypatch.delenv("MY_KEY_VAR", raising=False)
    with pytest.raises(SnapshotUnavailable, match="set the environment variable MY_KEY_VAR"):
        make_client("snap", src, ApiSettings())
    monkeypatch.setenv("MY_KEY_VAR", KEY)
    monkeypatch.setenv("MY_BASE", "http://127.0.0.1:9999/v1")
    api = make_client(
        "snap",
        src.model_copy(update={"base_url": "http://x/v1", "base_url_env": "MY_BASE"}),
        ApiSettings(timeout_s=7.0),
    )
    assert str(api.client.base_url).startswith("http://127.0.0.1:9999/v1")
    assert api.client.max_retries == 0 and api.client.timeout == 7.0
    assert KEY not in repr(api.endpoint_url) and api.redact(KEY) == "[REDACTED]"
    azure = src.model_copy(
        update={
            "provider": "azure",
            "base_url": "https://r.openai.azure.com",
            "api_version": "2024-10-21",
        }
    )
    assert isinstance(make_client("snap", azure, ApiSettings()).client, openai.AzureOpenAI)
    with pytest.raises(UserInputError, match="api_version"):
        make_client("snap", azure.model_copy(update={"api_version": None}), ApiSettings())


def _every_pattern(text: str) -> str:
    """The redactor's shape patterns run on every text, without the trigger prefilter."""
    from monitor.redaction import _PATTERNS, MARK

    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + MARK, text)
    return text


def test_trigger_prefilter_skips_only_patterns_that_cannot_match():
    import random

    # Pieces that make or nearly make each shape, in cases and with the non-ASCII
    # characters that (?i) matches to ASCII letters (İ ı ſ K), so a prefilter that folded
    # differently from the regex engine would let a credential through.
    pieces = [
        "sk-",
        "SK-",
        "abcdef123",
        "Bearer ",
        "bEaReR\t",
        "BASIC ",
        "baſic ",
        "dXNlcjpw",
        "https://",
        "x+y.z://",
        "user:pw@",
        "@",
        "api_key",
        "API-KEY",
        "apiKey",
        "Kelvin",
        "api-\u212aey",
        "authorİzation",
        "authorızation",
        "ACCESS_TOKEN",
        "paſſword",
        "secret",
        "SECRET",
        "subscription-key",
        "=",
        ": ",
        '"',
        "'",
        "hunter22",
        " ",
        "\n",
        "é",
        "—",
        "[REDACTED]",
        "key",
        "token",
    ]
    rng = random.Random(11)
    redactor = Redactor()
    changed = 0
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        expected = _every_pattern(text)
        assert redactor(text) == expected, text
        changed += expected != text
    assert changed > 500  # the fuzz does reach the patterns


@pytest.mark.parametrize(
    "text",
    [
        *(
            form.format(name)
            for name in (
                "api-key", "api_key", "apikey", "API_KEY", "ApiKey", "x-api-key", "api-\u212aey",
                "authorization", "AUTHORIZATION", "authorİzation", "authorızation",
                "access-token", "access_token", "accesstoken", "AccessToken", "password",
                "PASSWORD", "paſſword", "secret", "SECRET", "subscription-key",
                "subscription_key", "subscriptionkey", "SubscriptionKey",
            )
            for form in ("{}=hunter22", '{{"{}": "hunter22"}}')
        ),
        "Bearer abc.def", "bearer\tabc", "BASIC dXNlcjpw", "baſic dXNlcjpw",
        "https://u:p@host", "HTTPS://u:p@host", "key sk-abcdef123",
    ],
)  # fmt: skip
def test_every_credential_shape_is_still_redacted(text):
    out = Redactor()(text)
    assert out == _every_pattern(text) and "[REDACTED]" in out
