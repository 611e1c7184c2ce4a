"""Opening the DuckDB store for an application function: to write, or only to read."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

from monitor.errors import UserInputError
from monitor.jobs.options import EventSink
from monitor.store.db import Store


def open_store(db: Path | None, *, must_exist: bool = True) -> Store:
    """The store at ``db`` (default: $MONITOR_DB or results/monitor.duckdb) to write to;
    a missing file is refused unless the command creates one (an import, a merge)."""
    from monitor.paths import default_db_path

    path = db or default_db_path()
    if must_exist and not Path(path).exists():
        raise UserInputError(f"no database at {path}; run `bias-monitor run` first or pass --db")
    return Store.open(path)


def open_reader(db: Path | None, on_event: EventSink) -> Store:
    """The store for a command that only reads: opened read-only, so an archived store on
    read-only media can be listed, shown, exported, compared and reported on."""
    return Store.for_reading(db, on_event=on_event)


def parse_day(text: str | None, option: str = "--since") -> datetime | None:
    """A ``YYYY-MM-DD`` option as midnight UTC (None stays None); a one-line
    UserInputError naming ``option`` otherwise."""
    if text is None:
        return None
    try:
        return datetime.combine(date.fromisoformat(text), datetime.min.time(), tzinfo=UTC)
    except ValueError as exc:
        raise UserInputError(f"{option} {text!r}: expected a date YYYY-MM-DD") from exc
