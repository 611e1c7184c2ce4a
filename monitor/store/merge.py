"""Merge shards from other machines (export folders or whole .duckdb stores) into a store.

A CI matrix job scores one snapshot and ships a shard; one final job merges them all
(DuckDB has a single writer). Rules, in order of importance:

* never overwrite: a run id already stored with different content is an error, and
  the whole merge is checked before anything is written, so the target is unchanged;
* idempotent: a run already stored with the same content is skipped and reported,
  so re-running the merge job is harmless;
* trust nothing that crossed machines: an export's sha256s and row counts are checked
  before a row is read, and every score must point at an item and a run in its shard.

"Same content" means the run's immutable record: its ``runs`` row without the
lifecycle columns, its scores, its exclusions, (API runs) every request sent and
(association runs) every vector embedded.
Lifecycle (status, counts, notes), axis measures, validations and batch states may
legitimately move on in the target after a merge (e.g. the quality gate quarantines a
run), so for an already-stored run the target's version is kept and any difference is
reported as a note.

Each shard is first rebuilt in an in-memory DuckDB at the shard's own schema version
and upgraded with the same migrations as a store file, so old shards merge cleanly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa

from monitor.display import safe_text
from monitor.errors import DataIntegrityError, UserInputError
from monitor.records import RUN_ID, SNAPSHOT_ID
from monitor.store import codec, details, fileformat, migrate, sql
from monitor.store.db import Store
from monitor.store.export import EXPORT_TABLES, is_export_folder, verify_export

MERGE_TABLES = EXPORT_TABLES
RUN_TABLES = tuple(t for t in MERGE_TABLES if t != "items")  # tables keyed by run_id
LIFECYCLE_COLUMNS = frozenset({"status", "finished_at", "n_scored", "n_excluded", "notes"})
IMMUTABLE_TABLES = ("runs", "scores", "exclusions", "api_requests", "embeddings")
# May move on in the target after a merge; differences are reported, the target's kept.
MUTABLE_TABLES = ("axis_measures", "validations", "api_batches")

SourceKind = Literal["export", "duckdb"]


@dataclass
class SourceReport:
    """What one shard contributed."""

    source: Path
    kind: SourceKind
    schema_version: int
    runs_added: list[str] = field(default_factory=list)
    runs_skipped: list[str] = field(default_factory=list)
    items_added: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class MergeReport:
    sources: list[SourceReport] = field(default_factory=list)

    @property
    def runs_added(self) -> list[str]:
        return [run for s in self.sources for run in s.runs_added]

    @property
    def runs_skipped(self) -> list[str]:
        return [run for s in self.sources for run in s.runs_skipped]

    @property
    def items_added(self) -> int:
        return sum(s.items_added for s in self.sources)

    def summary(self) -> str:
        return (
            f"merged {len(self.sources)} shard(s): {len(self.runs_added)} run(s) added, "
            f"{len(self.runs_skipped)} already present, {self.items_added} new item(s)"
        )

    def __str__(self) -> str:
        lines = [self.summary()]
        for s in self.sources:
            lines.append(
                f"  {s.source} ({s.kind}, schema {s.schema_version}): "
                f"added {', '.join(s.runs_added) or 'none'}; "
                f"already present {', '.join(s.runs_skipped) or 'none'}"
            )
            lines.extend(f"    note: {note}" for note in s.notes)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "runs_added": self.runs_added,
            "runs_skipped": self.runs_skipped,
            "items_added": self.items_added,
            "sources": [{**asdict(s), "source": str(s.source)} for s in self.sources],
        }


@dataclass
class _Shard:
    source: Path
    kind: SourceKind
    schema_version: int
    tables: dict[str, pa.Table]  # every MERGE_TABLES table, at the current schema

    @property
    def run_ids(self) -> list[str]:
        return sorted(self.tables["runs"].column("run_id").to_pylist())


def merge(store: Store, sources: Sequence[Path]) -> MergeReport:
    """Ingest shards into ``store``; see the module docstring for the rules."""
    paths = _expand_sources([Path(s) for s in sources])
    shards = [_load_shard(path, kind, store) for path, kind in paths]
    report = MergeReport([SourceReport(s.source, s.kind, s.schema_version) for s in shards])

    with store._connect(read_only=False) as con:
        for index, shard in enumerate(shards):
            for table, data in shard.tables.items():
                con.register(_shard_name(index, table), data)
        columns = {t: _columns(con, t) for t in MERGE_TABLES}
        shard_columns = [{t: d.schema.names for t, d in shard.tables.items()} for shard in shards]

        # Pass 1: decide everything, write nothing.
        pending: dict[str, int] = {}  # run id -> index of the shard that brings it
        for index, (shard, source_report) in enumerate(zip(shards, report.sources, strict=True)):
            ours = _relation_namer(index)
            for run_id in shard.run_ids:
                stored = sql.one(con, "SELECT 1 FROM runs WHERE run_id = ?", [run_id])
                if stored:
                    other, where = _target_namer, f"the store {store.path}"
                elif run_id in pending:
                    other, where = (
                        _relation_namer(pending[run_id]),
                        str(shards[pending[run_id]].source),
                    )
                else:
                    pending[run_id] = index
                    source_report.runs_added.append(run_id)
                    if _status(con, ours, run_id) == "running":
                        source_report.notes.append(
                            f"run {run_id} is still marked running in the shard"
                        )
                    continue
                differing = _differing_tables(con, columns, other, ours, run_id, IMMUTABLE_TABLES)
                if differing:
                    raise UserInputError(
                        f"run {run_id} in {shard.source} differs from the one in {where} "
                        f"({', '.join(differing)}); merge never overwrites a run"
                    )
                source_report.runs_skipped.append(run_id)
                if stored:
                    lifecycle = _differing_tables(
                        con, columns, other, ours, run_id, MUTABLE_TABLES, True
                    )
                    if lifecycle:
                        source_report.notes.append(
                            f"run {run_id}: kept the stored {', '.join(lifecycle)} "
                            "(the shard's differ)"
                        )
            changed = _changed_items(con, columns["items"], ours)
            if changed:
                source_report.notes.append(
                    f"{changed} item(s) share an id with a stored item but differ in other "
                    "fields; kept the stored ones"
                )

        # Pass 2: one transaction per shard.
        for index, source_report in enumerate(report.sources):
            ours = _relation_namer(index)
            con.begin()
            try:
                source_report.items_added = details.insert(
                    con, "items", ours("items"), shard_columns[index]["items"]
                )
                if source_report.runs_added:
                    for table in RUN_TABLES:
                        if table == "scores":
                            details.insert(
                                con,
                                "scores",
                                ours(table),
                                shard_columns[index][table],
                                where="list_contains(?, s.run_id)",
                                params=[source_report.runs_added],
                            )
                            continue
                        con.execute(
                            f"INSERT INTO {table} BY NAME SELECT * FROM {ours(table)} "
                            "WHERE list_contains(?, run_id)",
                            [source_report.runs_added],
                        )
            except BaseException:
                con.rollback()
                raise
            con.commit()
        for index in range(len(shards)):
            for table in MERGE_TABLES:
                con.unregister(_shard_name(index, table))
    return report


# -- sources ------------------------------------------------------------------------


def _expand_sources(paths: list[Path]) -> list[tuple[Path, SourceKind]]:
    """Each path: an export folder, a .duckdb file, or a folder of export folders."""
    if not paths:
        raise UserInputError("merge needs at least one shard (export folder or .duckdb file)")
    found: list[tuple[Path, SourceKind]] = []
    for path in paths:
        if is_export_folder(path):
            found.append((path, "export"))
        elif path.is_file():
            found.append((path, "duckdb"))
        elif path.is_dir():
            inner = sorted(p for p in path.iterdir() if is_export_folder(p))
            if not inner:
                raise UserInputError(f"{path} holds no export folder (no */manifest.json)")
            found.extend((p, "export") for p in inner)
        else:
            raise UserInputError(f"shard {path} does not exist")
    return found


def _load_shard(path: Path, kind: SourceKind, store: Store) -> _Shard:
    if kind == "export":
        verified = verify_export(path)
        migrate.check_not_newer(verified.schema_version, f"export {path}")

        def load(stage: duckdb.DuckDBPyConnection, table: str) -> None:
            file = verified.files.get(table)
            if file is None:
                return  # an older export format without this table: it stays empty
            try:
                data = stage.sql(
                    "SELECT * FROM read_parquet($f)", params={"f": str(file)}
                ).to_arrow_table()
                _fill(stage, table, data, verified.schema_version, f"export file {file}")
            except duckdb.Error as exc:
                raise DataIntegrityError(
                    f"export file {file} does not fit table {table}: {exc}"
                ) from exc

        tables = _stage(path, verified.schema_version, load)
        shard = _Shard(path, kind, verified.schema_version, tables)
        run_ids = shard.run_ids
        if run_ids != [verified.run_id]:
            raise DataIntegrityError(
                f"export {path} should hold run {verified.run_id} alone, runs.parquet has {run_ids}"
            )
    else:
        if path.resolve() == store.path.resolve():
            raise UserInputError(f"cannot merge {path} into itself")
        src = fileformat.open_read_only(path, f"shard {path}")
        try:
            version = migrate.installed_version(src, f"shard {path}")
            migrate.check_not_newer(version, f"shard {path}")
            if version == 0:
                raise UserInputError(f"shard {path} is an empty DuckDB file")
            present = set(migrate.user_tables(src))

            def load(stage: duckdb.DuckDBPyConnection, table: str) -> None:
                if table not in present:
                    raise DataIntegrityError(f"shard {path} lacks table {table}")
                relation = _relation(table, version)
                data = src.sql(f"SELECT * FROM {relation}").to_arrow_table()
                _fill(stage, table, data, version, f"shard {path}")

            tables = _stage(path, version, load)
        finally:
            src.close()
        shard = _Shard(path, kind, version, tables)
    _check_references(shard)
    return shard


def _stage(
    path: Path, version: int, load: Callable[[duckdb.DuckDBPyConnection, str], None]
) -> dict[str, pa.Table]:
    """Rebuild a shard in memory at its own version, upgrade it, and hand back Arrow tables."""
    stage = duckdb.connect(":memory:")
    try:
        stage.execute("SET TimeZone = 'UTC'")
        label = f"shard {path}"
        migrate.apply_migrations(stage, label, upto=version)
        for table in migrate.user_tables(stage):
            if table in MERGE_TABLES:  # not schema_migrations, nor tables shards do not carry
                load(stage, table)
        migrate.apply_migrations(stage, label)
        # Shards written by any version pass the store's one redaction point as well.
        return {
            t: codec.redacted(
                stage.sql(
                    f"SELECT * FROM {_relation(t, migrate.latest_version())}"
                ).to_arrow_table()
            )
            for t in MERGE_TABLES
        }
    finally:
        stage.close()


def _relation(table: str, version: int) -> str:
    """What to read a table's rows from in a store at ``version``: since schema 7 items
    and scores are wide rows, the core table joined with the families' detail tables."""
    if version >= migrate.DETAIL_TABLES_SINCE and table in details.CORE_COLUMNS:
        return details.wide(table)  # type: ignore[arg-type]
    return table


def _fill(
    stage: duckdb.DuckDBPyConnection, table: str, data: pa.Table, version: int, where: str
) -> None:
    """Write a shard's rows of ``table`` into the staging copy at the shard's version;
    wide items/scores (schema 7 on) are split into core and detail tables, and a column
    no installed family declares is refused rather than dropped."""
    stage.register("_src", data)
    try:
        if version >= migrate.DETAIL_TABLES_SINCE and table in details.CORE_COLUMNS:
            known = set(details.columns(stage, table))  # type: ignore[arg-type]
            unknown = [c for c in data.schema.names if c not in known]
            if unknown:
                raise DataIntegrityError(
                    f"{where}: {table} has columns no installed family declares "
                    f"({', '.join(unknown)}); install the family that wrote them"
                )
            details.insert(stage, table, "_src", data.schema.names)  # type: ignore[arg-type]
        else:
            stage.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _src")
    finally:
        stage.unregister("_src")


def _check_references(shard: _Shard) -> None:
    """Every row must belong to a run in the shard, every score to an item in the shard."""
    runs = set(shard.run_ids)
    for column, rule in (("run_id", RUN_ID), ("snapshot_id", SNAPSHOT_ID)):
        bad = sorted(
            v for v in set(shard.tables["runs"].column(column).to_pylist()) if not rule.match(v)
        )
        if bad:
            raise DataIntegrityError(
                f"shard {shard.source} holds a {column} the tool would never make: "
                f"{safe_text(bad[0])!r} (letters, digits, '.', '_', '-'; nothing was merged)"
            )
    if len(runs) != shard.tables["runs"].num_rows:
        raise DataIntegrityError(f"shard {shard.source} repeats a run id")
    for table in RUN_TABLES:
        stray = set(shard.tables[table].column("run_id").to_pylist()) - runs
        if stray:
            raise DataIntegrityError(
                f"shard {shard.source}: {table} has rows for runs it does not hold: {sorted(stray)}"
            )
    items = set(shard.tables["items"].column("item_id").to_pylist())
    for table, what in (("scores", "scored"), ("api_requests", "requested")):
        missing = set(shard.tables[table].column("item_id").to_pylist()) - items
        if missing:
            raise DataIntegrityError(
                f"shard {shard.source}: {len(missing)} {what} item id(s) are not in its items table"
            )


# -- comparison ---------------------------------------------------------------------

Namer = Callable[[str], str]


def _shard_name(index: int, table: str) -> str:
    return f"_shard{index}_{table}"


def _relation_namer(index: int) -> Namer:
    return lambda table: _shard_name(index, table)


def _target_namer(table: str) -> str:
    return _relation(table, migrate.latest_version())


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """A core table's wide row (its family columns included), any other table as stored."""
    if table in details.CORE_COLUMNS:
        return details.columns(con, table)  # type: ignore[arg-type]
    return details.table_columns(con, table)


def _status(con: duckdb.DuckDBPyConnection, name: Namer, run_id: str) -> str:
    status = sql.scalar(con, f"SELECT status FROM {name('runs')} WHERE run_id = ?", [run_id])
    return status


def _differing_tables(
    con: duckdb.DuckDBPyConnection,
    columns: dict[str, list[str]],
    left: Namer,
    right: Namer,
    run_id: str,
    tables: Sequence[str],
    lifecycle: bool = False,
) -> list[str]:
    """Tables whose rows for ``run_id`` differ as multisets (NULL = NULL, NaN = NaN).

    For ``runs`` only the immutable columns are compared, or with ``lifecycle`` only
    the lifecycle ones (reported as "status" etc. rather than "runs").
    """
    differing = []
    checks = [("runs", sorted(LIFECYCLE_COLUMNS))] if lifecycle else []
    checks += [
        (t, [c for c in columns[t] if t != "runs" or c not in LIFECYCLE_COLUMNS]) for t in tables
    ]
    for table, cols in checks:
        select = ", ".join(f'"{c}"' for c in cols)
        a = f"SELECT {select} FROM {left(table)} WHERE run_id = $run_id"
        b = f"SELECT {select} FROM {right(table)} WHERE run_id = $run_id"
        n = sql.scalar(
            con,
            f"SELECT count(*) FROM (({a} EXCEPT ALL {b}) UNION ALL ({b} EXCEPT ALL {a}))",
            {"run_id": run_id},
        )
        if n:
            differing.append("lifecycle columns" if lifecycle and table == "runs" else table)
    return differing


def _changed_items(con: duckdb.DuckDBPyConnection, columns: list[str], ours: Namer) -> int:
    select = ", ".join(f's."{c}"' for c in columns)
    stored = ", ".join(f'i."{c}"' for c in columns)
    wide = details.wide("items")
    n = sql.scalar(
        con,
        f"SELECT count(*) FROM (SELECT {select} FROM {ours('items')} s SEMI JOIN {wide} i "
        f"USING (item_id) EXCEPT SELECT {stored} FROM {wide} i)",
    )
    return int(n)
