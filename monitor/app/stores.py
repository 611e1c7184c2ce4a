"""Opening the store (a DuckDB file or a DuckLake) for an application function: to write,
or only to read."""

from __future__ import annotations

from pathlib import Path

from monitor.errors import UserInputError
from monitor.jobs.options import EventSink
from monitor.store.db import Store
from monitor.store.snapshot import AsOf


def open_store(db: Path | None, *, must_exist: bool = True) -> Store:
    """The store at ``db`` (default: $MONITOR_DB or results/monitor.duckdb) to write to;
    a missing file is refused unless the command creates one (an import, a merge). A lake
    URL (``ducklake:...``) is opened as it is: its catalog says whether it exists."""
    from monitor.paths import default_db_path
    from monitor.store.location import is_lake

    path = db or default_db_path()
    if must_exist and not is_lake(path) and not Path(path).exists():
        raise UserInputError(f"no database at {path}; run `bias-monitor run` first or pass --db")
    return Store.open(path)


def open_reader(db: Path | None, on_event: EventSink, as_of: AsOf | None = None) -> Store:
    """The store for a command that only reads: opened read-only, so an archived store on
    read-only media can be listed, shown, exported, compared and reported on; ``as_of``:
    a lake as it was at that snapshot (refused on a DuckDB file)."""
    return Store.for_reading(db, on_event=on_event, as_of=as_of)
