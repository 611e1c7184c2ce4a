"""Moving a file store into a lake (``db migrate-to``): every run, score and verdict.

A team that starts a lake already has history: a DuckDB file (``make run``, imports) or
the results branch's run exports. The copy is ``db merge`` of the whole file into the lake
(``monitor.store.merge``: the file's rows are staged at the current schema in memory,
every reference checked, and written in one transaction), so the move inherits merge's
rules instead of having its own: a run already in the lake with the same content is
skipped, one with other content is refused. What ``migrate-to`` adds is the promise that
the lake becomes the same store as the file:

* it fills an empty lake only: a lake holding runs the file does not is refused before
  anything is written (adding runs to a lake in use is ``db merge``), and a lake holding
  exactly the file's runs is left as it is (a second ``migrate-to`` is a no-op);
* the source is read, never written: a file at an older schema is migrated in a
  temporary copy, so the user's file stays readable by the version that wrote it;
* afterwards every table's row count must be equal in both (detail tables included).

Run leases are not copied: a lease names a process on the file's machine (see
``schema``'s migration 4), and means nothing in a lake. The app layer
(``monitor.app.migrate_to``) then compares drift's JSON read from both stores.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from monitor.errors import DataIntegrityError, UserInputError
from monitor.store import fileformat, migrate
from monitor.store.db import Store
from monitor.store.location import FileLocation, LakeLocation
from monitor.store.merge import merge
from monitor.store.rebuild import rebuild

# Not moved: the lake's own migrations make its schema_migrations, and a lease means
# nothing outside the machine whose process holds it.
NOT_MOVED = frozenset({migrate.MIGRATIONS_TABLE, "run_leases"})

Events = Callable[[str], None]


@dataclass
class MoveReport:
    """What ``migrate-to`` moved: the runs, every moved table's row count (the same in
    the file and in the lake, checked), and whether the lake held them all already."""

    source: str
    lake: str
    runs: list[str]
    tables: dict[str, int] = field(default_factory=dict)
    already_there: bool = False

    @property
    def scores(self) -> int:
        return self.tables.get("scores", 0)

    @property
    def items(self) -> int:
        return self.tables.get("items", 0)

    def summary(self) -> str:
        what = f"{len(self.runs)} run(s), {self.scores:,} score(s), {self.items:,} item(s)"
        if self.already_there:
            return f"{self.lake} already holds the {what} of {self.source}: nothing moved"
        return f"moved {what} from {self.source} into {self.lake}"


def lake_target(url: str) -> LakeLocation:
    """The lake ``url`` names; a file path is refused (migrate-to moves into a lake)."""
    from monitor.store import location

    if not location.is_lake(url):
        raise UserInputError(
            f"db migrate-to moves a store into a lake, and {url} is a file path; give a "
            "lake URL: ducklake:sqlite:FILE or ducklake:postgres:'dbname=... host=...'"
        )
    where = location.parse(url)
    assert isinstance(where, LakeLocation)
    return where


def current_source(db: Path | str, on_event: Events) -> Path:
    """The DuckDB file to copy from, at the current schema: ``db`` itself, or a migrated
    temporary copy of it when it is older (the file is never written)."""
    from monitor.store import location

    if location.is_lake(db):
        raise UserInputError(
            f"db migrate-to copies a DuckDB file into a lake; --db {db} is a lake already"
        )
    where = location.parse(db)
    assert isinstance(where, FileLocation)
    path = where.path
    if not path.is_file():
        raise UserInputError(f"no database at {path}; pass the file store to move with --db")
    probe = Store(path, read_only=True, check_version=False)
    migrate.check_not_newer(probe.schema_version, probe.label)
    if probe._current:
        return path
    copy = Path(tempfile.mkdtemp(prefix="bias-monitor-move-")) / path.name
    atexit.register(shutil.rmtree, copy.parent, True)
    shutil.copyfile(path, copy)
    wal = path.with_name(path.name + ".wal")
    if wal.exists():
        shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
    on_event(
        f"database {path} has schema version {probe.schema_version}; moving a copy "
        f"upgraded to {migrate.latest_version()} (the file itself is left as it is)"
    )
    Store(copy)  # migrates the copy
    return copy


@contextmanager
def history_source(folder: Path, on_event: Events) -> Iterator[Path]:
    """A temporary DuckDB file rebuilt from a folder of run exports (the results
    branch's history) with ``db rebuild``'s reader and checks, for as long as the caller
    needs it: its folder is removed when the ``with`` block ends, so a long-lived process
    (a Python user calling the app layer) does not keep one copy of the history per move
    until it exits."""
    with tempfile.TemporaryDirectory(prefix="bias-monitor-move-") as folder_copy:
        copy = Path(folder_copy) / "history.duckdb"
        report = rebuild(copy, folder)
        on_event(f"read {folder}: {report.summary()}")
        yield copy


def _run_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]


def _counts(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """Row count of every table that moves (core, detail and run tables)."""
    return {
        t: int(con.execute(f'SELECT count(*) FROM "{t}"').fetchall()[0][0])
        for t in migrate.user_tables(con)
        if t not in NOT_MOVED
    }


def move(
    source: Path,
    lake: LakeLocation,
    on_event: Events,
    *,
    label: str | None = None,
    merge_from: str | None = None,
) -> MoveReport:
    """Copy the current-schema DuckDB file ``source`` (named ``label`` in messages) into
    ``lake``; see the module docstring. ``merge_from`` is what the refusal tells ``db
    merge`` to read (default: the file). Refusals (an empty file, a lake with other runs)
    write nothing."""
    con = fileformat.open_read_only(source, f"database {source}")
    try:
        runs = _run_ids(con)
        before = _counts(con)
    finally:
        con.close()
    label = label or f"database {source}"
    if not runs:
        raise UserInputError(f"{label} holds no run; there is nothing to move")
    target = Store(lake)
    try:
        with target._connect() as lake_con:
            present = _run_ids(lake_con)
        if present and present != runs:
            others = sorted(set(present) - set(runs))
            missing = len(set(runs) - set(present))
            what = (
                f"{len(others)} run(s) the file does not ({others[0]}, ...)"
                if others
                else f"only {len(present)} of its {len(runs)} runs"
            )
            raise UserInputError(
                f"{lake.label} already holds {what}; migrate-to fills an empty lake "
                f"(nothing was written); add runs to a lake in use with: bias-monitor db "
                f"merge {merge_from or source} --db LAKE_URL"
                + ("" if others else f" ({missing} run(s) to add)")
            )
        on_event(f"copying {len(runs)} run(s) from {label} into {lake.label} (one transaction)")
        merged = merge(target, [source])
        with target._connect() as lake_con:
            after = _counts(lake_con)
    finally:
        target.close()
    report = MoveReport(
        source=label,
        lake=lake.label,
        runs=runs,
        tables=before,
        already_there=not merged.runs_added,
    )
    wrong = []
    for table, rows in before.items():
        got = after.get(table)
        on_event(f"  {table}: {rows:,} row(s) in the file, {got or 0:,} in the lake")
        if got != rows:
            wrong.append(f"{table} {rows} -> {got}")
    if wrong:
        raise DataIntegrityError(
            f"{lake.label} does not hold what {label} holds after the move: {'; '.join(wrong)}"
        )
    return report
