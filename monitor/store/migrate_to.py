"""Moving a file store into a lake (``db migrate-to``): every run, score and verdict.

A team that starts a lake already has history: a DuckDB file (``make run``, imports) or
the results branch's run exports. The copy runs inside the lake's own DuckDB connection:
the file is attached read-only and each table's rows go in by ``INSERT ... SELECT``, a
chunk of runs (``runs_per_commit``, 200 by default) per lake commit, so DuckDB streams
them and memory stays bounded whatever the file's size (``db merge`` stages a whole shard
as Arrow tables: 1.30 GB at 1.04M score rows). The promise is that the lake becomes the
same store as the file:

* it fills an empty lake only: a lake holding runs the file does not is refused before
  anything is written (adding runs to a lake in use is ``db merge``), and a lake holding
  exactly the file's runs is left as it is (a second ``migrate-to`` is a no-op);
* an interrupted move is finished by running it again: a chunk is one commit, so the
  lake holds whole runs only, and the runs it holds already are checked against the
  file (``db merge``'s rule: the immutable tables equal, else refused) and skipped;
* the source is read, never written: a file at an older schema is migrated in a
  temporary copy, so the user's file stays readable by the version that wrote it;
* afterwards every table's row count must be equal in both (detail tables included).

Run leases are not copied: a lease names a process on the file's machine (see
``schema``'s migration 4), and means nothing in a lake. The app layer
(``monitor.app.migrate_to``) then compares drift's JSON read from both stores.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from monitor.errors import DataIntegrityError, UserInputError
from monitor.store import details, fileformat, migrate, sql
from monitor.store.db import Store
from monitor.store.location import FileLocation, LakeLocation
from monitor.store.merge import IMMUTABLE_TABLES, LIFECYCLE_COLUMNS
from monitor.store.rebuild import rebuild

# Not moved: the lake's own migrations make its schema_migrations, and a lease means
# nothing outside the machine whose process holds it.
NOT_MOVED = frozenset({migrate.MIGRATIONS_TABLE, "run_leases"})
# Made by the lake's own migrations (the family registry): counted, never copied.
MADE_BY_MIGRATIONS = frozenset({"detail_tables"})
RUNS_PER_COMMIT = 200  # as bench/store_lake.py copies: one lake commit per 200 runs
SOURCE = "migrate_source"  # the file's alias inside the lake's connection
CHUNK = "temp.migrate_chunk"  # the run ids of the chunk being copied or checked

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
    # Runs found in the lake already, checked and skipped (an interrupted move's).
    resumed: int = 0

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
        done = f"moved {what} from {self.source} into {self.lake}"
        if self.resumed:
            done += f" ({self.resumed} run(s) of them were there already, from an earlier move)"
        return done


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


@contextmanager
def current_source(db: Path | str, on_event: Events) -> Iterator[Path]:
    """The DuckDB file to copy from, at the current schema, for as long as the caller
    needs it: ``db`` itself, or a migrated temporary copy of it when it is older (the
    file is never written). The copy's folder is removed when the ``with`` block ends,
    as ``history_source``'s is, so a long-lived process keeps no copy per move."""
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
        yield path
        return
    folder = Path(tempfile.mkdtemp(prefix="bias-monitor-move-"))
    try:
        copy = folder / path.name
        shutil.copyfile(path, copy)
        wal = path.with_name(path.name + ".wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + ".wal"))
        on_event(
            f"database {path} has schema version {probe.schema_version}; moving a copy "
            f"upgraded to {migrate.latest_version()} (the file itself is left as it is)"
        )
        Store(copy)  # migrates the copy
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)


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
    runs_per_commit: int = RUNS_PER_COMMIT,
) -> MoveReport:
    """Copy the current-schema DuckDB file ``source`` (named ``label`` in messages) into
    ``lake``, ``runs_per_commit`` runs a lake commit; see the module docstring.
    ``merge_from`` is what the refusal tells ``db merge`` to read (default: the file).
    Refusals (an empty file, a lake with other runs) write nothing."""
    if runs_per_commit < 1:
        raise UserInputError(f"--runs-per-commit must be 1 or more, not {runs_per_commit}")
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
        with target._connect(read_only=False) as lake_con:
            present = _run_ids(lake_con)
            others = sorted(set(present) - set(runs))
            if others:
                raise UserInputError(
                    f"{lake.label} already holds {len(others)} run(s) the file does not "
                    f"({others[0]}, ...); migrate-to fills an empty lake (nothing was "
                    f"written); add runs to a lake in use with: bias-monitor db merge "
                    f"{merge_from or source} --db LAKE_URL"
                )
            lake_con.execute(f"ATTACH {_quoted(str(source))} AS {SOURCE} (READ_ONLY)")
            try:
                _check_present(lake_con, sorted(present), label, lake.label, runs_per_commit)
                held = set(present)
                todo = [r for r in runs if r not in held]
                _copy(lake_con, todo, len(runs), len(present), runs_per_commit, on_event)
                after = _counts(lake_con)
            finally:
                lake_con.execute(f"DETACH {SOURCE}")
    finally:
        target.close()
    report = MoveReport(
        source=label,
        lake=lake.label,
        runs=runs,
        tables=before,
        already_there=not todo,
        resumed=len(present) if todo else 0,
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


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _tables(con: duckdb.DuckDBPyConnection) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """The tables to copy: those keyed by run (a chunk of runs at a time), and the others
    (items and their detail tables) with the key a row already in the lake is found by."""
    keys = {t.name: tuple(t.key) for _, t in details.registered()} | details.CORE_KEYS
    in_file = {
        name
        for (name,) in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = ?", [SOURCE]
        ).fetchall()
    }
    per_run: list[str] = []
    shared: dict[str, tuple[str, ...]] = {}
    for table in migrate.user_tables(con):
        # A table only one side has (a family registered in one process, not the other)
        # is not copied: the row counts compared afterwards name it.
        if table in NOT_MOVED or table in MADE_BY_MIGRATIONS or table not in in_file:
            continue
        columns = details.table_columns(con, table)
        if "run_id" in columns:
            per_run.append(table)
        else:
            shared[table] = keys.get(table, ("item_id",))
    per_run.sort(key=lambda t: t != "runs")  # a run's record first, then its rows
    return per_run, shared


def _copy(
    con: duckdb.DuckDBPyConnection,
    todo: list[str],
    total: int,
    done: int,
    runs_per_commit: int,
    on_event: Events,
) -> None:
    """Copy the runs ``todo`` (and the items the lake lacks, with the first chunk) from
    the attached file into the lake, one commit per ``runs_per_commit`` runs, saying on
    ``on_event`` how many of the ``total`` runs the lake holds after each commit."""
    if not todo:
        return
    per_run, shared = _tables(con)
    chunks = (len(todo) + runs_per_commit - 1) // runs_per_commit
    on_event(
        f"copying {len(todo)} run(s) into the lake, {runs_per_commit} a commit "
        f"({chunks} commit(s)); interrupted, it can be run again to finish"
        + (f" ({done} of {total} run(s) there already)" if done else "")
    )
    for k in range(0, len(todo), runs_per_commit):
        chunk = todo[k : k + runs_per_commit]
        con.begin()
        try:
            sql.claim_writes(con)
            if k == 0:
                for table, key in shared.items():
                    on = " AND ".join(f"l.{c} = s.{c}" for c in key)
                    con.execute(
                        f"INSERT INTO {table} BY NAME SELECT s.* FROM {SOURCE}.{table} s "
                        f"WHERE NOT EXISTS (SELECT 1 FROM {table} l WHERE {on})"
                    )
            _set_chunk(con, chunk)
            for table in per_run:
                con.execute(
                    f"INSERT INTO {table} BY NAME SELECT t.* FROM {SOURCE}.{table} t "
                    f"SEMI JOIN {CHUNK} c USING (run_id)"
                )
        except BaseException:
            con.rollback()
            raise
        con.commit()
        done += len(chunk)
        on_event(f"  runs {done:,}/{total:,} in the lake")


def _set_chunk(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> None:
    """The chunk's run ids as a temporary table: a hash join picks their rows in one scan
    of each source table (``list_contains`` per row costs the chunk's length each)."""
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {CHUNK} AS SELECT unnest(?::VARCHAR[]) AS run_id", [run_ids]
    )


def _check_present(
    con: duckdb.DuckDBPyConnection,
    present: list[str],
    label: str,
    lake_label: str,
    runs_per_commit: int,
) -> None:
    """Refuse when a run the lake holds already differs from the file's in an immutable
    table (``db merge``'s rule: a move never overwrites a run). Lifecycle columns, axis
    measures and validations may have moved on in the lake; the drift check sees those."""
    for k in range(0, len(present), runs_per_commit):
        _set_chunk(con, present[k : k + runs_per_commit])
        for table in IMMUTABLE_TABLES:
            columns = [
                c
                for c in details.table_columns(con, table)
                if table != "runs" or c not in LIFECYCLE_COLUMNS
            ]
            select = ", ".join(f'"{c}"' for c in columns)
            chunk = f"SEMI JOIN {CHUNK} c USING (run_id)"
            ours = f"SELECT {select} FROM {SOURCE}.{table} t {chunk}"
            theirs = f"SELECT {select} FROM {table} t {chunk}"
            differing = sql.one(
                con,
                f"SELECT run_id FROM (({ours} EXCEPT ALL {theirs}) UNION ALL "
                f"({theirs} EXCEPT ALL {ours})) ORDER BY run_id LIMIT 1",
            )
            if differing:
                raise UserInputError(
                    f"run {differing[0]} in {lake_label} differs from the one in {label} "
                    f"({table}); migrate-to never overwrites a run (nothing was written)"
                )
