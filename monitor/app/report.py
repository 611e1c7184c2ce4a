"""``report`` as a function: drift's result over the selected runs, the report's input
built from the same read of the store, and the Markdown, HTML and JSON files written."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from monitor.app.drift import DriftSelection, compare
from monitor.app.stores import open_reader
from monitor.errors import UserInputError
from monitor.jobs.options import EventSink
from monitor.store.snapshot import AsOf


@dataclass(frozen=True)
class ReportRequest:
    """A report: which runs (as for drift), where to write it, and what it covers.

    ``since``: the start of the history shown (None: all of it). ``summary``: a file the
    Markdown is also appended to (a CI job summary), checked before anything is written.
    """

    selection: DriftSelection = field(default_factory=DriftSelection)
    db: Path | None = None
    out_dir: Path = Path("results/report")
    since: datetime | None = None
    title: str = "bias-monitor report"
    show_flips: bool = False
    summary: Path | None = None
    as_of: AsOf | None = None  # a lake read as it was at this snapshot (or time)


def report(request: ReportRequest, on_event: EventSink = lambda _msg: None) -> dict[str, Path]:
    """Write the report's files; returns each format's path (md, html, json)."""
    from monitor.report import append_summary, write_report
    from monitor.report.input import build_report_input
    from monitor.report.model import LakeSnapshot

    selection = request.selection
    with open_reader(request.db, on_event, request.as_of).read() as view:
        result = compare(view, selection, request.db)
        # -s / --run: only the snapshots asked for and their baselines' (not every
        # snapshot's trends and rates in context).
        scope = set(selection.snapshots or ()) if selection.snapshots or selection.runs else None
        data = build_report_input(
            view,
            result,
            title=request.title,
            since=request.since,
            with_flips=request.show_flips,
            scope=scope,
        )
        # On a lake, the snapshot everything above was read at: ``--as-of`` its id
        # builds this report again after more runs have landed.
        read_at = view.lake_snapshot
        if read_at is not None:
            at = LakeSnapshot(id=read_at.id, committed_at=read_at.committed_at)
            data = data.model_copy(update={"lake_snapshot": at})
    if request.summary is not None:  # refused before anything is written
        check_appendable(request.summary)
    paths = write_report(data, request.out_dir)
    if request.summary is not None:
        append_summary(data, request.summary)
    return paths


def check_appendable(path: Path) -> None:
    """Refuse a ``--summary`` that is a folder, lies in no folder, or cannot be written."""
    import os

    if path.is_dir():
        raise UserInputError(f"--summary {path}: is a folder, not a file")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UserInputError(f"--summary {path}: {folder} is not a folder")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise UserInputError(f"--summary {path}: not writable")
