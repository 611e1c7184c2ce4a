"""The reliability layer every API call of a chat/responses run goes through.

A nightly run makes hundreds of requests to a service that rate-limits, fails, stalls and
occasionally answers with half a body. This module makes that survivable and accountable:

* **one client per snapshot**, from the environment only: the key from the variable the
  snapshot names (``api_key_env``), the base URL from ``base_url_env`` / ``base_url``,
  and ``AzureOpenAI`` for Azure. The SDK's own retries are switched off so that exactly
  one retry policy applies and every attempt is counted;
* **retries with exponential backoff and full jitter** (tenacity) on 408/409/429/5xx,
  timeouts, connection resets and unparseable bodies, waiting what ``Retry-After`` /
  ``retry-after-ms`` says when the server says it;
* **bounded concurrency** with a thread pool that never has more than N requests in
  flight and starts no new one after a request failed for good;
* a **request budget** and a **cost estimate** from the snapshot's prices, printed before
  a run, and the **actual usage and cost** summed from the responses after it;
* **secrets redacted** from every message this layer produces (``monitor.redaction``): the
  key and the base URL's credentials are registered when the client is built, so they
  (and their base64 forms) and anything shaped like a credential are replaced before a
  message reaches a log, an exception, the store or a report.
"""

from __future__ import annotations

import math
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from monitor import redaction
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.redaction import Redactor  # noqa: F401  (re-exported for callers and tests)
from monitor.snapshots.model import ApiSettings, ApiSource

T = TypeVar("T")
R = TypeVar("R")
EventSink = Callable[[str], None]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
RETRYABLE_STATUS = frozenset({408, 409, 429})
MAX_RETRY_AFTER_S = 300.0  # a server asking for longer is treated as a failure
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 30.0
CHARS_PER_TOKEN = 4.0  # rough English average, only for the estimate printed before a run
MESSAGE_OVERHEAD_TOKENS = 8  # chat formatting around one user message


class ApiError(SnapshotUnavailable):
    """An API snapshot could not be scored here (after retries where retrying made sense)."""


class ApiRequestFailed(ApiError):
    """A request kept failing in a retryable way until the retries ran out."""


class ApiRejected(ApiError):
    """The server refused a request for good (4xx other than 408/409/429)."""

    def __init__(self, message: str, *, status_code: int, server_message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.server_message = server_message


class ApiModelChanged(ApiError):
    """The model name the server reports changed during a run: scores would mix models."""


class ApiBudgetExceeded(UserInputError):
    """A run would need more requests than the snapshot's ``request_budget`` allows."""


class MalformedResponse(Exception):
    """A 2xx answer whose body cannot be used (cut short, not JSON, wrong shape). Retried."""


# --- configuration from the environment ---------------------------------------------------


def resolve_base_url(source: ApiSource) -> str | None:
    """``$base_url_env`` when set, else ``base_url``; None means the SDK default
    (``$OPENAI_BASE_URL`` or api.openai.com). Checked by :func:`checked_url`."""
    if source.base_url_env and os.environ.get(source.base_url_env):
        return checked_url(os.environ[source.base_url_env], f"${source.base_url_env}")
    return checked_url(source.base_url, "source.base_url") if source.base_url else None


def checked_url(url: str, field: str) -> str:
    """``url`` without a trailing slash, or one line naming ``field`` when it is not an
    http(s) URL with a host and a valid port.

    The message never quotes the URL: a malformed one may carry a password where a port
    or scheme was expected (``user:pw@host`` parses as scheme ``user``), and the
    redaction patterns only know well-formed URLs.
    """
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 (parsing the port is the check)
    except ValueError:
        raise UserInputError(
            f"{field} is not a valid URL: its host or port is malformed "
            "(write it as https://host[:port]/v1)"
        ) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise UserInputError(
            f"{field} must be an http:// or https:// URL with a host "
            "(write it as https://host[:port]/v1)"
        )
    return url.strip().rstrip("/")


def split_query(url: str | None) -> tuple[str | None, dict[str, str]]:
    """``url`` without its query string, and the query as parameters for the SDK's
    ``default_query``: the SDK appends paths to the base URL, so a query left in it would
    end up in the middle of every request URL (``/v1?token=…/chat/completions``)."""
    if not url:
        return url, {}
    parts = urlsplit(url)
    if not parts.query:
        return url, {}
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((*parts[:3], "", "")).rstrip("/"), query


def resolve_api_key(snapshot_id: str, source: ApiSource) -> str:
    """The key from ``api_key_env``; a vLLM server without ``--api-key`` takes any value.

    Never read from a file or the snapshot: a key must not be able to reach the repo.
    """
    key = os.environ.get(source.api_key_env, "").strip()
    if key:
        return key
    if source.provider == "vllm":
        return "EMPTY"
    raise SnapshotUnavailable(
        f"snapshot {snapshot_id}: set the environment variable {source.api_key_env} to the "
        "API key for this endpoint"
    )


def public_url(url: str | None) -> str:
    """A URL safe to record: no user:password part and no query string."""
    if not url:
        return DEFAULT_OPENAI_BASE_URL
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@dataclass
class ApiClient:
    """An SDK client with the things every call needs next to it."""

    client: Any  # openai.OpenAI | openai.AzureOpenAI
    model: str
    snapshot_id: str
    settings: ApiSettings
    redact: Callable[[object], str]
    endpoint_url: str  # for the record, without credentials
    provider: str


def make_client(snapshot_id: str, source: ApiSource, settings: ApiSettings) -> ApiClient:
    """Build the SDK client for an API snapshot; retries are ours, so the SDK's are off."""
    import openai

    key = resolve_api_key(snapshot_id, source)
    base_url = resolve_base_url(source)
    redaction.register(key)
    redaction.register_url(base_url)
    redaction.register_url(os.environ.get("OPENAI_BASE_URL"))
    redact = redaction.redact
    base_url, query = split_query(base_url)
    common = {
        "api_key": key,
        "timeout": settings.timeout_s,
        "max_retries": 0,
        "default_query": query or None,
    }
    if source.provider == "azure":
        if not base_url:
            raise UserInputError(
                f"snapshot {snapshot_id}: an azure source needs base_url or base_url_env "
                "(the https://<resource>.openai.azure.com endpoint)"
            )
        if not source.api_version:
            raise UserInputError(f"snapshot {snapshot_id}: an azure source needs api_version")
        client = openai.AzureOpenAI(
            azure_endpoint=base_url, api_version=source.api_version, **common
        )
    else:
        client = openai.OpenAI(base_url=base_url, **common)
    return ApiClient(
        client=client,
        model=source.model,
        snapshot_id=snapshot_id,
        settings=settings,
        redact=redact,
        endpoint_url=public_url(base_url or os.environ.get("OPENAI_BASE_URL")),
        provider=source.provider,
    )


# --- retries ------------------------------------------------------------------------------


def _status_of(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None) if _is_status_error(exc) else None


def _is_status_error(exc: BaseException) -> bool:
    import openai

    return isinstance(exc, openai.APIStatusError)


def is_retryable(exc: BaseException) -> bool:
    """429, 408, 409 and 5xx answers, timeouts, connection errors and unusable bodies."""
    import openai

    if isinstance(exc, MalformedResponse | openai.APIConnectionError):
        return True  # APITimeoutError is an APIConnectionError
    status = _status_of(exc)
    return status is not None and (status in RETRYABLE_STATUS or status >= 500)


def retry_after_seconds(exc: BaseException | None) -> float | None:
    """What the server asked us to wait (``retry-after-ms`` or ``Retry-After``: seconds or
    an HTTP date), or None."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            if divisor != 1.0:
                continue
            import email.utils

            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - time.time()
        if math.isfinite(seconds):
            return max(0.0, seconds)
    return None


@dataclass
class AttemptLog:
    """What happened to one logical request: attempts made and why each retry was made."""

    attempts: int = 0
    retries: list[dict[str, Any]] = field(default_factory=list)


class _Wait:
    """tenacity wait: the server's Retry-After when given (never less), else exponential
    backoff with full jitter (AWS "full jitter": uniform in [0, min(cap, base * 2^n)])."""

    def __init__(self, base: float, cap: float, rng: random.Random) -> None:
        self.base, self.cap, self.rng = base, cap, rng

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        after = retry_after_seconds(exc)
        if after is not None:
            return min(after, MAX_RETRY_AFTER_S) + self.rng.uniform(0, 0.1)
        ceiling = min(self.cap, self.base * 2 ** (state.attempt_number - 1))
        return self.rng.uniform(0, ceiling)


def describe_failure(exc: BaseException, redact: Callable[[object], str]) -> str:
    """One line about a failed attempt: HTTP status and the server's own message, or the
    kind of connection failure. Redacted; never includes the request."""
    import openai

    status = _status_of(exc)
    if status is not None:
        return redact(f"HTTP {status}: {server_message(exc)}")
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return redact(f"connection failed ({type(cause).__name__ if cause else 'unknown'})")
    if isinstance(exc, MalformedResponse):
        return redact(f"unusable response body ({exc})")
    return redact(f"{type(exc).__name__}: {exc}")


def server_message(exc: BaseException, *, sdk_text: bool = True) -> str:
    """The server's error message, first line, at most 200 characters: the body's
    ``message`` (or ``error.message``); without one, the SDK's own text of the error
    (``sdk_text``), else the error's type. Never the request."""
    body = getattr(exc, "body", None)
    msg = body.get("message") if isinstance(body, dict) else None
    if not isinstance(msg, str) and isinstance(body, dict):
        inner = body.get("error")
        msg = inner.get("message") if isinstance(inner, dict) else None
    if not isinstance(msg, str):
        msg = (getattr(exc, "message", None) if sdk_text else None) or type(exc).__name__
    lines = str(msg).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:200]


def call_with_retries(
    fn: Callable[[], T],
    *,
    what: str,
    max_retries: int,
    redact: Callable[[object], str],
    log: AttemptLog | None = None,
    on_retry: EventSink | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    backoff_base_s: float = BACKOFF_BASE_S,
    backoff_max_s: float = BACKOFF_MAX_S,
) -> T:
    """Call ``fn`` until it succeeds, a non-retryable error occurs, or ``max_retries``
    retries are used up. Failures surface as one redacted line (``ApiRequestFailed`` /
    ``ApiRejected``) with the original exception chained for debugging."""
    log = log if log is not None else AttemptLog()

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait_s = state.next_action.sleep if state.next_action else 0.0
        reason = describe_failure(exc, redact) if exc else "?"
        log.retries.append({"attempt": state.attempt_number, "error": reason, "wait_s": wait_s})
        if on_retry is not None:
            on_retry(f"{what}: {reason}; retry {state.attempt_number} in {wait_s:.1f}s")

    def attempt() -> T:
        log.attempts += 1
        return fn()

    retrying = Retrying(
        retry=retry_if_exception(is_retryable),
        stop=stop_after_attempt(max(0, max_retries) + 1),
        wait=_Wait(backoff_base_s, backoff_max_s, rng or random.Random()),
        before_sleep=before_sleep,
        sleep=sleep,
        reraise=True,
    )
    try:
        return retrying(attempt)
    except Exception as exc:
        reason = describe_failure(exc, redact)
        status = _status_of(exc)
        if is_retryable(exc):
            raise ApiRequestFailed(
                redact(f"{what} failed after {log.attempts} attempts: {reason}")
            ) from exc
        if status is not None:
            raise ApiRejected(
                redact(f"{what} was rejected: {reason}"),
                status_code=status,
                server_message=redact(server_message(exc)),
            ) from exc
        raise


# --- budget and cost ----------------------------------------------------------------------


class RequestBudget:
    """Counts requests sent in a run (retries included) against ``request_budget``."""

    def __init__(self, limit: int | None, snapshot_id: str) -> None:
        self.limit, self.snapshot_id = limit, snapshot_id
        self.used = 0
        self._lock = threading.Lock()

    def check_plan(self, needed: int) -> None:
        """Refuse, before anything is sent, a run that needs more than the budget."""
        if self.limit is not None and self.used + needed > self.limit:
            raise ApiBudgetExceeded(
                f"snapshot {self.snapshot_id}: this run needs {needed} requests "
                f"({self.used} already sent) but api.request_budget is {self.limit}; "
                "raise it or score fewer benchmarks"
            )

    def take(self, n: int = 1) -> None:
        with self._lock:
            if self.limit is not None and self.used + n > self.limit:
                raise ApiBudgetExceeded(
                    f"snapshot {self.snapshot_id}: api.request_budget of {self.limit} "
                    "requests used up (retries count); the run stopped and can be resumed"
                )
            self.used += n


@dataclass(frozen=True)
class CostEstimate:
    """What a run is expected to cost, computed before any request is sent."""

    requests: int
    input_tokens: int  # estimated from prompt length
    output_tokens_max: int  # requests x max tokens: an upper bound
    usd: float | None  # None when the snapshot names no prices

    def describe(self) -> str:
        cost = f"~${self.usd:.4f}" if self.usd is not None else "cost unknown (no prices set)"
        return (
            f"{self.requests} requests, ~{self.input_tokens} input tokens, "
            f"<= {self.output_tokens_max} output tokens; {cost}"
        )


def price(settings: ApiSettings, input_tokens: float, output_tokens: float) -> float | None:
    if settings.usd_per_1m_input_tokens is None or settings.usd_per_1m_output_tokens is None:
        return None
    return (
        input_tokens * settings.usd_per_1m_input_tokens
        + output_tokens * settings.usd_per_1m_output_tokens
    ) / 1e6


def estimate_cost(
    prompts: Iterable[str], settings: ApiSettings, *, max_output_tokens: int, batch: bool = False
) -> CostEstimate:
    """Estimate from prompt lengths (~4 characters a token plus chat framing). The Batch
    API bills half price, which ``batch`` applies."""
    n = 0
    chars = 0
    for prompt in prompts:
        n += 1
        chars += len(prompt)
    tokens_in = math.ceil(chars / CHARS_PER_TOKEN) + n * MESSAGE_OVERHEAD_TOKENS
    tokens_out = n * max_output_tokens
    usd = price(settings, tokens_in, tokens_out)
    if usd is not None and batch:
        usd /= 2
    return CostEstimate(n, tokens_in, tokens_out, usd)


@dataclass
class UsageTotals:
    """Token usage summed over the responses of a run."""

    requests: int = 0
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    latency_s: float = 0.0

    def add(self, usage: dict[str, Any] | None, *, attempts: int, latency_s: float) -> None:
        self.requests += 1
        self.attempts += attempts
        self.latency_s += latency_s
        u = usage or {}
        self.input_tokens += int(u.get("input_tokens") or 0)
        self.output_tokens += int(u.get("output_tokens") or 0)
        self.reasoning_tokens += int(u.get("reasoning_tokens") or 0)

    def as_dict(self, settings: ApiSettings, *, batch: bool = False) -> dict[str, Any]:
        usd = price(settings, self.input_tokens, self.output_tokens)
        if usd is not None and batch:
            usd /= 2
        return {
            "requests": self.requests,
            "attempts": self.attempts,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "usd": usd,
            "mean_latency_s": round(self.latency_s / self.requests, 4) if self.requests else None,
        }


# --- bounded concurrency ------------------------------------------------------------------


def run_bounded(
    tasks: Iterable[T],
    fn: Callable[[T], R],
    *,
    max_concurrency: int,
    on_result: Callable[[T, R], None],
) -> int:
    """Run ``fn`` over ``tasks`` with at most ``max_concurrency`` in flight.

    ``on_result`` runs on the calling thread (so it may write to the store) as results
    arrive. After a task fails, no new task starts; the ones in flight finish and their
    results are still delivered, then the first failure is raised. Returns the number of
    tasks completed.
    """
    limit = max(1, max_concurrency)
    it: Iterator[T] = iter(tasks)
    done_count = 0
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=limit, thread_name_prefix="api") as pool:
        running: dict[Future[R], T] = {}

        def fill() -> None:
            while failure is None and len(running) < limit:
                task = next(it, _END)
                if task is _END:
                    return
                running[pool.submit(fn, task)] = task  # type: ignore[arg-type]

        fill()
        while running:
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                task = running.pop(future)
                exc = future.exception()
                if exc is not None:
                    failure = failure or exc
                    continue
                try:
                    on_result(task, future.result())
                except Exception as result_exc:  # e.g. the model changed: stop, keep draining
                    failure = failure or result_exc
                    continue
                done_count += 1
            fill()
    if failure is not None:
        raise failure
    return done_count


_END = object()
