"""One API run's in-flight state: answers buffered for the store, the watch on which model
answers, usage totals and progress.

Answers are written before the scores computed from them, in small batches, so a kill
in between leaves answers that the next run scores without asking again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.backends.api_client import ApiModelChanged, UsageTotals
from monitor.backends.openai_chat import ResponseRecord
from monitor.jobs.api_method import Method
from monitor.jobs.hold import hold_at
from monitor.records import ScoreRow
from monitor.scoring.api_tasks import PlannedRequest, request_row, score_item
from monitor.snapshots.model import Snapshot

EventSink = Callable[[str], None]
FLUSH_EVERY = 16  # answers buffered before they are written
FLUSH_AFTER_S = 2.0  # ... or seconds since the last write


@dataclass
class ApiSession:
    """One run's in-flight state: answers buffered for the store, model/fingerprint
    watch, usage totals, progress."""

    store: Any
    run_id: str
    snapshot: Snapshot
    method: Method
    endpoint: str
    plan: dict[str, list[PlannedRequest]]
    records: dict[str, ResponseRecord]
    scored: set[str]
    on_event: EventSink
    advance: Callable[[int], None] | None
    redact: Callable[[str], str]
    reference_model: str | None = None
    fingerprints: list[str] = field(default_factory=list)
    usage: UsageTotals = field(default_factory=UsageTotals)
    pending_requests: list[dict[str, Any]] = field(default_factory=list)
    pending_scores: list[ScoreRow] = field(default_factory=list)
    last_flush: float = field(default_factory=time.monotonic)
    probe_model: str | None = None
    stored_answers: int = 0  # answers this process wrote (a test's hold point counts them)

    def check_model(self) -> None:
        """The run's model is the one its stored answers came from, else the one that
        answered the probe; a probe answered by another model stops a resumed run.

        Called first inside the run's attempt, so that refusal fails the run with its
        reason rather than leaving it running."""
        for rec in self.records.values():
            self._watch_fingerprint(rec.system_fingerprint, announce=False)
            if self.reference_model is None and rec.reported_model:
                self.reference_model = rec.reported_model
        if self.reference_model is None:
            self.reference_model = self.probe_model
        elif self.probe_model and self.probe_model != self.reference_model:
            raise ApiModelChanged(
                self.redact(
                    f"snapshot {self.snapshot.id}: the API now reports model "
                    f"{self.probe_model!r}, but this run's stored answers came from "
                    f"{self.reference_model!r}; refusing to mix two models' answers"
                )
            )

    def _watch_fingerprint(self, fp: str | None, *, announce: bool = True) -> None:
        if not fp:
            return
        fp = self.redact(fp)  # a server's string: it could carry a credential
        if fp in self.fingerprints:
            return
        self.fingerprints.append(fp)
        if announce and len(self.fingerprints) > 1:
            self.on_event(
                f"{self.snapshot.id}: system_fingerprint changed during the run "
                f"({self.fingerprints[0]} -> {fp}); recorded per request"
            )

    def _keep_request(
        self,
        planned: PlannedRequest,
        record: ResponseRecord,
        status: str = "ok",
        error: str | None = None,
    ) -> None:
        """Buffer the ``api_requests`` row of one answer (written at the next flush), with
        this run's endpoint, parameters and redaction."""
        row = request_row(
            planned,
            record,
            endpoint=self.endpoint,
            params=self.method.params(),
            status=status,
            error=error,
            redact=self.redact,
        )
        self.pending_requests.append(row)

    def on_result(self, planned: PlannedRequest, record: ResponseRecord) -> None:
        """Called on the main thread for every answer, in arrival order."""
        reported = record.reported_model
        if reported and self.reference_model and reported != self.reference_model:
            error = (
                f"snapshot {self.snapshot.id}: the API reported model {reported!r} after "
                f"{self.reference_model!r} earlier in this run (requested "
                f"{self.snapshot.source.model!r}); refusing to mix two models' answers. "
                "Stored answers are kept; rerun to resume once the served model is stable"
            )
            self._keep_request(planned, record, status="model_changed", error=error)
            self.flush()
            raise ApiModelChanged(self.redact(error))
        if reported and self.reference_model is None:
            self.reference_model = reported
        self._watch_fingerprint(record.system_fingerprint)
        self.records[planned.key] = record
        self.usage.add(record.usage, attempts=record.attempts, latency_s=record.latency_s or 0.0)
        self._keep_request(planned, record)
        self._score_if_complete(planned.item_id)
        if (
            len(self.pending_requests) >= FLUSH_EVERY
            or time.monotonic() - self.last_flush >= FLUSH_AFTER_S
        ):
            self.flush()

    def _score_if_complete(self, item_id: str) -> None:
        if item_id in self.scored:
            return
        planned = self.plan[item_id]
        if all(p.key in self.records for p in planned):
            self.pending_scores.append(
                score_item(self.method.metric, item_id, planned, self.records)
            )
            self.scored.add(item_id)
            if self.advance is not None:
                self.advance(1)

    def score_ready(self, item_ids: Sequence[str]) -> None:
        """Score items whose answers were all stored before (a kill between writes)."""
        for item_id in item_ids:
            self._score_if_complete(item_id)
        self.flush()

    def flush(self) -> None:
        """Answers first, then the scores computed from them: a kill in between leaves
        answers that the next run scores without asking again."""
        if self.pending_requests:
            self.store.add_api_requests(self.run_id, self.pending_requests)
            self.stored_answers += len(self.pending_requests)
            self.pending_requests = []
        if self.pending_scores:
            self.store.add_scores(self.run_id, self.pending_scores)
            self.pending_scores = []
        self.last_flush = time.monotonic()
        # Tests only: a kill test holds the run here once N answers are committed, so where
        # it kills does not depend on how fast the server answers (``monitor.jobs.hold``).
        hold_at("stored", self.run_id, stored=self.stored_answers)
