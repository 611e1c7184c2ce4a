"""The two runs a family's comparator pairs, read once: what every comparator reads first.

Every family's ``compare`` opens the new run and its baseline from the store, diffs their
provenance and says what a score change between them can be put down to
(``ProvenanceDiff.attribution``): for a pinned local snapshot, scored twice from the same
revision, a change with only environment differences is environment drift. This is that
opening, once, so the rule "pinned local" has one home.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.drift.provenance_diff import ProvenanceDiff, diff_runs
from monitor.readmodel.models import StoredRun
from monitor.store.view import StoreView


@dataclass(frozen=True)
class RunPair:
    """The new run, its baseline and every provenance field that differs between them."""

    new: StoredRun
    old: StoredRun
    provenance: ProvenanceDiff

    @property
    def pinned_local(self) -> bool:
        """Both runs scored locally from the same revision of the snapshot (the same
        weights by construction)."""
        return (
            self.new.origin == self.old.origin == "local"
            and self.new.snapshot_revision == self.old.snapshot_revision
        )

    @property
    def attribution(self) -> str:
        """What a score change between the two runs can be put down to."""
        return self.provenance.attribution(pinned_local=self.pinned_local)


def run_pair(view: StoreView, new_run_id: str, baseline_run_id: str) -> RunPair:
    """The two runs as ``view`` stores them, with their provenance diff."""
    new, old = view.run(new_run_id), view.run(baseline_run_id)
    return RunPair(new, old, diff_runs(old.fields, new.fields))
