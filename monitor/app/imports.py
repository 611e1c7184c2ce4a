"""Importing a family's published per-item predictions as runs, as a function: the
files checked, the family's importer run, and the new runs read back with their
measures (the caller renders them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.app.stores import open_store, parse_day
from monitor.errors import UserInputError
from monitor.jobs.options import EventSink
from monitor.metrics.families import ResultFamily
from monitor.readmodel.models import StoredRun
from monitor.records import Measure


@dataclass(frozen=True)
class ImportRequest:
    """One family importer's files (``family``'s ``importers`` hook names ``importer``).

    ``date``: when the predictions were made (YYYY-MM-DD; default: the importer's);
    ``suffix``: appended to each model's snapshot id (default: the importer's);
    ``columns``: only these prediction columns.
    """

    family: str
    importer: str
    files: Sequence[Path]
    date: str | None = None
    suffix: str | None = None
    columns: Sequence[str] | None = None
    db: Path | None = None


@dataclass(frozen=True)
class ImportedRuns:
    """What the importer did (``done``: run ids, new, skipped, facts per run) and the new
    runs as stored, each with its measures; ``family`` draws their tables."""

    done: Any  # the family importer's own result (run_ids, new, skipped, snapshots, facts)
    runs: list[StoredRun]
    measures: dict[str, list[Measure]]
    family: ResultFamily

    @property
    def quarantined(self) -> bool:
        """A new run failed the quality gate (the command exits 1, as a run's would)."""
        return any(r.status != "complete" for r in self.runs)


def import_predictions(
    request: ImportRequest, on_event: EventSink = lambda _msg: None
) -> ImportedRuns:
    """Import the request's files as runs; files already imported are skipped."""
    from monitor.metrics.families import FAMILIES

    family = FAMILIES[request.family]
    spec = family.hook("importers")()[request.importer]
    for f in request.files:
        if not f.is_file():
            raise UserInputError(f"{f}: not a file")
    date_text = request.date or spec.default_date
    parse_day(date_text, "--date")
    store = open_store(request.db, must_exist=False)
    done = spec.run(
        store,
        list(request.files),
        date=date_text,
        suffix=spec.default_suffix if request.suffix is None else request.suffix,
        columns=list(request.columns) if request.columns is not None else None,
        on_event=on_event,
    )
    with store.read() as view:  # the imported runs and their measures, typed
        runs = [view.run(rid) for rid in done.new]
        measures = {rid: view.measures(rid) for rid in done.new}
    return ImportedRuns(done=done, runs=runs, measures=measures, family=family)
