"""Chat Completions and Responses API callers that return plain response records.

A caller knows how to turn one prompt into a request body for its endpoint, send it
through the reliability layer (``api_client``), and read back what a forced-choice or
sampling scorer needs: the text, every generated token with its top alternatives, the
model name the server reported, ``system_fingerprint`` and token usage. It knows nothing
about stereotypes; ``monitor.scoring.api_tasks`` builds the prompts and reads the records.

The body is parsed from the raw HTTP text rather than through the SDK's models, so that
a body cut short (a proxy or load balancer dropping the tail) is caught as unusable and
retried, instead of half-parsing. The same ``request_body`` is what the Batch API mode
writes into its JSONL, so a batch request and a direct one are byte-for-byte the same ask.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypedDict, Unpack

from monitor.backends.api_client import (
    ApiClient,
    ApiRejected,
    AttemptLog,
    MalformedResponse,
    RequestBudget,
    call_with_retries,
)
from monitor.metrics.forced_choice import Alternative, Position

Endpoint = Literal["chat.completions", "responses"]
ENDPOINT_URL: dict[str, str] = {
    "chat.completions": "/v1/chat/completions",
    "responses": "/v1/responses",
}
PROBE_PROMPT = "Reply with one word: what colour is a clear daytime sky?"


@dataclass(frozen=True)
class ChatRequest:
    """One prompt to send. ``temperature`` None leaves it out (reasoning models reject it)."""

    key: str
    prompt: str
    max_tokens: int
    temperature: float | None = 0.0
    top_logprobs: int | None = None  # None: no log-probabilities asked for
    seed: int | None = None

    def params(self) -> dict[str, Any]:
        """The sampling parameters, as recorded with the request."""
        return {
            "temperature": self.temperature,
            "logprobs": self.top_logprobs is not None,
            "top_logprobs": self.top_logprobs,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }


# The stored ``response`` object: its key (the response body's name) -> the record's field.
RAW_FIELDS = {
    "id": "response_id",
    "model": "reported_model",
    "system_fingerprint": "system_fingerprint",
    "usage": "usage",
    "finish_reason": "finish_reason",
    "request_id": "request_id",
}


@dataclass
class ResponseRecord:
    """What came back for one request, reduced to plain values."""

    key: str
    text: str
    positions: tuple[Position, ...]
    reported_model: str | None
    system_fingerprint: str | None
    usage: dict[str, int]  # input_tokens, output_tokens, total_tokens, reasoning_tokens
    finish_reason: str | None
    response_id: str | None
    request_id: str | None = None
    latency_s: float | None = None
    attempts: int = 1
    retries: list[dict[str, Any]] = field(default_factory=list)
    batch_id: str | None = None

    def logprobs_json(self) -> list[Any] | None:
        """Positions as compact JSON: [[token, logprob, [[alt, logprob], ...]], ...]."""
        if not self.positions:
            return None
        return [[p.token, p.logprob, [[a.token, a.logprob] for a in p.top]] for p in self.positions]

    def raw_subset(self) -> dict[str, Any]:
        """The response's own fields as a stored row keeps them, under the body's names."""
        return {key: getattr(self, name) for key, name in RAW_FIELDS.items()}


def request_body(endpoint: Endpoint, model: str, req: ChatRequest) -> dict[str, Any]:
    """The JSON body for ``endpoint`` (also what a Batch API line carries)."""
    if endpoint == "chat.completions":
        body: dict[str, Any] = {
            "model": model,
            "messages": [{"role": "user", "content": req.prompt}],
            "max_completion_tokens": req.max_tokens,
        }
        if req.top_logprobs is not None:
            body["logprobs"] = True
            body["top_logprobs"] = req.top_logprobs
        if req.seed is not None:
            body["seed"] = req.seed
    else:
        body = {"model": model, "input": req.prompt, "max_output_tokens": req.max_tokens}
        if req.top_logprobs is not None:
            body["top_logprobs"] = req.top_logprobs
            body["include"] = ["message.output_text.logprobs"]
    if req.temperature is not None:
        body["temperature"] = req.temperature
    return body


# --- parsing ------------------------------------------------------------------------------


def _positions(entries: Any) -> tuple[Position, ...]:
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise MalformedResponse("logprobs content is not a list")
    out = []
    for e in entries:
        if not isinstance(e, dict) or not isinstance(e.get("token"), str):
            raise MalformedResponse("a logprobs entry has no token")
        top = e.get("top_logprobs") or []
        if not isinstance(top, list):
            raise MalformedResponse("top_logprobs is not a list")
        alts = tuple(
            Alternative(str(a.get("token", "")), float(a.get("logprob", float("-inf"))))
            for a in top
            if isinstance(a, dict)
        )
        out.append(Position(e["token"], float(e.get("logprob", float("-inf"))), alts))
    return tuple(out)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def parse_chat_completion(data: Any) -> dict[str, Any]:
    """Fields of a Chat Completions body; ``MalformedResponse`` when the shape is wrong."""
    if not isinstance(data, dict):
        raise MalformedResponse("body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("no choices")
    choice = choices[0]
    message = choice.get("message") or {}
    content = message.get("content") if isinstance(message, dict) else None
    logprobs = choice.get("logprobs")
    return _record_fields(
        data,
        content if isinstance(content, str) else "",
        _positions(logprobs.get("content") if isinstance(logprobs, dict) else None),
        ("prompt_tokens", "completion_tokens", "completion_tokens_details"),
        choice.get("finish_reason"),
    )


def parse_responses(data: Any) -> dict[str, Any]:
    """Fields of a Responses API body (text and logprobs of every output_text part)."""
    if not isinstance(data, dict):
        raise MalformedResponse("body is not a JSON object")
    output = data.get("output")
    if not isinstance(output, list):
        raise MalformedResponse("no output list")
    texts: list[str] = []
    positions: list[Position] = []
    for item in output:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue  # reasoning summaries and tool calls carry no answer text
        for part in item.get("content") or []:
            if isinstance(part, dict) and part.get("type") == "output_text":
                texts.append(str(part.get("text") or ""))
                positions.extend(_positions(part.get("logprobs")))
    incomplete = data.get("incomplete_details") or {}
    return _record_fields(
        data,
        "".join(texts),
        tuple(positions),
        ("input_tokens", "output_tokens", "output_tokens_details"),
        incomplete.get("reason") or data.get("status"),
    )


def _record_fields(
    data: dict[str, Any],
    text: str,
    positions: tuple[Position, ...],
    usage_keys: tuple[str, str, str],
    finish_reason: Any,
) -> dict[str, Any]:
    """A ``ResponseRecord``'s fields from either endpoint's body, given what differs:
    the answer's text and positions, the names ``usage_keys`` of its input and output
    token counts and of the object that holds its reasoning tokens, and why it ended."""
    usage = data.get("usage") or {}
    details = usage.get(usage_keys[2]) or {}
    return {
        "text": text,
        "positions": positions,
        "reported_model": data.get("model") if isinstance(data.get("model"), str) else None,
        "system_fingerprint": data.get("system_fingerprint"),
        "usage": {
            "input_tokens": _int(usage.get(usage_keys[0])),
            "output_tokens": _int(usage.get(usage_keys[1])),
            "total_tokens": _int(usage.get("total_tokens")),
            "reasoning_tokens": _int(details.get("reasoning_tokens")),
        },
        "finish_reason": finish_reason,
        "response_id": data.get("id"),
    }


PARSERS: dict[str, Callable[[Any], dict[str, Any]]] = {
    "chat.completions": parse_chat_completion,
    "responses": parse_responses,
}


def record_from_body(
    endpoint: Endpoint, key: str, data: Any, *, want_logprobs: bool
) -> ResponseRecord:
    """A ``ResponseRecord`` from a parsed body; a logprobs request answered without any
    is unusable (``MalformedResponse``), never silently scored as 'no option found'."""
    fields = PARSERS[endpoint](data)
    if want_logprobs and not any(p.top for p in fields["positions"]):
        raise MalformedResponse("log-probabilities were requested but none came back")
    return ResponseRecord(key=key, **fields)


# --- calling ------------------------------------------------------------------------------


class ChatCaller:
    """Sends ``ChatRequest``s to one endpoint of one API snapshot."""

    def __init__(
        self,
        api: ApiClient,
        endpoint: Endpoint,
        *,
        budget: RequestBudget | None = None,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.api = api
        self.endpoint: Endpoint = endpoint
        self.budget = budget
        self.on_event = on_event

    @property
    def url_path(self) -> str:
        return ENDPOINT_URL[self.endpoint]

    def body(self, req: ChatRequest) -> dict[str, Any]:
        return request_body(self.endpoint, self.api.model, req)

    def _send(self, body: dict[str, Any]) -> tuple[str, Any]:
        client = self.api.client
        if self.endpoint == "chat.completions":
            raw = client.chat.completions.with_raw_response.create(**body)
        else:
            raw = client.responses.with_raw_response.create(**body)
        return raw.text, raw.headers

    def call(self, req: ChatRequest, *, require_logprobs: bool = True) -> ResponseRecord:
        """One request with retries; the record of the attempt that succeeded.

        With ``require_logprobs`` a request that asked for top log-probabilities and got
        none back is unusable and retried, never scored as "no option found".
        """
        log = AttemptLog()
        body = self.body(req)
        timing: dict[str, float] = {}

        def once() -> ResponseRecord:
            if self.budget is not None:
                self.budget.take()
            started = time.perf_counter()
            text, headers = self._send(body)
            timing["latency"] = time.perf_counter() - started
            try:
                data = json.loads(text)
            except ValueError:
                raise MalformedResponse("body is not valid JSON (cut short?)") from None
            record = record_from_body(
                self.endpoint,
                req.key,
                data,
                want_logprobs=require_logprobs and req.top_logprobs is not None,
            )
            record.request_id = headers.get("x-request-id") if headers is not None else None
            return record

        record = call_with_retries(
            once,
            what=f"{self.api.snapshot_id} {self.endpoint} request {req.key}",
            max_retries=self.api.settings.max_retries,
            redact=self.api.redact,
            log=log,
            on_retry=self.on_event,
        )
        record.latency_s = round(timing.get("latency", 0.0), 4)
        record.attempts = log.attempts
        record.retries = log.retries
        return record


@dataclass(frozen=True)
class ProbeResult:
    """Whether the model returns top log-probabilities, and the evidence."""

    accepted: bool
    detail: str
    reported_model: str | None = None
    system_fingerprint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The probe as a run records it: its fields, ``accepted`` named for what it says."""
        out = asdict(self)
        return {"logprobs_accepted": out.pop("accepted"), **out}


# How servers say a model gives no log-probabilities (OpenAI's reasoning models:
# "Unsupported parameter: 'logprobs' is not supported with this model.").
LOGPROBS_UNSUPPORTED = re.compile(r"(?i)\b(top_)?log[ _-]?probs?\b|log[- ]probabilit")


def probe_logprobs(caller: ChatCaller, *, top_logprobs: int, max_tokens: int) -> ProbeResult:
    """Ask one harmless question with ``top_logprobs``: a 400/422 answer that names
    log-probabilities, or an answer without them, means this model cannot be scored by
    forced choice.

    Every other failure is raised — a wrong key ("Incorrect API key", 401), a 400 about
    something else, rate limits past the retries, outages: they say nothing about
    log-probability support and must fail the run with their reason, never silently
    switch its method.
    """
    req = ChatRequest(
        key="probe/logprobs", prompt=PROBE_PROMPT, max_tokens=max_tokens, top_logprobs=top_logprobs
    )
    try:
        record = caller.call(req, require_logprobs=False)
    except ApiRejected as exc:
        if exc.status_code in (400, 422) and LOGPROBS_UNSUPPORTED.search(exc.server_message):
            return ProbeResult(False, f"HTTP {exc.status_code}: {exc.server_message}")
        raise
    n = max((len(p.top) for p in record.positions), default=0)
    if n == 0:
        return ProbeResult(
            False,
            "the response carried no log-probabilities",
            record.reported_model,
            record.system_fingerprint,
        )
    return ProbeResult(
        True,
        f"{n} alternatives per position",
        record.reported_model,
        record.system_fingerprint,
    )


class CallerHooks(TypedDict, total=False):
    """What a caller is handed besides its client (``ChatCaller``'s keywords): the run's
    request budget and where its events go."""

    budget: RequestBudget | None
    on_event: Callable[[str], None] | None


def chat_completions_caller(api: ApiClient, **hooks: Unpack[CallerHooks]) -> ChatCaller:
    """The backend of kind ``openai-chat``: a caller of ``/v1/chat/completions``."""
    return ChatCaller(api, "chat.completions", **hooks)


def responses_caller(api: ApiClient, **hooks: Unpack[CallerHooks]) -> ChatCaller:
    """The backend of kind ``openai-responses``: a caller of ``/v1/responses``."""
    return ChatCaller(api, "responses", **hooks)
