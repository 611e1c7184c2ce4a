"""Turn record dataclasses into Arrow batches for DuckDB, and DuckDB rows back into dicts.

Writes go through typed Arrow tables registered on the connection, never through SQL
strings: values are bound, all-NULL columns keep their type, and a batch of a few
thousand rows is one statement instead of thousands of ``executemany`` round trips.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from monitor.benchmarks.items import Exclusion, Item
from monitor.records import Measure, RunRecord, ScoreRow
from monitor.redaction import redact, redact_json

JSON_COLUMNS = frozenset(
    {"snapshot_manifest", "dataset_versions", "environment", "details", "results", "payload"}
)

_STR = pa.string()
_STRS = pa.list_(pa.string())
_F64 = pa.float64()
_I32 = pa.int32()

ITEM_SCHEMA = pa.schema(
    [
        ("item_id", _STR),
        ("benchmark", _STR),
        ("benchmark_version", _STR),
        ("axis", _STR),
        ("region", _STR),
        ("source_row", _I32),
        ("direction", _STR),
        ("text_stereo", _STR),
        ("text_anti", _STR),
        ("targets_stereo", _STRS),
        ("targets_anti", _STRS),
        ("template", _STR),
        ("raw_stereo_cell", _STR),
        ("raw_anti_cell", _STR),
        ("errata", _STRS),
        ("kind", _STR),
        ("payload", _STR),
    ]
)

SCORE_SCHEMA = pa.schema(
    [
        ("run_id", _STR),
        ("item_id", _STR),
        ("metric", _STR),
        ("metric_version", _STR),
        ("outcome", _STR),
        ("delta", _F64),
        ("score_stereo", _F64),
        ("score_anti", _F64),
        ("lp_stereo", _F64),
        ("lp_anti", _F64),
        ("prior_stereo", _F64),
        ("prior_anti", _F64),
        ("prob_stereo", _F64),
        ("prob_anti", _F64),
        ("n_tokens_stereo", _I32),
        ("n_tokens_anti", _I32),
        ("details", _STR),
    ]
)

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
    rows = [
        {
            "item_id": it.item_id,
            "benchmark": it.benchmark,
            "benchmark_version": it.benchmark_version,
            "axis": it.axis,
            "region": it.region,
            "source_row": it.source_row,
            "direction": it.direction,
            "text_stereo": it.text_stereo,
            "text_anti": it.text_anti,
            "targets_stereo": list(it.targets_stereo),
            "targets_anti": list(it.targets_anti),
            "template": it.template,
            "raw_stereo_cell": it.raw_stereo_cell,
            "raw_anti_cell": it.raw_anti_cell,
            "errata": list(it.errata),
            "kind": it.kind,
            "payload": dumps(it.payload) if it.payload else None,
        }
        for it in items
    ]
    return redacted(pa.Table.from_pylist(rows, schema=ITEM_SCHEMA))


def scores_table(run_id: str, rows: Sequence[ScoreRow]) -> pa.Table:
    data = [
        {
            "run_id": run_id,
            "item_id": r.item_id,
            "metric": r.metric,
            "metric_version": r.metric_version,
            "outcome": r.outcome,
            "delta": r.delta,
            "score_stereo": r.score_stereo,
            "score_anti": r.score_anti,
            "lp_stereo": r.lp_stereo,
            "lp_anti": r.lp_anti,
            "prior_stereo": r.prior_stereo,
            "prior_anti": r.prior_anti,
            "prob_stereo": r.prob_stereo,
            "prob_anti": r.prob_anti,
            "n_tokens_stereo": r.n_tokens_stereo,
            "n_tokens_anti": r.n_tokens_anti,
            "details": dumps(r.details),
        }
        for r in rows
    ]
    return redacted(pa.Table.from_pylist(data, schema=SCORE_SCHEMA))


def exclusions_table(run_id: str, exclusions: Sequence[Exclusion]) -> pa.Table:
    data = [
        {
            "run_id": run_id,
            "benchmark": e.benchmark,
            "benchmark_version": e.benchmark_version,
            "source_row": e.source_row,
            "reason": e.reason,
            "detail": e.detail,
        }
        for e in exclusions
    ]
    return redacted(pa.Table.from_pylist(data, schema=EXCLUSION_SCHEMA))


def measures_table(run_id: str, measures: Sequence[Measure]) -> pa.Table:
    data = [
        {
            "run_id": run_id,
            "benchmark": m.benchmark,
            "axis": m.axis,
            "measure": m.measure,
            "k": m.k,
            "n": m.n,
            "value": m.value,
            "ci_low": m.ci_low,
            "ci_high": m.ci_high,
            "definition": m.definition,
            "kind": m.kind,
            "p_value": m.p_value,
            "method": m.method,
            "confidence": m.confidence,
            "details": dumps(m.details) if m.details else None,
        }
        for m in measures
    ]
    return redacted(pa.Table.from_pylist(data, schema=MEASURE_SCHEMA))


def decode_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Arrow result -> dicts with JSON columns parsed (``None`` stays ``None``)."""
    rows = table.to_pylist()
    json_cols = [name for name in table.column_names if name in JSON_COLUMNS]
    for row in rows:
        for name in json_cols:
            if row[name] is not None:
                row[name] = json.loads(row[name])
    return rows


def item_from_row(row: dict[str, Any]) -> Item:
    return Item(
        item_id=row["item_id"],
        benchmark=row["benchmark"],
        axis=row["axis"],
        region=row["region"],
        benchmark_version=row["benchmark_version"],
        source_row=row["source_row"],
        text_stereo=row["text_stereo"],
        text_anti=row["text_anti"],
        targets_stereo=tuple(row["targets_stereo"]),
        targets_anti=tuple(row["targets_anti"]),
        template=row["template"],
        raw_stereo_cell=row["raw_stereo_cell"],
        raw_anti_cell=row["raw_anti_cell"],
        errata=tuple(row["errata"]),
        direction=row["direction"],
        kind=row.get("kind") or "pair",
        payload=row.get("payload") or {},
    )


def measure_from_row(row: dict[str, Any]) -> Measure:
    """A stored measure (JSON already parsed) back into the record that was written."""
    return Measure(
        benchmark=row["benchmark"],
        axis=row["axis"],
        measure=row["measure"],
        k=row["k"],
        n=row["n"],
        value=row["value"],
        ci_low=row["ci_low"],
        ci_high=row["ci_high"],
        definition=row["definition"],
        kind=row.get("kind") or "rate",
        p_value=row.get("p_value"),
        method=row.get("method") or "wilson",
        confidence=row["confidence"] if row.get("confidence") is not None else 0.95,
        details=row.get("details") or {},
    )


def score_from_row(row: dict[str, Any]) -> ScoreRow:
    """A stored score (JSON already parsed) back into the record scoring wrote."""
    return ScoreRow(
        item_id=row["item_id"],
        metric=row["metric"],
        metric_version=row["metric_version"],
        outcome=row["outcome"],
        delta=row["delta"],
        score_stereo=row["score_stereo"],
        score_anti=row["score_anti"],
        lp_stereo=row["lp_stereo"],
        lp_anti=row["lp_anti"],
        prior_stereo=row["prior_stereo"],
        prior_anti=row["prior_anti"],
        prob_stereo=row["prob_stereo"],
        prob_anti=row["prob_anti"],
        n_tokens_stereo=row["n_tokens_stereo"],
        n_tokens_anti=row["n_tokens_anti"],
        details=row["details"] or {},
    )
