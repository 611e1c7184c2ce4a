"""Turn record dataclasses into Arrow batches for DuckDB, and DuckDB rows back into dicts.

Writes go through typed Arrow tables registered on the connection, never through SQL
strings: values are bound, all-NULL columns keep their type, and a batch of a few
thousand rows is one statement instead of thousands of ``executemany`` round trips.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from monitor.benchmarks.items import Exclusion, Item
from monitor.contract.detail import DetailColumn, Extends
from monitor.records import LEGACY_KIND, Measure, RunRecord, ScoreRow, family_record
from monitor.redaction import redact, redact_json
from monitor.store import details

JSON_COLUMNS = frozenset(
    {"snapshot_manifest", "dataset_versions", "environment", "details", "results", "payload"}
)

_STR = pa.string()
_STRS = pa.list_(pa.string())
_F64 = pa.float64()
_I32 = pa.int32()

# The core columns a write carries (``scored_at`` is set by the store). A family's
# declared detail columns follow them (``item_schema``/``score_schema``), and the store
# splits the batch into the core table and the family's (``details.insert``).
CORE_ITEM_FIELDS = [
    ("item_id", _STR),
    ("benchmark", _STR),
    ("benchmark_version", _STR),
    ("axis", _STR),
    ("region", _STR),
    ("source_row", _I32),
    ("template", _STR),
    ("errata", _STRS),
    ("kind", _STR),
    ("payload", _STR),
]

CORE_SCORE_FIELDS = [
    ("run_id", _STR),
    ("item_id", _STR),
    ("metric", _STR),
    ("metric_version", _STR),
    ("outcome", _STR),
    ("delta", _F64),
    ("details", _STR),
]

# DuckDB type of a declared detail column -> how a batch carries it.
ARROW_TYPES: dict[str, pa.DataType] = {
    "VARCHAR": _STR,
    "VARCHAR[]": _STRS,
    "DOUBLE": _F64,
    "INTEGER": _I32,
    "BIGINT": pa.int64(),
    "BOOLEAN": pa.bool_(),
    "JSON": _STR,
}


def _wide_schema(core: list[tuple[str, pa.DataType]], extends: Extends) -> pa.Schema:
    extra = [(c.name, ARROW_TYPES[c.type]) for c in details.detail_columns(extends)]
    return pa.schema(core + extra)


def item_schema() -> pa.Schema:
    """A batch of items: the core columns, then every installed family's item columns."""
    return _wide_schema(CORE_ITEM_FIELDS, "items")


def score_schema() -> pa.Schema:
    """A batch of scores: the core columns, then every installed family's score columns."""
    return _wide_schema(CORE_SCORE_FIELDS, "scores")


def _detail_value(record: Any, bag: Mapping[str, Any], column: DetailColumn) -> Any:
    """A declared column's value: the record's attribute of that name, else the key of
    that name in its payload/details (how a plug-in family without its own record type
    fills its table), else the column's default. The store writes it to the detail
    table only for rows of the declaring family (``details.belongs``)."""
    if hasattr(record, column.name):
        value = getattr(record, column.name)
    else:
        value = bag.get(column.name, column.default)
    if column.type == "JSON" and value is not None:
        return dumps(value)
    return list(value) if isinstance(value, tuple) else value


EXCLUSION_SCHEMA = pa.schema(
    [
        ("run_id", _STR),
        ("benchmark", _STR),
        ("benchmark_version", _STR),
        ("source_row", _I32),
        ("reason", _STR),
        ("detail", _STR),
    ]
)

MEASURE_SCHEMA = pa.schema(
    [
        ("run_id", _STR),
        ("benchmark", _STR),
        ("axis", _STR),
        ("measure", _STR),
        ("k", _I32),
        ("n", _I32),
        ("value", _F64),
        ("ci_low", _F64),
        ("ci_high", _F64),
        ("definition", _STR),
        ("kind", _STR),
        ("p_value", _F64),
        ("method", _STR),
        ("confidence", _F64),
        ("details", _STR),
    ]
)


EMBEDDING_SCHEMA = pa.schema(
    [
        ("run_id", _STR),
        ("item_id", _STR),
        ("dim", _I32),
        ("vector", pa.list_(pa.float32())),
    ]
)


def embeddings_table(run_id: str, vectors: Mapping[str, Sequence[float]]) -> pa.Table:
    """item id -> vector as an Arrow batch (float32 lists; the vectors are float32 already)."""
    ids = sorted(vectors)
    data = {
        "run_id": [run_id] * len(ids),
        "item_id": ids,
        "dim": [len(vectors[i]) for i in ids],
        "vector": [list(map(float, vectors[i])) for i in ids],
    }
    return pa.Table.from_pydict(data, schema=EMBEDDING_SCHEMA)


def dumps(value: Any) -> str:
    """Canonical JSON (sorted keys) so equal dicts are equal strings, which merge compares."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def utc(moment: datetime) -> datetime:
    """Aware UTC datetime; a naive one is taken to be UTC already (what ``utcnow`` gives)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def now() -> datetime:
    return datetime.now(UTC)


def redact_text(text: str | None) -> str | None:
    """Free text bound for the store (notes, errors, what a server said), credentials
    removed: the store is one of the places ``monitor.redaction`` guards."""
    return None if text is None else redact(text)


def clean(value: Any) -> Any:
    """The store's one redaction point: every value bound for a text or JSON column passes
    here (``run_params``, every Arrow batch, merged and rebuilt shards), so a credential
    reaches no table whichever way it came (a snapshot file's ``base_url``, an
    environment variable, a server's echo) and so no export, merge, history folder or
    report built from the store."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def redacted(table: pa.Table) -> pa.Table:
    """``table`` with :func:`clean` applied to every string and list-of-string column."""
    columns = []
    for field, column in zip(table.schema, table.columns, strict=True):
        kind = field.type
        textual = (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or (pa.types.is_list(kind) and pa.types.is_string(kind.value_type))
        )
        columns.append(pa.array(clean(column.to_pylist()), type=kind) if textual else column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def run_params(run: RunRecord) -> dict[str, Any]:
    """Column -> value for the ``runs`` row written when a run begins (redacted)."""
    params = {
        "run_id": run.run_id,
        "snapshot_id": run.snapshot_id,
        "snapshot_kind": run.snapshot_kind,
        "snapshot_revision": run.snapshot_revision,
        "snapshot_manifest": dumps(redact_json(run.snapshot_manifest)),
        "metric": run.metric,
        "metric_version": run.metric_version,
        "benchmarks": list(run.benchmarks),
        "dataset_versions": dumps(redact_json(run.dataset_versions)),
        "fingerprint": run.fingerprint,
        "trigger": run.trigger,
        "origin": run.origin,
        "status": run.status,
        "started_at": utc(run.started_at),
        "seed": run.seed,
        "repeat_group": run.repeat_group,
        "repeat_index": run.repeat_index,
        "git_commit": run.git_commit,
        "monitor_version": run.monitor_version,
        "device": run.device,
        "dtype": run.dtype,
        "batch_size": run.batch_size,
        "environment": dumps(redact_json(run.environment)),
        "notes": run.notes,
    }
    return {k: v if k in JSON_COLUMNS else clean(v) for k, v in params.items()}


def items_table(items: Iterable[Item]) -> pa.Table:
    """Items as one wide batch: core columns, then each family's declared columns."""
    extra = details.detail_columns("items")
    rows = [
        {
            "item_id": it.item_id,
            "benchmark": it.benchmark,
            "benchmark_version": it.benchmark_version,
            "axis": it.axis,
            "region": it.region,
            "source_row": it.source_row,
            "template": it.template,
            "errata": list(it.errata),
            "kind": it.kind,
            "payload": dumps(it.payload) if it.payload else None,
            **{c.name: _detail_value(it, it.payload, c) for c in extra},
        }
        for it in items
    ]
    return redacted(pa.Table.from_pylist(rows, schema=item_schema()))


def scores_table(run_id: str, rows: Sequence[ScoreRow]) -> pa.Table:
    """Score rows as one wide batch: core columns, then each family's declared columns."""
    extra = details.detail_columns("scores")
    data = [
        {
            "run_id": run_id,
            "item_id": r.item_id,
            "metric": r.metric,
            "metric_version": r.metric_version,
            "outcome": r.outcome,
            "delta": r.delta,
            "details": dumps(r.details),
            **{c.name: _detail_value(r, r.details, c) for c in extra},
        }
        for r in rows
    ]
    return redacted(pa.Table.from_pylist(data, schema=score_schema()))


def _run_table(
    run_id: str,
    records: Sequence[Any],
    schema: pa.Schema,
    encode: Mapping[str, Callable[[Any], Any]] | None = None,
) -> pa.Table:
    """One run's records as a batch: ``run_id``, then each column of ``schema`` from the
    record's attribute of that name (the schema is the one list of what is stored),
    through ``encode``'s function for a column stored in another form."""
    names = schema.names[1:]
    enc = encode or {}
    data = [
        {"run_id": run_id, **{n: enc.get(n, _same)(getattr(r, n)) for n in names}} for r in records
    ]
    return redacted(pa.Table.from_pylist(data, schema=schema))


def _same(value: Any) -> Any:
    return value


def exclusions_table(run_id: str, exclusions: Sequence[Exclusion]) -> pa.Table:
    return _run_table(run_id, exclusions, EXCLUSION_SCHEMA)


def measures_table(run_id: str, measures: Sequence[Measure]) -> pa.Table:
    """Measures as a batch; ``details`` as JSON text, NULL when empty."""
    return _run_table(
        run_id, measures, MEASURE_SCHEMA, {"details": lambda d: dumps(d) if d else None}
    )


def decode_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Arrow result -> dicts with JSON columns parsed (``None`` stays ``None``)."""
    rows = table.to_pylist()
    json_cols = [name for name in table.column_names if name in JSON_COLUMNS]
    for row in rows:
        for name in json_cols:
            if row[name] is not None:
                row[name] = json.loads(row[name])
    return rows


_MEASURE_FIELDS = frozenset(f.name for f in fields(Measure))


def _record_values(row: Mapping[str, Any], names: frozenset[str]) -> dict[str, Any]:
    """A wide row's columns that are the record's fields (lists back to tuples); the
    columns of a family whose values live in payload/details are not fields and drop."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in row.items() if k in names}


def _fields(record: type[Any]) -> frozenset[str]:
    return frozenset(f.name for f in fields(record))


def item_from_row(row: dict[str, Any]) -> Item:
    """A stored item (a wide row, JSON already parsed) back into the record written: its
    family's record class (``DetailTable.record``) with that class's fields, else the
    core ``Item``; another family's columns drop."""
    kind = row.get("kind") or LEGACY_KIND
    record = family_record(kind, "items") or Item
    values = _record_values(row, _fields(record))
    values["kind"] = kind
    values["payload"] = row.get("payload") or {}
    return record(**values)


def measure_from_row(row: dict[str, Any]) -> Measure:
    """A stored measure (JSON already parsed) back into the record that was written; a
    NULL kind, method or confidence (rows from before those columns) reads as the default."""
    values = _record_values(row, _MEASURE_FIELDS)
    values["kind"] = row.get("kind") or "rate"
    values["method"] = row.get("method") or "wilson"
    values["confidence"] = row["confidence"] if row.get("confidence") is not None else 0.95
    values["details"] = row.get("details") or {}
    return Measure(**values)


def score_from_row(row: dict[str, Any], kind: str | None = None) -> ScoreRow:
    """A stored score (a wide row, JSON already parsed) back into the record scoring wrote:
    the record class of its item's family (``kind``: the item's), else the core one."""
    record = family_record(kind, "scores") or ScoreRow
    values = _record_values(row, _fields(record))
    values["details"] = row.get("details") or {}
    return record(**values)
