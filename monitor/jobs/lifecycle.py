"""One run lifecycle for every path that creates a run.

Local models, API chat/responses models, vLLM completions, the Batch API and importers
all go through :class:`RunLifecycle`:

1. **begin or resume** — a killed run of the same fingerprint is resumed with what it
   already stored; otherwise a new run is recorded with its items and exclusions. Either
   way this process then holds the run's lease (``monitor.store.leases``), refreshed by
   a heartbeat while it scores: a second process with the same configuration starts its
   own run instead of scoring into this one, and a killed owner's run stays resumable;
2. **score** inside :meth:`RunLifecycle.attempt`, which turns what goes wrong into a status:
   Ctrl-C → ``interrupted`` (re-raised), a ``MonitorError`` → ``failed`` with its reason
   (the repeat ends, the command goes on), anything else → ``failed`` and re-raised. One
   error is not a status: ``LeaseLost``, the run taken over by another process while this
   one stalled. The run is the other's now, so nothing is recorded on it (no status, no
   rows held in memory, no release) and the command stops with that error's exit code;
3. **finalise** — the run's measures are computed from its *stored* rows by its metric's
   spec, then the quality gate (``monitor.quality.gate``) decides ``complete`` or
   ``quarantined``. An import enters at this step with all its rows written at once.

So the rule "a run that fails the gate is kept, quarantined, never a baseline" lives in
one place, and an imported run is judged exactly like a scored one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime

from monitor.benchmarks.items import Exclusion, Item, LoadedBenchmark
from monitor.errors import MonitorError, UserInputError
from monitor.jobs.options import EventSink, RunOutcome
from monitor.metrics.registry import get_metric, run_measures
from monitor.quality.gate import GateVerdict, judge
from monitor.quality.history import RunHistory
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store
from monitor.store.leases import HEARTBEAT_EVERY_S, LeaseLost, Owner

Redact = Callable[[str], str]
MAX_FAILURE_CHARS = 500


def _same(text: str) -> str:
    return text


@dataclass(frozen=True)
class ImportedRun:
    """One run an importer read: its record and every row, written at once."""

    record: RunRecord
    items: Sequence[Item]
    scores: Sequence[ScoreRow]
    exclusions: Sequence[Exclusion]


@dataclass(frozen=True)
class ImportBatch:
    """What an import did with its runs: all of them, the new ones, the ones stored before."""

    run_ids: list[str]
    new: list[str]
    skipped: list[str]


@dataclass(frozen=True)
class OpenRun:
    """A run ready to be scored: its id, and the items it already holds when resumed."""

    run_id: str
    already_scored: frozenset[str]
    resumed: bool


@dataclass
class Attempt:
    """What happened inside :meth:`RunLifecycle.attempt`; ``outcome`` is set on failure."""

    run_id: str
    snapshot_id: str
    resumed_from: int
    outcome: RunOutcome | None = None

    @property
    def failed(self) -> bool:
        return self.outcome is not None


@dataclass
class RunLifecycle:
    """Creates, resumes, fails and finalises runs in one store (see the module docstring)."""

    store: Store
    on_event: EventSink = field(default=lambda _msg: None)
    owner: Owner = field(default_factory=Owner)

    # 1. begin or resume ----------------------------------------------------------------

    def open(
        self,
        *,
        fingerprint: str,
        resume: bool,
        items: Sequence[Item],
        benches: Sequence[LoadedBenchmark],
        new_record: Callable[[], RunRecord],
        resume_note: Callable[[frozenset[str]], str] | None = None,
    ) -> OpenRun:
        """Resume the latest unfinished run with ``fingerprint`` (when ``resume``), else
        begin a new one from ``new_record()`` and store its items and exclusions."""
        run_id, busy = self.store.claim_resumable(fingerprint, self.owner) if resume else (None, [])
        for lease in busy:
            self.on_event(
                f"run {lease.run_id} of the same configuration is being scored by "
                f"{lease.describe()}; this command scores its own run"
            )
        if run_id is not None:
            already = frozenset(self.store.scored_item_ids(run_id))
            note = (
                resume_note(already)
                if resume_note
                else f"resumed with {len(already)} items already stored"
            )
            self.store.set_status(run_id, "running", note)
            self.on_event(
                f"resuming run {run_id}: {len(already)} of {len(items)} items already stored"
            )
            return OpenRun(run_id, already, True)
        record = new_record()
        with self.store.session():
            self.store.begin_run(record, owner=self.owner)
            self.store.upsert_items(items)
            for b in benches:
                self.store.add_exclusions(record.run_id, b.exclusions)
        return OpenRun(record.run_id, frozenset(), False)

    # 2. score, turning errors into a status --------------------------------------------

    @contextmanager
    def attempt(
        self,
        run: OpenRun,
        snapshot_id: str,
        *,
        redact: Redact = _same,
        before_close: Callable[[], None] | None = None,
    ) -> Iterator[Attempt]:
        """Score inside this block; see the module docstring for what each error becomes.

        ``before_close`` runs first whatever happens (an API run writes the answers it
        still holds in memory); ``redact`` cleans every reason before it is stored or
        shown (an API error may quote a credential the server echoed).
        """
        state = Attempt(run.run_id, snapshot_id, len(run.already_scored))
        beating = self._heartbeat(run.run_id)
        try:
            yield state
        except LeaseLost:
            beating.set()  # another process owns the run: nothing more is written to it
            raise
        except KeyboardInterrupt:
            beating.set()
            self._close(before_close)
            self.store.set_status(
                run.run_id, "interrupted", "interrupted by the user; rerun to resume"
            )
            self.release(run.run_id)
            raise
        except Exception as exc:  # recorded, then surfaced: a run must not stay 'running'
            beating.set()
            try:
                self._close(before_close)
            finally:
                reason = redact(f"{type(exc).__name__}: {exc}")[:MAX_FAILURE_CHARS]
                self.store.set_status(run.run_id, "failed", reason)
                self.release(run.run_id)
            if not isinstance(exc, MonitorError):
                raise
            state.outcome = RunOutcome(
                snapshot_id,
                run.run_id,
                "failed",
                reason=redact(str(exc)),
                resumed_from=state.resumed_from,
            )
        else:
            beating.set()
            self._close(before_close)

    def _heartbeat(self, run_id: str) -> threading.Event:
        """Refresh this process's lease on ``run_id`` every few seconds until the returned
        event is set: long backend calls write nothing, and a silent owner looks dead."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_EVERY_S):
                # A busy store only delays this beat; the next one will do.
                with suppress(MonitorError):
                    if not self.store.heartbeat(run_id, self.owner):
                        # Taken over: the next write to the run raises LeaseLost (checked
                        # in its own transaction); beating on would only fail again.
                        return

        threading.Thread(target=beat, name=f"lease-{run_id}", daemon=True).start()
        return stop

    def release(self, run_id: str) -> None:
        """Give up this process's lease on ``run_id`` (it is finished, failed or waiting)."""
        self.store.release(run_id, self.owner)

    @staticmethod
    def _close(before_close: Callable[[], None] | None) -> None:
        if before_close is not None:
            before_close()

    # 3. finalise ----------------------------------------------------------------------

    def finalise(
        self,
        run_id: str,
        items: Sequence[Item],
        *,
        metric: str,
        snapshot_id: str,
        n_excluded: int,
        resumed_from: int = 0,
    ) -> RunOutcome:
        """Measures from what is *stored* (not what is in memory), then the gate."""
        spec = get_metric(metric)
        item_axis = {it.item_id: (it.benchmark, it.axis) for it in items}
        rows = self.store.score_rows(run_id)
        measures = run_measures(spec, rows, items)
        try:
            self.store.finish_run(
                run_id, "running", measures, n_scored=len(rows), n_excluded=n_excluded
            )
            verdict = self.gate(run_id, expected_item_ids=item_axis)
        except LeaseLost:
            raise  # taken over: the lease is another's, not this process's to give up
        except BaseException:
            self.release(run_id)  # failed to finish: no longer this process's
            raise
        self.release(run_id)  # finished
        return RunOutcome(
            snapshot_id,
            run_id,
            verdict.status,
            resumed_from=resumed_from,
            n_scored=len(rows),
            n_excluded=n_excluded,
            measures=measures,
            quality_failures=verdict.failures,
            metric=metric,
        )

    def gate(self, run_id: str, *, expected_item_ids=None) -> GateVerdict:
        """Judge a stored run and apply the verdict: the validation is appended, the run
        becomes ``complete`` or ``quarantined`` (a complete run that now fails, e.g. on a
        re-check with the ``quality`` command, is quarantined; a quarantined one that now
        passes stays quarantined until a person decides)."""
        with self.store.read() as view:
            frames = view.result_frames(run_id)
            status = view.run(run_id).status
            # The snapshot's other complete runs of this metric: a collapse of coverage or
            # a jump in refusals against them is a measurement failure.
            history = RunHistory(
                current=view.outcome_shares([run_id]),
                history=view.outcome_shares(view.gate_history_run_ids(run_id)),
            )
        verdict = judge(frames, expected_item_ids=expected_item_ids, history=history)
        self.store.add_validation(
            run_id, verdict.result.suite, verdict.result.success, verdict.result.to_dict()
        )
        if status in (verdict.status, "quarantined"):
            return verdict  # nothing to change, or un-quarantining is a person's call
        self.store.set_status(run_id, verdict.status, verdict.note())
        return verdict

    def recheck(self, run_id: str) -> GateVerdict:
        """The ``quality`` command: :meth:`gate` again, on a finished run only.

        A run still ``running`` belongs to the process scoring it (a verdict would close it
        under that process, which then dies unable to record its failure), an
        ``interrupted`` one is waiting to be resumed, and a ``failed`` one keeps its
        failure reason; none of them has results to judge yet."""
        with self.store.read() as view:
            status = view.resolve_run(run_id).status
        if status not in ("complete", "quarantined"):
            raise UserInputError(
                f"run {run_id} is {status}; quality judges finished runs only "
                "(complete or quarantined)"
            )
        return self.gate(run_id)

    # imports: all rows at once, then the same finalise ------------------------------------

    def record_imports(
        self,
        runs: Sequence[ImportedRun],
        *,
        on_imported: Callable[[int, str], None] | None = None,
    ) -> ImportBatch:
        """Every importer's loop: import each run not stored yet, skip the stored ones.

        A run a killed import left ``running`` counts as not stored: it is finished by
        :meth:`record_import`, not skipped. ``on_imported(index, run_id)`` after each new one.
        """
        ids = [run.record.run_id for run in runs]
        with self.store.read() as view:
            present = {r for r in view.existing_run_ids(ids) if view.run(r).status != "running"}
        new: list[str] = []
        for index, run in enumerate(runs):
            if run.record.run_id in present:
                continue
            self.record_import(
                run.record, items=run.items, scores=run.scores, exclusions=run.exclusions
            )
            new.append(run.record.run_id)
            if on_imported is not None:
                on_imported(index, run.record.run_id)
        return ImportBatch(ids, new, [r for r in ids if r in present])

    def record_import(
        self,
        record: RunRecord,
        *,
        items: Sequence[Item],
        scores: Sequence[ScoreRow],
        exclusions: Sequence[Exclusion],
        scored_at: datetime | None = None,
    ) -> RunOutcome:
        """Write an imported run's rows in one transaction, then finalise it like any run:
        measures from the stored rows by its metric's spec, and the quality gate.

        An import killed between that transaction and its gate left the run ``running``
        with every row in place (the write is one transaction): importing it again
        finishes it (the same finalise) instead of refusing it as already stored."""
        record.status = "running"
        with self.store.read() as view:
            present = view.existing_run_ids([record.run_id])
            stored = view.run(record.run_id).status if present else None
        if stored != "running":
            self.store.record_run(
                record, items=items, scores=scores, exclusions=exclusions, scored_at=scored_at
            )
        return self.finalise(
            record.run_id,
            items,
            metric=record.metric,
            snapshot_id=record.snapshot_id,
            n_excluded=len(exclusions),
        )
