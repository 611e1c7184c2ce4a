"""The ``Store``: one DuckDB file, opened briefly for each operation.

Concurrency model. DuckDB lets ONE process open a file read-write (or many processes
read-only) at a time; the lock is held for as long as a connection is open. The store
therefore never keeps a connection between calls: a long scoring run takes the lock
for one ``add_scores`` batch (about 50-100 ms on a busy 2-core machine, mostly
DuckDB's open and checkpoint-on-close) and releases it, so ``runs list`` from another
process gets in between batches. A call that meets the lock retries with backoff for
``lock_timeout`` seconds, then fails with a one-line ``UserInputError``. Two writers
at once (e.g. two scoring runs) therefore interleave batch by batch; that is safe
because every write is one transaction. ``session()`` holds one connection across a
burst of calls when the open/close cost matters more than other processes waiting.

Within a process, one ``Store`` serialises its calls across threads. Two ``Store``
objects on the same file must not be used at the same moment with different
``read_only`` settings: DuckDB refuses mixed configurations inside one process.

Durability. Each write method is one transaction; when it returns, DuckDB has
committed it to its write-ahead log, so a SIGKILL afterwards loses nothing and a
kill during the call loses that whole call and nothing else.

Append-only. Scores, items, exclusions and validations are only ever inserted. The
only updates are a run's lifecycle columns (status, finished_at, n_scored,
n_excluded, notes) and its axis measures, which ``finish_run`` replaces whole.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar, get_args

import duckdb
import pyarrow as pa
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

from monitor.benchmarks.items import Exclusion, Item
from monitor.contract.detail import Extends
from monitor.errors import UserInputError
from monitor.records import Measure, RunRecord, RunStatus, ScoreRow
from monitor.redaction import redact_json
from monitor.store import codec, details, fileformat, lake, leases, location, migrate, queries, sql
from monitor.store.location import FileLocation, LakeLocation, Location
from monitor.store.snapshot import AsOf, refuse_on_file
from monitor.store.view import StoreView

P = ParamSpec("P")
R = TypeVar("R")

STATUSES: tuple[str, ...] = get_args(RunStatus)

# Which lifecycle moves are legal. "running" again is a resume (also of a run whose
# process was killed and so still says running); complete <-> quarantined is the
# quality gate (or a human) passing judgement after the scores are in.
TRANSITIONS: dict[str, frozenset[str]] = {
    "running": frozenset({"running", "complete", "failed", "quarantined", "interrupted"}),
    "interrupted": frozenset({"running", "complete", "failed", "quarantined", "interrupted"}),
    "failed": frozenset({"running", "complete", "failed", "quarantined", "interrupted"}),
    "complete": frozenset({"quarantined"}),
    "quarantined": frozenset({"complete"}),
}
WRITABLE_STATUSES = frozenset(queries.RESUMABLE_STATUSES)


def _is_commit_conflict(exc: BaseException) -> bool:
    """A lake's commit refused because another writer committed first (DuckLake's
    conflict, or a SQLite catalog busy with another process's commit)."""
    text = str(exc)
    return isinstance(exc, duckdb.Error) and (
        "Transaction conflict" in text or "database is locked" in text
    )


def _serialised(method: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
    """A write method, retried whole on a lake when its commit lost to another writer's.

    Every write transaction on a lake first touches one catalog row (``sql.claim_writes``),
    so of two that overlap DuckLake commits one and refuses the other; rerun, the other
    sees what the first wrote, so its key checks (``sql.insert_absent``) are sound and a
    row can never be stored twice. A file store needs none of it (one writer at a time)."""

    @functools.wraps(method)
    def write(self: Store, *args: P.args, **kwargs: P.kwargs) -> R:
        if not isinstance(self.location, LakeLocation) or self._in_transaction:
            return method(self, *args, **kwargs)
        retrying = Retrying(
            retry=retry_if_exception(_is_commit_conflict),
            stop=stop_after_delay(self.lock_timeout),
            wait=wait_random_exponential(multiplier=0.05, max=1.0),
            reraise=True,
        )
        return retrying(method, self, *args, **kwargs)

    return write


class StoreLockedError(UserInputError):
    """Another process held the database lock for longer than ``lock_timeout``."""


def _is_lock_error(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, duckdb.IOException) and (
        "Could not set lock" in text or "Conflicting lock" in text
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _writable(path: Path) -> bool:
    """Whether this process can write ``path`` and create its .wal beside it (tried, not
    asked: ``os.access`` says yes to root even on read-only media)."""
    probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
    try:
        with path.open("r+b"):
            pass
        probe.touch()
    except OSError:
        return False
    probe.unlink(missing_ok=True)
    return True


def _insert(
    con: duckdb.DuckDBPyConnection, extends: Extends, table: pa.Table, scored_at: Any = None
) -> int:
    """A wide batch registered as ``_new_<extends>`` into the core table and the families'
    detail tables (``details.insert``); returns how many core rows were new."""
    return details.insert(con, extends, f"_new_{extends}", table.schema.names, scored_at=scored_at)


def check_writable(path: Path | str) -> None:
    """Fail before touching anything if ``path`` could not hold a DuckDB file (+ its .wal);
    a lake URL is parsed instead, so a malformed one (no data path, an unknown catalog
    kind, a password in it) is refused before anything is scored or written."""
    if location.is_lake(path):
        location.parse(path)
        return
    path = Path(path)
    if path.is_dir():
        raise UserInputError(f"database path {path} is a directory, not a file")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise UserInputError(f"database file {path} is not writable")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise UserInputError(
                f"folder {path.parent} is not writable (DuckDB needs it for {path.name}.wal)"
            )
        return
    ancestor = path.parent
    while not ancestor.exists():
        if ancestor.is_symlink() or ancestor == ancestor.parent:
            raise UserInputError(f"cannot create database {path}: {ancestor} is unreachable")
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UserInputError(f"cannot create database {path}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UserInputError(f"cannot create database {path}: folder {ancestor} is not writable")


class Store:
    """A bias-monitor DuckDB store. Constructing one validates and migrates the file.

    ``read_only=True`` never writes (works on a read-only copy) and refuses a file that
    still needs a migration. ``lock_timeout`` is how long a call waits for another
    process's lock before giving up.
    """

    def __init__(
        self,
        path: Path | str | Location | None = None,
        *,
        read_only: bool = False,
        lock_timeout: float = 30.0,
        check_version: bool = True,
        as_of: AsOf | None = None,
    ) -> None:
        where = path if isinstance(path, FileLocation | LakeLocation) else location.parse(path)
        refuse_on_file(where, as_of)
        if as_of is not None and not read_only:
            raise ValueError("a lake read as of a snapshot is read-only")
        self.location: Location = where
        self.as_of = as_of  # a lake read as it was at this snapshot (or time)
        # A file store's path; a lake's URL as a path, for messages that name the store.
        self.path = where.path if isinstance(where, FileLocation) else Path(where.url)
        self._lake: duckdb.DuckDBPyConnection | None = None  # a lake's one connection
        self.read_only = read_only
        self.lock_timeout = lock_timeout
        self._active: tuple[duckdb.DuckDBPyConnection, bool] | None = None
        self._in_transaction = False
        # The runs whose lease this Store took for its process, and the owner it took them
        # as: every write to one of them checks the lease first (``_transaction(run=)``).
        self._held: dict[str, leases.Owner] = {}
        self._lock = threading.RLock()
        self._check_version = check_version
        self._current = True  # read-only opens learn whether the file needs an upgrade
        self.schema_version = self._prepare()

    @classmethod
    def open(cls, path: Path | str | Location | None = None, **kwargs: Any) -> Store:
        return cls(path, **kwargs)

    @classmethod
    def for_reading(
        cls,
        path: Path | str | Location | None = None,
        *,
        on_event: Callable[[str], None] | None = None,
        as_of: AsOf | None = None,
    ) -> Store:
        """A store to read from, whatever the medium: read-only when the file is current
        (an archived store on read-only media can be inspected and reported on), upgraded
        in place when it is older and writable (as any command did before), and read
        from an upgraded temporary copy when it is older and cannot be written. A lake
        is read through a read-only attach, or upgraded in place when it is older; ``as_of``
        reads it as it was at that snapshot (``monitor.store.snapshot``), which is never
        upgraded: a DuckDB file has no snapshots and is refused."""
        where = path if isinstance(path, FileLocation | LakeLocation) else location.parse(path)
        refuse_on_file(where, as_of)
        if isinstance(where, LakeLocation):
            probe = cls(where, read_only=True, check_version=False, as_of=as_of)
            migrate.check_not_newer(probe.schema_version, where.label)
            if probe._current:
                return probe
            probe.close()
            if as_of is not None:  # a snapshot is as it was: never upgraded
                then = probe.schema_version
                raise UserInputError(
                    f"--as-of: {where.label} held no bias-monitor store yet at that snapshot"
                    if then == 0
                    else f"--as-of: {where.label} had schema version {then} at that "
                    f"snapshot, and this monitor reads version {migrate.latest_version()}"
                )
            return cls(where)
        target = where.path
        if not target.is_file():
            raise UserInputError(
                f"no database at {target}; run `bias-monitor run` first or pass --db"
            )
        label = f"database {target}"
        probe = cls(target, read_only=True, check_version=False)
        version = probe.schema_version
        migrate.check_not_newer(version, label)
        if probe._current:
            return probe
        if _writable(target):
            return cls(target)
        copy = Path(tempfile.mkdtemp(prefix="bias-monitor-ro-")) / target.name
        shutil.copyfile(target, copy)
        atexit.register(shutil.rmtree, copy.parent, True)
        if on_event is not None:
            on_event(
                f"{label} has schema version {version} and cannot be written; reading an "
                f"upgraded temporary copy (the file itself is left as it is)"
            )
        return cls(copy)

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}, schema_version={self.schema_version})"

    @property
    def label(self) -> str:
        """How messages name this store: ``database FILE`` or ``lake URL``."""
        return self.location.label

    def close(self) -> None:
        """Close a lake's connection (a file store holds none between calls)."""
        with self._lock:
            if self._lake is not None:
                self._lake.close()
                self._lake = None

    # -- connections -----------------------------------------------------------------

    def _raw_connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        if isinstance(self.location, LakeLocation):
            # A lake takes no file lock: one connection (its extensions loaded and the
            # catalog attached once, ~0.2 s) serves every call of this Store.
            if self._lake is None:
                self._lake = lake.connect(
                    self.location,
                    read_only=self.read_only,
                    create=not self.read_only,
                    as_of=self.as_of,
                )
            return self._lake
        retrying = Retrying(
            retry=retry_if_exception(_is_lock_error),
            stop=stop_after_delay(self.lock_timeout),
            wait=wait_random_exponential(multiplier=0.02, max=0.5),
            reraise=True,
        )
        try:
            con = retrying(duckdb.connect, str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            if _is_lock_error(exc):
                raise StoreLockedError(
                    f"database {self.path} stayed locked by another process for "
                    f"{self.lock_timeout:g}s (DuckDB allows one writer process at a time)"
                ) from exc
            newer = fileformat.newer_file_error(self.path, exc, f"database {self.path}")
            if newer is not None:
                raise newer from exc
            raise UserInputError(f"cannot open database {self.path}: {_first_line(exc)}") from exc
        con.execute("SET TimeZone = 'UTC'")
        return con

    @contextmanager
    def _connect(self, *, read_only: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """A short-lived connection; nested calls on this Store reuse the open one.

        Calls on one Store from several threads are serialised, so a thread pool of
        API workers can share a Store.
        """
        if not read_only and self.read_only:
            raise UserInputError(f"database {self.path} was opened read-only")
        with self._lock:
            if self._active is not None:
                con, active_read_only = self._active
                if active_read_only and not read_only:
                    raise RuntimeError("write requested inside a read-only connection")
                yield con
                return
            con = self._raw_connect(read_only or self.read_only)
            self._active = (con, read_only or self.read_only)
            try:
                yield con
            finally:
                self._active = None
                if con is not self._lake:
                    con.close()

    @contextmanager
    def read(self) -> Iterator[StoreView]:
        """A consistent read-only view for drift, quality and reports (one connection,
        held until the block ends; other processes' writes wait meanwhile)."""
        with self._connect() as con:
            assert self._active is not None
            catalog = lake.ALIAS if isinstance(self.location, LakeLocation) else None
            if catalog is None or self._in_transaction:
                yield StoreView(con, frozen=self._active[1], catalog=catalog)
                return
            # Other processes commit to a lake at any time: one transaction pins the
            # view to one snapshot of it, as a file's read-only connection does.
            con.begin()
            self._in_transaction = True
            try:
                yield StoreView(con, frozen=True, catalog=catalog)
            finally:
                self._in_transaction = False
                con.rollback()

    @contextmanager
    def session(self) -> Iterator[Store]:
        """Hold one read-write connection (and the file lock) across several calls.

        For a burst of small writes such as a run's setup (begin_run, upsert_items,
        add_exclusions); each call is still its own transaction. Do not hold a session
        across slow work such as model inference: other processes wait on the lock.
        """
        with self._connect(read_only=False):
            yield self

    @contextmanager
    def _transaction(self, *, run: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """One write transaction: all of it commits, or none.

        ``run``: the run it writes to. Where this Store took that run's lease, the lease
        is checked first, in this transaction (``leases.require``): a run taken over by
        another process while this one stalled gets nothing more from this one, not even
        a batch that was already on its way (``leases.LeaseLost``)."""
        with self._connect(read_only=False) as con:
            if self._in_transaction:
                raise RuntimeError("Store transactions do not nest")
            self._in_transaction = True
            try:
                con.begin()
                try:
                    if isinstance(self.location, LakeLocation):
                        sql.claim_writes(con)
                    owner = self._held.get(run) if run is not None else None
                    if owner is not None:  # kept when lost: every later write is refused too
                        leases.require(con, run, owner)
                    yield con
                except BaseException:
                    con.rollback()
                    raise
                con.commit()
            finally:
                self._in_transaction = False

    # -- opening ---------------------------------------------------------------------

    def _prepare(self) -> int:
        label = self.label
        if isinstance(self.location, LakeLocation):
            return self._prepare_lake(label)
        if self.path.is_dir():
            raise UserInputError(f"database path {self.path} is a directory, not a file")
        if self.read_only:
            if not self.path.is_file():
                raise UserInputError(f"database {self.path} does not exist")
            with self._connect() as con:
                version = migrate.installed_version(con, label)
                self._current = migrate.is_current(con, label)
            migrate.check_not_newer(version, label)
            if self._check_version and not self._current:
                raise UserInputError(
                    f"{label} has schema version {version} and needs an upgrade to "
                    f"{migrate.latest_version()}; open it once without read-only"
                )
            return version

        check_writable(self.path)
        if self.path.exists():
            # Look before writing: a newer or foreign file must be refused untouched.
            with self._connect() as con:
                version = migrate.installed_version(con, label)
                current = migrate.is_current(con, label)
            migrate.check_not_newer(version, label)
            if current:
                return version
            with self._connect(read_only=False) as con:
                migrate.apply_migrations(con, label)
            return migrate.latest_version()

        created = self._make_parents()
        try:
            with self._connect(read_only=False) as con:
                migrate.apply_migrations(con, label)
        except StoreLockedError:
            raise  # another process created the file meanwhile: it is theirs, not ours
        except BaseException:
            self._remove_created(created)
            raise
        return migrate.latest_version()

    def _prepare_lake(self, label: str) -> int:
        """A lake's schema: checked, and migrated unless read-only (the version is read
        again inside the migration's transaction, as on a file)."""
        with self._connect() as con:
            version = migrate.installed_version(con, label)
            current = migrate.is_current(con, label)
        migrate.check_not_newer(version, label)
        self._current = current
        if current:
            return version
        if self.read_only:
            if self._check_version:
                raise UserInputError(
                    f"{label} has schema version {version} and needs an upgrade to "
                    f"{migrate.latest_version()}; open it once without read-only"
                )
            return version
        with self._connect(read_only=False) as con:
            migrate.apply_migrations(con, label)
        self._current = True
        return migrate.latest_version()

    def _make_parents(self) -> list[Path]:
        missing = []
        parent = self.path.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for folder in reversed(missing):
            try:
                folder.mkdir()
            except OSError as exc:
                self._remove_created(missing)
                raise UserInputError(f"cannot create folder {folder}: {exc.strerror}") from exc
        return missing

    def _remove_created(self, folders: list[Path]) -> None:
        """Undo a failed creation: the new file, its WAL, and the folders we made."""
        for leftover in (self.path, self.path.with_name(self.path.name + ".wal")):
            with suppress(FileNotFoundError):
                leftover.unlink()
        for folder in folders:  # deepest first
            with suppress(OSError):
                folder.rmdir()

    # -- writes ----------------------------------------------------------------------

    @_serialised
    def begin_run(self, run: RunRecord, *, owner: leases.Owner | None = None) -> None:
        """Record a new run (status ``running`` unless the record says otherwise); with
        ``owner``, the run is leased to it in the same transaction."""
        _check_status(run.status)
        params = codec.run_params(run)
        columns = ", ".join(params)
        marks = ", ".join("?" for _ in params)
        with self._transaction() as con:
            if sql.one(con, "SELECT 1 FROM runs WHERE run_id = ?", [run.run_id]):
                raise UserInputError(f"run {run.run_id} already exists in {self.path}")
            con.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})", list(params.values()))
            if owner is not None:
                leases.take(con, run.run_id, owner)
        if owner is not None:
            self._held[run.run_id] = owner

    # -- leases: one owning process per run in progress (see monitor.store.leases) ----

    @_serialised
    def claim_resumable(
        self,
        fingerprint: str,
        owner: leases.Owner,
        *,
        stale_after: timedelta = leases.DEFAULT_STALE_AFTER,
    ) -> tuple[str | None, list[leases.Lease]]:
        """Take over the newest unfinished run with ``fingerprint`` whose owner is gone;
        returns its id (or None) and the live leases of runs passed over."""
        with self._transaction() as con:
            candidates = queries.resumable_runs(con, fingerprint)
            run_id, passed = leases.first_free(con, candidates, owner, codec.now(), stale_after)
            if run_id is not None:
                leases.take(con, run_id, owner)
        if run_id is not None:
            self._held[run_id] = owner
        return run_id, passed

    def peek_resumable(
        self,
        fingerprint: str,
        owner: leases.Owner,
        *,
        stale_after: timedelta = leases.DEFAULT_STALE_AFTER,
    ) -> str | None:
        """The run :meth:`claim_resumable` would take now, without taking it."""
        with self._connect() as con:
            candidates = queries.resumable_runs(con, fingerprint)
            return leases.first_free(con, candidates, owner, codec.now(), stale_after)[0]

    @_serialised
    def heartbeat(self, run_id: str, owner: leases.Owner) -> bool:
        """Refresh ``owner``'s lease on ``run_id``; False when it no longer holds it."""
        with self._transaction() as con:
            return leases.refresh(con, run_id, owner)

    @_serialised
    def release(self, run_id: str, owner: leases.Owner) -> None:
        """Give up ``owner``'s lease on ``run_id`` (a no-op when it holds none)."""
        with self._transaction() as con:
            con.execute(
                "DELETE FROM run_leases WHERE run_id = ? AND owner = ?", [run_id, owner.token]
            )
        if self._held.get(run_id) == owner:
            del self._held[run_id]

    @_serialised
    def record_run(
        self,
        run: RunRecord,
        *,
        items: Sequence[Item],
        scores: Sequence[ScoreRow],
        exclusions: Sequence[Exclusion],
        scored_at: datetime | None = None,
    ) -> None:
        """Write a run whose rows all exist already (an import) in ONE transaction: the
        run (status ``running``, so the quality gate still judges it), its items, scores
        and exclusions. A run id already stored is refused and nothing is written."""
        _check_status(run.status)
        params = codec.run_params(run)
        columns = ", ".join(params)
        marks = ", ".join("?" for _ in params)
        item_table = codec.items_table(items)
        score_table = codec.scores_table(run.run_id, scores)
        exclusion_table = codec.exclusions_table(run.run_id, exclusions)
        _check_unique(item_table, ["item_id"], "items")
        _check_unique(score_table, ["item_id"], "score rows")
        _check_unique(exclusion_table, ["benchmark", "source_row"], "exclusions")
        with self._transaction() as con:
            if sql.one(con, "SELECT 1 FROM runs WHERE run_id = ?", [run.run_id]):
                raise UserInputError(
                    f"run {run.run_id!r} is already in the store; nothing was written"
                )
            con.execute(f"INSERT INTO runs ({columns}) VALUES ({marks})", list(params.values()))
            moment = codec.utc(scored_at or run.started_at)
            for view, table, write in (
                ("_new_items", item_table, lambda: _insert(con, "items", item_table)),
                (
                    "_new_scores",
                    score_table,
                    lambda: _insert(con, "scores", score_table, scored_at=moment),
                ),
                (
                    "_new_exclusions",
                    exclusion_table,
                    lambda: con.execute(
                        "INSERT INTO exclusions BY NAME SELECT * FROM _new_exclusions"
                    ),
                ),
            ):
                if table.num_rows == 0:
                    continue
                con.register(view, table)
                try:
                    write()
                finally:
                    con.unregister(view)

    @_serialised
    def upsert_items(self, items: Iterable[Item]) -> int:
        """Insert items not yet stored (by item_id); returns how many were new."""
        table = codec.items_table(items)
        if table.num_rows == 0:
            return 0
        _check_unique(table, ["item_id"], "items")
        with self._transaction() as con:
            con.register("_new_items", table)
            inserted = _insert(con, "items", table)
            con.unregister("_new_items")
        return int(inserted)

    @_serialised
    def add_scores(self, run_id: str, rows: Sequence[ScoreRow]) -> int:
        """Append one batch of scores atomically; rows already stored for an item are ignored.

        Idempotent so that a resumed run may re-send a batch whose commit it never saw.
        Returns how many rows were new. Every item must have been stored with
        ``upsert_items`` first, so that a score can always be traced to its sentences.
        """
        table = codec.scores_table(run_id, rows)
        if table.num_rows == 0:
            return 0
        _check_unique(table, ["item_id"], "score rows")
        with self._transaction(run=run_id) as con:
            self._require_writable_run(con, run_id)
            con.register("_new_scores", table)
            _require_stored_items(
                con,
                "_new_scores",
                f"score rows for run {run_id}",
                "; store them with upsert_items first",
            )
            inserted = _insert(con, "scores", table)
            con.unregister("_new_scores")
        return int(inserted)

    @_serialised
    def add_embeddings(self, run_id: str, vectors: Mapping[str, Sequence[float]]) -> int:
        """Store the vectors an association run embedded (item id -> float32 vector), one
        transaction; a vector already stored for an item is kept (append-only, resumable).
        Every item must be stored already, like a score's."""
        table = codec.embeddings_table(run_id, vectors)
        if table.num_rows == 0:
            return 0
        with self._transaction(run=run_id) as con:
            self._require_writable_run(con, run_id)
            con.register("_new_embeddings", table)
            _require_stored_items(con, "_new_embeddings", f"embeddings for run {run_id}")
            inserted = sql.insert_absent(
                con,
                "embeddings",
                ["*"],
                "_new_embeddings",
                ("run_id", "item_id"),
                compare=table.schema.names,
            )
            con.unregister("_new_embeddings")
        return int(inserted)

    def embeddings(self, run_id: str) -> dict[str, list[float]]:
        """The vectors stored for ``run_id``, by item id (empty for runs of other kinds)."""
        return self._read(queries.embeddings, run_id)

    @_serialised
    def add_exclusions(self, run_id: str, exclusions: Sequence[Exclusion]) -> int:
        """Record rows left out of a run; re-sending one already stored is a no-op."""
        table = codec.exclusions_table(run_id, exclusions)
        if table.num_rows == 0:
            return 0
        _check_unique(table, ["benchmark", "source_row"], "exclusions")
        with self._transaction(run=run_id) as con:
            self._require_writable_run(con, run_id)
            con.register("_new_exclusions", table)
            inserted = sql.insert_absent(
                con,
                "exclusions",
                ["*"],
                "_new_exclusions",
                ("run_id", "benchmark", "source_row"),
                compare=table.schema.names,
            )
            con.unregister("_new_exclusions")
        return int(inserted)

    @_serialised
    def finish_run(
        self,
        run_id: str,
        status: RunStatus,
        measures: Sequence[Measure],
        n_scored: int,
        n_excluded: int,
        notes: str | None = None,
    ) -> None:
        """Record a run's counts and axis measures (replaced whole) and its status, atomically.

        ``status="running"`` records the numbers but leaves the run open, for a caller
        that still has a quality gate to pass before ``set_status`` closes it.
        """
        _check_status(status)
        table = codec.measures_table(run_id, measures)
        _check_unique(table, ["benchmark", "axis", "measure"], "axis measures")
        with self._transaction(run=run_id) as con:
            current = queries.run_status(con, run_id)
            if current not in WRITABLE_STATUSES:
                raise UserInputError(
                    f"run {run_id} is already {current}; it cannot be finished again"
                )
            con.execute("DELETE FROM axis_measures WHERE run_id = ?", [run_id])
            if table.num_rows:
                con.register("_new_measures", table)
                con.execute("INSERT INTO axis_measures BY NAME SELECT * FROM _new_measures")
                con.unregister("_new_measures")
            con.execute(
                "UPDATE runs SET status = $status, n_scored = $n_scored, "
                "n_excluded = $n_excluded, notes = coalesce($notes, notes), "
                "finished_at = CASE WHEN $status = 'running' THEN NULL "
                "ELSE current_timestamp END WHERE run_id = $run_id",
                {
                    "status": status,
                    "n_scored": n_scored,
                    "n_excluded": n_excluded,
                    "notes": codec.redact_text(notes),
                    "run_id": run_id,
                },
            )

    @_serialised
    def set_status(
        self,
        run_id: str,
        status: RunStatus,
        notes: str | None = None,
        *,
        finished: bool | None = None,
    ) -> None:
        """Move a run along its lifecycle (see ``TRANSITIONS``); ``notes`` replaces if given.

        ``finished_at``: cleared on a resume to ``running``; kept when a finished run
        is re-judged (complete <-> quarantined); otherwise set to now. ``finished=True``
        forces "now", ``finished=False`` keeps whatever is stored.
        """
        _check_status(status)
        with self._transaction(run=run_id) as con:
            current = queries.run_status(con, run_id)
            if status not in TRANSITIONS[current]:
                raise UserInputError(f"run {run_id} cannot go from {current} to {status}")
            if status == "running":
                finished_sql = "NULL"  # resumed: not finished any more
            elif finished is False or (finished is None and current in ("complete", "quarantined")):
                finished_sql = "finished_at"
            else:
                finished_sql = "current_timestamp"
            con.execute(
                "UPDATE runs SET status = ?, notes = coalesce(?, notes), "
                f"finished_at = {finished_sql} WHERE run_id = ?",
                [status, codec.redact_text(notes), run_id],
            )

    @_serialised
    def mark_stale_runs(self, idle_for: timedelta, now: datetime | None = None) -> list[str]:
        """Mark ``running`` runs with no score for ``idle_for`` as ``interrupted``.

        A process killed mid-run cannot say so itself; this is how its run stops
        looking alive. Returns the run ids marked.
        """
        cutoff = codec.utc(now or codec.now()) - idle_for
        with self._transaction() as con:
            stale = queries.stale_running_runs(con, cutoff)
            for run_id in stale:
                con.execute(
                    "UPDATE runs SET status = 'interrupted', finished_at = current_timestamp, "
                    "notes = ? WHERE run_id = ? AND status = 'running'",
                    [f"marked interrupted: no activity for {idle_for}", run_id],
                )
        return stale

    @_serialised
    def add_validation(self, run_id: str, suite: str, success: bool, results: dict) -> None:
        """Append a quality-gate result; a run may be validated many times."""
        with self._transaction(run=run_id) as con:
            queries.run_status(con, run_id)
            con.execute(
                "INSERT INTO validations VALUES (?, ?, ?, ?, current_timestamp)",
                [run_id, suite, bool(success), codec.dumps(redact_json(results))],
            )

    def _read(
        self,
        query: Callable[Concatenate[duckdb.DuckDBPyConnection, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """One read query on a short-lived read-only connection (see ``_connect``)."""
        with self._connect() as con:
            return query(con, *args, **kwargs)

    def _require_writable_run(self, con: duckdb.DuckDBPyConnection, run_id: str) -> None:
        status = queries.run_status(con, run_id)
        if status not in WRITABLE_STATUSES:
            raise UserInputError(f"run {run_id} is {status}; its rows are final (append-only)")

    # -- reads -----------------------------------------------------------------------

    def scored_item_ids(self, run_id: str) -> set[str]:
        return self._read(queries.scored_item_ids, run_id)

    def find_resumable(self, fingerprint: str) -> str | None:
        """Latest run with this fingerprint that did not finish (running/interrupted/failed)."""
        return self._read(queries.find_resumable, fingerprint)

    def list_runs(
        self, snapshot: str | None = None, status: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        return self._read(queries.list_runs, snapshot=snapshot, status=status, limit=limit)

    # Raw rows as dicts, for tests and one-off tooling: the product reads runs and
    # measures through ``read()``'s typed ``StoreView``, the one read API of the rooms.
    def get_run(self, run_id_or_prefix: str) -> dict[str, Any]:
        return self._read(queries.get_run, run_id_or_prefix)

    def axis_measures(self, run_id: str) -> list[dict[str, Any]]:
        return self._read(queries.axis_measures, run_id)

    def scores(self, run_id: str) -> list[dict[str, Any]]:
        return self._read(queries.scores, run_id)

    def score_rows(self, run_id: str) -> list[ScoreRow]:
        """The run's scores as the records scoring produced (for computing measures)."""
        return self._read(queries.score_rows, run_id)

    def term_scores(self, run_id: str, with_texts: bool = False) -> list[dict[str, Any]]:
        """Per-term numbers of an association run (test, set, s(w,A,B)); terms only if asked."""
        return self._read(queries.term_scores, run_id, with_texts=with_texts)

    def item_scores(self, run_id: str, with_texts: bool = False) -> list[dict[str, Any]]:
        """Per-item numbers with benchmark row and axis; sentences only if asked for."""
        return self._read(queries.item_scores, run_id, with_texts=with_texts)

    def scores_table(self, run_id: str) -> pa.Table:
        return self._read(queries.scores_table, run_id)

    def exclusions(self, run_id: str) -> list[dict[str, Any]]:
        return self._read(queries.exclusions, run_id)

    def validations(self, run_id: str) -> list[dict[str, Any]]:
        return self._read(queries.validations, run_id)

    def items(self, item_ids: Iterable[str]) -> dict[str, Item]:
        return self._read(queries.items, item_ids)

    # -- API runs (schema 2) -----------------------------------------------------------

    @_serialised
    def add_api_requests(self, run_id: str, rows: Sequence[dict[str, Any]]) -> int:
        """Store what API requests asked and what came back, one transaction per batch.

        Keyed by (run_id, request_key): a request stored ``ok`` is never stored again, so
        a resumed run cannot duplicate it; a stored failure (``failed``,
        ``model_changed``) is replaced by the later attempt's row. Returns rows written.
        """
        if not rows:
            return 0
        keys = [r["request_key"] for r in rows]
        if len(set(keys)) != len(keys):
            raise ValueError("api request batch repeats a request_key")
        columns = _API_REQUEST_COLUMNS
        values = []
        for r in rows:
            missing = [c for c in ("request_key", "item_id", "status", "prompt") if c not in r]
            if missing:
                raise ValueError(f"api request row lacks {', '.join(missing)}")
            r = {c: redact_json(v) for c, v in r.items()}  # the store's one redaction rule
            values.append(
                [run_id]
                + [
                    codec.dumps(r.get(c))
                    if c in _API_JSON_COLUMNS and r.get(c) is not None
                    else r.get(c)
                    for c in columns[1:-1]
                ]
                + [codec.now()]
            )
        marks = ", ".join("?" for _ in columns)
        with self._transaction(run=run_id) as con:
            self._require_writable_run(con, run_id)
            con.execute(
                "DELETE FROM api_requests WHERE run_id = ? AND status <> 'ok' "
                "AND list_contains(?, request_key)",
                [run_id, keys],
            )
            before = sql.scalar(con, "SELECT count(*) FROM api_requests WHERE run_id = ?", [run_id])
            conflict = "ON CONFLICT DO NOTHING"
            if sql.is_lake(con):  # no key there: leave out the requests stored ``ok``
                conflict = ""
                stored = {
                    key
                    for (key,) in con.execute(
                        "SELECT request_key FROM api_requests WHERE run_id = ? "
                        "AND list_contains(?, request_key)",
                        [run_id, keys],
                    ).fetchall()
                }
                values = [v for v in values if v[1] not in stored]
            if values:
                con.executemany(
                    f"INSERT INTO api_requests ({', '.join(columns)}) VALUES ({marks}) " + conflict,
                    values,
                )
            after = sql.scalar(con, "SELECT count(*) FROM api_requests WHERE run_id = ?", [run_id])
        return int(after - before)

    def api_requests(self, run_id: str, status: str | None = None) -> list[dict[str, Any]]:
        """A run's stored API requests (JSON columns decoded), by request key."""
        with self._connect() as con:
            rows = queries.fetch_table(
                con,
                "SELECT * FROM api_requests WHERE run_id = ? AND (? IS NULL OR status = ?) "
                "ORDER BY request_key",
                [run_id, status, status],
            ).to_pylist()
        for row in rows:
            for column in _API_JSON_COLUMNS:
                if isinstance(row.get(column), str):
                    row[column] = json.loads(row[column])
        return rows

    @_serialised
    def update_run_environment(self, run_id: str, patch: dict[str, Any]) -> None:
        """Merge ``patch`` into a run's ``environment`` JSON (top-level keys replaced).

        For facts only known after the requests were answered: an API run's token usage,
        cost, and the model names and fingerprints the server reported. Only while the
        run is still open (running / interrupted / failed).
        """
        with self._transaction(run=run_id) as con:
            self._require_writable_run(con, run_id)
            row = sql.one(con, "SELECT environment FROM runs WHERE run_id = ?", [run_id])
            env = json.loads(row[0]) if row[0] else {}
            env.update(redact_json(patch))
            con.execute(
                "UPDATE runs SET environment = ? WHERE run_id = ?", [codec.dumps(env), run_id]
            )

    @_serialised
    def add_api_batch(
        self,
        run_id: str,
        batch_id: str,
        *,
        endpoint: str,
        input_file_id: str,
        request_keys: Sequence[str],
    ) -> None:
        """Remember a submitted Batch API job, so any later process can poll and ingest it."""
        with self._transaction(run=run_id) as con:
            self._require_writable_run(con, run_id)
            con.execute(
                "INSERT INTO api_batches (batch_id, run_id, endpoint, input_file_id, "
                "request_keys, status, submitted_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?, 'submitted', current_timestamp, current_timestamp)",
                codec.clean([batch_id, run_id, endpoint, input_file_id, list(request_keys)]),
            )

    @_serialised
    def update_api_batch(
        self,
        batch_id: str,
        status: str,
        *,
        output_file_id: str | None = None,
        error_file_id: str | None = None,
        detail: str | None = None,
    ) -> None:
        with self._transaction() as con:
            con.execute(
                "UPDATE api_batches SET status = ?, output_file_id = coalesce(?, output_file_id), "
                "error_file_id = coalesce(?, error_file_id), detail = coalesce(?, detail), "
                "updated_at = current_timestamp WHERE batch_id = ?",
                [status, output_file_id, error_file_id, codec.redact_text(detail), batch_id],
            )

    def api_batches(self, run_id: str) -> list[dict[str, Any]]:
        with self._connect() as con:
            return queries.fetch_table(
                con, "SELECT * FROM api_batches WHERE run_id = ? ORDER BY submitted_at", [run_id]
            ).to_pylist()


_API_REQUEST_COLUMNS: tuple[str, ...] = (
    "run_id",
    "request_key",
    "item_id",
    "option_order",
    "sample_index",
    "prompt_template_id",
    "prompt",
    "options",
    "endpoint",
    "request_params",
    "status",
    "response_text",
    "top_logprobs",
    "response",
    "reported_model",
    "system_fingerprint",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "attempts",
    "retries",
    "error",
    "batch_id",
    "created_at",
)
_API_JSON_COLUMNS = frozenset({"options", "request_params", "top_logprobs", "response", "retries"})


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise UserInputError(
            f"unknown run status {status!r}; expected one of {', '.join(STATUSES)}"
        )


def _check_unique(table: pa.Table, keys: list[str], what: str) -> None:
    """A batch naming the same key twice is a caller bug: which copy should win?"""
    if table.group_by(keys).aggregate([]).num_rows != table.num_rows:
        raise ValueError(f"{what} batch repeats a key ({', '.join(keys)})")


def _require_stored_items(
    con: duckdb.DuckDBPyConnection, relation: str, what: str, hint: str = ""
) -> None:
    """Every row of the registered batch ``relation`` names a stored item, so a stored
    number can always be traced to its item; ``what`` and ``hint`` word the refusal."""
    missing = sql.scalar(
        con, f"SELECT count(*) FROM {relation} b ANTI JOIN items i USING (item_id)"
    )
    if missing:
        raise UserInputError(f"{missing} {what} reference items not in the store{hint}")
