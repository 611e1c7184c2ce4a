"""API scoring tasks: items -> prompts -> (requests answered elsewhere) -> ScoreRows.

What every chat API metric shares, whatever its family: a planned request
(``PlannedRequest``: its stable key ``<item_id>/<order>/<sample>``, the store's primary key,
so a resumed run asks only for keys not stored yet; the template id and the exact prompt,
stored with the answer), the wire request, the stored row and its way back.

Every result family brings its API metrics (the pairs' forced choice and sampling,
choice-QA's ``mc-letter``) through its scoring capability's ``api`` hook, an
:class:`ApiScoring` that says how that metric plans and reads its requests; the driver
asks :func:`api_scoring` and never names a family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monitor.backends.openai_chat import ChatRequest, ResponseRecord
from monitor.benchmarks.items import LoadedBenchmark
from monitor.metrics.forced_choice import Option, Position
from monitor.metrics.registry import METRICS
from monitor.records import ScoreRow


@dataclass(frozen=True)
class PlannedRequest:
    """One request of the plan and everything needed to read its answer."""

    key: str
    item_id: str
    order: str
    sample: int
    template_id: str
    prompt: str
    options: tuple[Option, Option]  # in presentation order

    def options_json(self) -> list[dict[str, str]]:
        return [{"side": o.side, "text": o.text, "mode": o.mode} for o in self.options]


def request_key(item_id: str, order: str, sample: int) -> str:
    return f"{item_id}/{order}/{sample}"


def chat_request(
    planned: PlannedRequest,
    *,
    method: str,
    max_tokens: int,
    temperature: float | None,
    top_logprobs: int,
    seed: int | None,
) -> ChatRequest:
    """The wire request for a planned one: forced choice (and any metric that reads
    log-probabilities) asks for top log-probabilities, sampling does not (and varies the
    seed per sample so samples can differ)."""
    if asks_logprobs(method):
        return ChatRequest(planned.key, planned.prompt, max_tokens, temperature, top_logprobs, seed)
    sample_seed = None if seed is None else seed + planned.sample
    return ChatRequest(planned.key, planned.prompt, max_tokens, temperature, None, sample_seed)


@dataclass(frozen=True)
class ApiScoring:
    """How the chat API driver asks for and reads one metric's answers.

    ``logprobs``: it asks for top log-probabilities (the start-of-run probe checks the
    model gives them); ``fallback``: the metric to score with when it does not;
    ``templates``: the prompt templates, part of the run's fingerprint; ``plan``:
    items -> their requests (keyword arguments ``option_order``, ``samples``, ``seed``);
    ``score``: (item id, its planned requests, answers by request key) -> the item's row;
    ``fingerprint``: what else the run's fingerprint holds for its benchmarks.
    """

    metric: str
    logprobs: bool
    fallback: str | None
    templates: Mapping[str, str]
    plan: Callable[..., dict[str, list[PlannedRequest]]]
    score: Callable[[str, Sequence[PlannedRequest], Mapping[str, ResponseRecord]], ScoreRow]
    # What else the run's fingerprint holds for these benchmarks (the pairs' Indic-Bias
    # prompts, when official templates are scored); None: nothing.
    fingerprint: Callable[[Sequence[LoadedBenchmark]], Mapping[str, Any]] | None = None


def api_scoring(metric: str) -> ApiScoring | None:
    """How a chat API scores ``metric``: what the metric's family supplies through its
    ``scoring.api``; None for a metric no chat API can score."""
    spec = METRICS.get(metric)
    hook = spec.family.scoring().api if spec is not None else None
    return hook(metric) if hook is not None else None


def asks_logprobs(metric: str) -> bool:
    """Does ``metric`` ask the API for top log-probabilities?"""
    scoring = api_scoring(metric)
    return scoring is not None and scoring.logprobs


def score_item(
    metric: str,
    item_id: str,
    planned: Sequence[PlannedRequest],
    records: Mapping[str, ResponseRecord],
) -> ScoreRow:
    """The item's ScoreRow once every planned request has a record, read by the metric's
    family (``ApiScoring.score``)."""
    scoring = api_scoring(metric)
    if scoring is None:
        raise ValueError(f"no API scoring for metric {metric!r}")
    return scoring.score(item_id, planned, records)


def request_row(
    planned: PlannedRequest,
    record: ResponseRecord,
    *,
    endpoint: str,
    params: dict[str, Any],
    status: str = "ok",
    error: str | None = None,
    redact: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """The ``api_requests`` row for one answered request.

    ``redact`` is applied to every string the server chose (text, model name,
    fingerprint, error), so a server that echoes a credential cannot put it in the store.
    """
    clean = redact or (lambda text: text)

    def r(value: str | None) -> str | None:
        return None if value is None else clean(value)

    raw = record.raw_subset()
    raw["model"], raw["system_fingerprint"] = r(raw["model"]), r(raw["system_fingerprint"])
    return {
        "request_key": planned.key,
        "item_id": planned.item_id,
        "option_order": planned.order,
        "sample_index": planned.sample,
        "prompt_template_id": planned.template_id,
        "prompt": planned.prompt,
        "options": planned.options_json(),
        "endpoint": endpoint,
        "request_params": params,
        "status": status,
        "response_text": r(record.text),
        "top_logprobs": record.logprobs_json(),
        "response": raw,
        "reported_model": r(record.reported_model),
        "system_fingerprint": r(record.system_fingerprint),
        "input_tokens": record.usage.get("input_tokens"),
        "output_tokens": record.usage.get("output_tokens"),
        "latency_s": record.latency_s,
        "attempts": record.attempts,
        "retries": record.retries or None,
        "error": r(error),
        "batch_id": record.batch_id,
    }


def record_from_row(row: Mapping[str, Any]) -> ResponseRecord:
    """A stored ``api_requests`` row back into a record (for a resumed run's scoring)."""
    from monitor.metrics.forced_choice import Alternative

    positions = tuple(
        Position(tok, float(lp), tuple(Alternative(a, float(b)) for a, b in top))
        for tok, lp, top in (row.get("top_logprobs") or [])
    )
    raw = row.get("response") or {}
    return ResponseRecord(
        key=row["request_key"],
        text=row.get("response_text") or "",
        positions=positions,
        reported_model=row.get("reported_model"),
        system_fingerprint=row.get("system_fingerprint"),
        usage=raw.get("usage") or {},
        finish_reason=raw.get("finish_reason"),
        response_id=raw.get("id"),
        request_id=raw.get("request_id"),
        latency_s=row.get("latency_s"),
        attempts=int(row.get("attempts") or 1),
        retries=row.get("retries") or [],
        batch_id=row.get("batch_id"),
    )
