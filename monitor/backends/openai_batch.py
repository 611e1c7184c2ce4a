"""OpenAI Batch API mode: write the run's requests as JSONL, submit, poll, ingest.

For nightly runs the Batch API halves the price and moves rate limits out of the way,
at the cost of latency (up to the 24 h completion window). Everything needed to pick a
batch up again lives in the store (``api_batches``: batch id, input file, the request
keys it carries), so the process that submits and the one that ingests need not be the
same: a nightly job may submit, exit, and the next one ingest.

The lines carry exactly the body a direct request would send (``request_body``), and
the ``custom_id`` of each line is the request key, so an answer can only ever be matched
to the request that asked for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from monitor.backends.api_client import (
    ApiClient,
    ApiError,
    ApiRejected,
    MalformedResponse,
    call_with_retries,
)
from monitor.backends.openai_chat import ENDPOINT_URL, Endpoint, ResponseRecord, record_from_body

MAX_LINES = 50_000  # OpenAI's per-batch request limit
MAX_BYTES = 200 * 1024 * 1024  # and its input file size limit
COMPLETION_WINDOW = "24h"
TERMINAL_FAILURES = frozenset({"failed", "expired", "cancelled"})


def batch_jsonl(entries: Iterable[tuple[str, dict[str, Any]]], endpoint: Endpoint) -> bytes:
    """JSONL input file: one ``{"custom_id", "method", "url", "body"}`` line per request."""
    url = ENDPOINT_URL[endpoint]
    seen: set[str] = set()
    lines = []
    for custom_id, body in entries:
        if custom_id in seen:
            raise ValueError(f"batch repeats custom_id {custom_id}")
        seen.add(custom_id)
        line = {"custom_id": custom_id, "method": "POST", "url": url, "body": body}
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    if len(lines) > MAX_LINES:
        raise ValueError(f"a batch holds at most {MAX_LINES} requests, got {len(lines)}")
    data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
    if len(data) > MAX_BYTES:
        raise ValueError(f"batch input of {len(data)} bytes exceeds {MAX_BYTES}")
    return data


@dataclass(frozen=True)
class BatchOutcome:
    """One line of a batch's output or error file."""

    custom_id: str
    record: ResponseRecord | None  # None when the request failed
    error: str | None


def parse_batch_output(
    text: str, endpoint: Endpoint, *, batch_id: str, want_logprobs: bool
) -> list[BatchOutcome]:
    """Parse an output (or error) file: every line becomes a record or an error.

    A line that is not JSON, names no custom_id, or whose body is unusable is reported
    as an error for that request (when its id is known), never silently dropped.
    """
    out: list[BatchOutcome] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise MalformedResponse(f"batch {batch_id} output line {n} is not JSON") from None
        custom_id = entry.get("custom_id") if isinstance(entry, dict) else None
        if not isinstance(custom_id, str):
            raise MalformedResponse(f"batch {batch_id} output line {n} has no custom_id")
        response = entry.get("response") or {}
        error = entry.get("error")
        status = response.get("status_code")
        body = response.get("body")
        if error or status != 200 or not isinstance(body, dict):
            message = (error or {}).get("message") if isinstance(error, dict) else None
            if message is None and isinstance(body, dict):
                inner = body.get("error")
                message = inner.get("message") if isinstance(inner, dict) else None
            out.append(BatchOutcome(custom_id, None, f"HTTP {status}: {message or 'failed'}"))
            continue
        try:
            record = record_from_body(endpoint, custom_id, body, want_logprobs=want_logprobs)
        except MalformedResponse as exc:
            out.append(BatchOutcome(custom_id, None, f"unusable body: {exc}"))
            continue
        record.request_id = response.get("request_id")
        record.batch_id = batch_id
        record.attempts = 1
        out.append(BatchOutcome(custom_id, record, None))
    return out


@dataclass(frozen=True)
class BatchStatus:
    status: str  # validating | in_progress | finalizing | completed | failed | expired | ...
    output_file_id: str | None
    error_file_id: str | None
    detail: str | None


class BatchJobs:
    """Files + Batches calls through the SDK, each with the run's retry policy."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    def _retry(self, fn, what: str):
        return call_with_retries(
            fn,
            what=f"{self.api.snapshot_id} batch {what}",
            max_retries=self.api.settings.max_retries,
            redact=self.api.redact,
        )

    def submit(self, data: bytes, endpoint: Endpoint) -> tuple[str, str]:
        """Upload the input file and create the batch; returns (batch id, input file id)."""
        client = self.api.client
        try:
            upload = self._retry(
                lambda: client.files.create(file=("requests.jsonl", data), purpose="batch"),
                "upload",
            )
        except ApiRejected as exc:
            if exc.status_code in (404, 405):
                raise ApiError(
                    f"snapshot {self.api.snapshot_id}: {self.api.endpoint_url} has no Batch "
                    f"API (HTTP {exc.status_code} on /files); set batch_api = false"
                ) from exc
            raise
        batch = self._retry(
            lambda: client.batches.create(
                input_file_id=upload.id,
                endpoint=ENDPOINT_URL[endpoint],
                completion_window=COMPLETION_WINDOW,
            ),
            "create",
        )
        return batch.id, upload.id

    def status(self, batch_id: str) -> BatchStatus:
        b = self._retry(lambda: self.api.client.batches.retrieve(batch_id), "status")
        errors = getattr(getattr(b, "errors", None), "data", None) or []
        detail = "; ".join(str(getattr(e, "message", e)) for e in errors)[:300] or None
        return BatchStatus(b.status, b.output_file_id, b.error_file_id, detail)

    def download(self, file_id: str) -> str:
        return self._retry(lambda: self.api.client.files.content(file_id).text, "download")
