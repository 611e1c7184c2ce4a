"""What a caller of ``monitor.app.run`` asks for, how it hears progress, what it gets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from monitor.app.options import BackendOptions, ScoringOptions
from monitor.benchmarks.items import LoadedBenchmark
from monitor.jobs.options import EventSink, ProgressFactory, RunOutcome

M = TypeVar("M", bound=BaseModel)


def _no_progress(_label: str, _total: int) -> Callable[[int], None]:
    return lambda _n: None


@dataclass(frozen=True)
class RunRequest:
    """One ``run``: which snapshots and benchmarks, where to store, and the options.

    Empty ``snapshots`` means the snapshots marked default; empty ``benchmarks`` the
    manifest's default selection. ``family_options`` holds the families' option models
    (``PairRunOptions(panel=False)``); a family not given one runs with its defaults.
    """

    snapshots: Sequence[str] = ()
    benchmarks: Sequence[str] = ()
    db: Path | None = None
    backend: BackendOptions = field(default_factory=BackendOptions)
    scoring: ScoringOptions = field(default_factory=ScoringOptions)
    family_options: Sequence[BaseModel] = ()
    # Skip, by name, a snapshot whose kind has no metric for these benchmarks instead of
    # refusing the request (a job running one benchmark set over many snapshots).
    only_applicable: bool = False

    def family(self, model: type[M]) -> M:
        """The family option model of type ``model`` given, else its defaults."""
        return next((o for o in self.family_options if isinstance(o, model)), None) or model()


@dataclass(frozen=True)
class RunEvents:
    """How a run reports while it works (the CLI prints these; the default is silence).

    ``on_event``: a line of progress or a warning; ``on_skip``: a snapshot skipped under
    ``only_applicable``; ``progress``: opened around the scoring, it yields the factory
    that draws one progress bar per scored set.
    """

    on_event: EventSink = lambda _msg: None
    on_skip: EventSink = lambda _msg: None
    progress: Callable[[], AbstractContextManager[ProgressFactory]] = lambda: nullcontext(
        _no_progress
    )


@dataclass(frozen=True)
class RunResult:
    """The outcome of each snapshot × repeat, and what was loaded to score them.

    ``snapshots`` are the ids that applied; empty when nothing was scored (every snapshot
    skipped), in which case ``outcomes`` is empty too.
    """

    outcomes: list[RunOutcome]
    benchmarks: list[LoadedBenchmark]
    snapshots: list[str]

    @property
    def failed(self) -> bool:
        """A run failed or was quarantined by the quality gate."""
        return any(o.status in ("failed", "quarantined") for o in self.outcomes)

    @property
    def skipped(self) -> bool:
        """A snapshot was skipped (its weights cannot be obtained here)."""
        return any(o.status == "skipped" for o in self.outcomes)
