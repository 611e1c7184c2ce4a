"""The quality gate's verdict: the one place that decides whether a run is trusted.

Every path that creates a run (local models, API models, vLLM, the Batch API, imports)
and the ``quality`` command call :func:`judge` on what the store holds, and apply the
verdict the same way (``monitor.jobs.lifecycle``): a failing run is kept as
``quarantined``, with a short reason in its notes and the whole suite result in its
validations, and is never a baseline, a trend point or a repeat.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from monitor.quality.results_suite import validate_run
from monitor.quality.suites import SuiteResult

if TYPE_CHECKING:
    from monitor.store.models import ResultFrames

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


def judge(frames: ResultFrames, *, expected_item_ids: Iterable[str] | None = None) -> GateVerdict:
    """Run the results suite on a stored run and say what its status must be."""
    return GateVerdict(validate_run(frames, expected_item_ids=expected_item_ids))
