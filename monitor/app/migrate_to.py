"""``db migrate-to`` as a function: move a file store (or the results branch's run exports)
into a lake, then prove the lake answers as the file did.

The copy and its row counts are the store's (``monitor.store.migrate_to``). What a user
relies on is what the stores say, so the move is checked the way the issue asks: drift
(each snapshot's latest complete run against its previous one, the command's defaults)
is read from the file and from the lake, rendered by the caller as ``drift --format json``
prints it, and the two texts must be equal.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from monitor.app.drift import DriftOutcome, DriftRequest, drift
from monitor.errors import DataIntegrityError, UserInputError
from monitor.jobs.options import EventSink
from monitor.store import migrate_to as moving

DriftRenderer = Callable[[DriftOutcome], str]


@dataclass(frozen=True)
class MoveOutcome:
    """The move (runs, row counts per table) and the drift check: how many pairs of runs
    drift compared, equal in both stores, or the reason drift gave none (equal too)."""

    report: moving.MoveReport
    drift_pairs: int
    drift_note: str | None = None


def migrate_to(
    lake_url: str,
    db: Path | None,
    render: DriftRenderer,
    *,
    from_export: Path | None = None,
    runs_per_commit: int = moving.RUNS_PER_COMMIT,
    on_event: EventSink = lambda _msg: None,
) -> MoveOutcome:
    """Move the file store ``db`` (default: $MONITOR_DB or results/monitor.duckdb), or
    the run exports under ``from_export``, into the lake ``lake_url``, ``runs_per_commit``
    runs a lake commit (a rerun finishes an interrupted move); raise
    ``DataIntegrityError`` when the lake then reads differently from the source."""
    from monitor.paths import default_db_path

    lake = moving.lake_target(lake_url)
    # A temporary source (the history rebuilt, an older file upgraded) goes when the move
    # is done, not when the process exits.
    with ExitStack() as temporary:
        if from_export is not None:
            source = temporary.enter_context(moving.history_source(from_export, on_event))
            label: str | None = f"the run exports under {from_export}"
            merge_from: str | None = f"{from_export}/*"
        else:
            given = db or default_db_path()
            source = temporary.enter_context(moving.current_source(given, on_event))
            # Named as the user gave it: ``source`` may be a temporary upgraded copy.
            label = f"database {given}"
            merge_from = str(given)
        report = moving.move(
            source,
            lake,
            on_event,
            label=label,
            merge_from=merge_from,
            runs_per_commit=runs_per_commit,
        )
        before, pairs = _drift_text(source, render)
    after, _ = _drift_text(Path(lake.url), render)
    if before != after:
        raise DataIntegrityError(
            f"drift --format json reads differently from {report.lake} than from "
            f"{report.source} after the move (the lake holds the copied runs); compare "
            "`bias-monitor drift --format json` on both"
        )
    on_event(f"drift --format json: the same from both ({pairs} pair(s) of runs)")
    note = before if pairs == 0 and not before.startswith("{") else None
    return MoveOutcome(report, pairs, note)


def _drift_text(db: Path, render: DriftRenderer) -> tuple[str, int]:
    """Drift's default comparison of the store at ``db`` as the command prints it, and
    how many pairs it compared; a refusal (no complete run) is its message."""
    try:
        done = drift(DriftRequest(db=db))
    except UserInputError as exc:
        return str(exc), 0
    return render(done), len(done.result.pairs)
