"""The quality gate's verdict: the one place that decides whether a run is trusted.

Every path that creates a run (local models, API models, vLLM, the Batch API, imports)
and the ``quality`` command call :func:`judge` on what the store holds, and apply the
verdict the same way (``monitor.jobs.lifecycle``): a failing run is kept as
``quarantined``, with a short reason in its notes and the whole suite result in its
validations, and is never a baseline, a trend point or a repeat.

Two kinds of failure are judged here: a run whose stored rows break a rule of the results
suite (an impossible number, a missing score), and a run whose answers collapsed compared
with the snapshot's history (``monitor.quality.history``: coverage from ≥ 94% to 19%,
say), which is a measurement failure rather than a change in bias. The history is
handed in as counts (``RunHistory``), so this room never opens the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from monitor.quality.history import RunHistory, collapses
from monitor.quality.results_suite import validate_run
from monitor.quality.suites import FailedExpectation, SuiteResult

if TYPE_CHECKING:
    from monitor.readmodel.models import ResultFrames

MAX_NOTE_CHARS = 300


@dataclass(frozen=True)
class GateVerdict:
    """A suite result read as a run status."""

    result: SuiteResult

    @property
    def status(self) -> Literal["complete", "quarantined"]:
        return "complete" if self.result.success else "quarantined"

    @property
    def failures(self) -> list[str]:
        return self.result.reasons

    def note(self) -> str | None:
        """A short reason for ``runs.notes``: how many checks failed and the first one."""
        if self.result.success:
            return None
        note = "quality gate failed: " + self.result.summary()
        return note if len(note) <= MAX_NOTE_CHARS else note[: MAX_NOTE_CHARS - 1] + "…"


def judge(
    frames: ResultFrames,
    *,
    expected_item_ids: Iterable[str] | None = None,
    history: RunHistory | None = None,
) -> GateVerdict:
    """Run the results suite on a stored run, compare its outcome shares with the
    snapshot's ``history`` when given, and say what its status must be.

    A collapse is listed first among the failures, so the run's note names it.
    """
    result = validate_run(frames, expected_item_ids=expected_item_ids)
    if history is None:
        return GateVerdict(result)
    judged = collapses(history)
    found = judged.collapses
    # One check per measure that had a history to be compared with; none without one.
    result.checks += [
        {
            "frame": "history",
            "expectation": "outcome_shares_within_snapshot_history",
            "columns": [measure],
            "success": not any(c.measure == measure for c in found),
        }
        for measure in judged.compared
    ]
    result.failures[:0] = [
        FailedExpectation(
            frame="history",
            expectation="outcome_shares_within_snapshot_history",
            columns=(c.measure,),
            reason=c.reason(),
            unexpected_count=c.k,
            element_count=c.n,
            observed={"value": c.value, "history_low": c.low, "history_high": c.high},
        )
        for c in found
    ]
    result.success = result.success and not found
    return GateVerdict(result)
