"""What a scoring job is asked to do, and what it reports back to the application layer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from monitor.records import Measure

EventSink = Callable[[str], None]
ProgressFactory = Callable[[str, int], Callable[[int], None]]


@dataclass
class RunOptions:
    """What the user asked for, as every driver reads it: built by ``monitor.app`` from
    the request's option models once every input is checked (``app.run_plan``)."""

    batch_size: int | None = None
    device: str = "auto"
    dtype: str = "auto"
    repeat: int = 1
    metric: str | None = None
    seed: int = 0
    trigger: str | None = None
    resume: bool = True
    errata: str = "current"
    # The metric panel a family's local scorer fills in the same pass as the run's metric
    # (``ScoreLocal``'s ``panel`` and ``panel_metrics``, set from the family's
    # ``Run.panel``): its default metrics, and these on top of them.
    panel: bool = True
    panel_metrics: tuple[str, ...] = ()
    # Where the run is written (``provenance.RUN_ORIGINS``), and whether a pull request's
    # run may reuse a trusted run of the same measurement (``monitor.jobs.reuse``).
    origin: str = "local"
    reuse: bool = True


@dataclass
class RunOutcome:
    """One snapshot × repeat: either a stored run or a skip with its reason.

    ``status``: complete | quarantined | failed | skipped | pending (a Batch API job is
    still running; rerunning the command ingests it) | reused (a pull request's run found
    the snapshot's latest complete run trusted and of the same measurement, and scored
    nothing: ``run_id`` is that run's, ``reason`` says where it came from).
    """

    snapshot_id: str
    run_id: str | None
    status: str
    reason: str | None = None
    resumed_from: int = 0  # items already stored when a killed run was resumed
    n_scored: int = 0
    n_excluded: int = 0
    measures: list[Measure] = field(default_factory=list)
    quality_failures: list[str] = field(default_factory=list)
    metric: str | None = None  # of a stored run: which family's table shows it
