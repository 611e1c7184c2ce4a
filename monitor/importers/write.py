"""Write an imported run into the store's tables with plain SQL that mirrors the schema.

Importers produce the same records a local run produces (``RunRecord``, ``Item``,
``ScoreRow``, ``AxisMeasure``, ``Exclusion``) and write them in one transaction, so a
failed import leaves nothing behind. Column lists follow ``monitor/store/schema.py``
migration 1 exactly; if the store's Python API takes over writing, only this module
changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from monitor.benchmarks.items import Exclusion, Item
from monitor.errors import UserInputError
from monitor.records import AxisMeasure, RunRecord, ScoreRow


def _json(value: Any) -> str:
    # allow_nan=False: -inf log-probs must be stored as text, DuckDB's JSON rejects them.
    return json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True)


def insert_run(
    con: duckdb.DuckDBPyConnection,
    run: RunRecord,
    *,
    finished_at: datetime | None = None,
    n_scored: int | None = None,
    n_excluded: int | None = None,
) -> None:
    con.execute(
        """
        INSERT INTO runs (
            run_id, snapshot_id, snapshot_kind, snapshot_revision, snapshot_manifest,
            metric, metric_version, benchmarks, dataset_versions, fingerprint, trigger,
            origin, status, started_at, finished_at, seed, repeat_group, repeat_index,
            git_commit, monitor_version, device, dtype, batch_size, environment,
            n_scored, n_excluded, notes
        ) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [
            run.run_id,
            run.snapshot_id,
            run.snapshot_kind,
            run.snapshot_revision,
            _json(run.snapshot_manifest),
            run.metric,
            run.metric_version,
            list(run.benchmarks),
            _json(run.dataset_versions),
            run.fingerprint,
            run.trigger,
            run.origin,
            run.status,
            run.started_at,
            finished_at,
            run.seed,
            run.repeat_group,
            run.repeat_index,
            run.git_commit,
            run.monitor_version,
            run.device,
            run.dtype,
            run.batch_size,
            _json(run.environment),
            n_scored,
            n_excluded,
            run.notes,
        ],
    )


_S, _F, _I = pa.string(), pa.float64(), pa.int32()
_LIST = pa.list_(pa.string())
_TS = pa.timestamp("us", tz="UTC")

ITEM_COLUMNS: dict[str, pa.DataType] = {
    "item_id": _S,
    "benchmark": _S,
    "benchmark_version": _S,
    "axis": _S,
    "region": _S,
    "source_row": _I,
    "direction": _S,
    "text_stereo": _S,
    "text_anti": _S,
    "targets_stereo": _LIST,
    "targets_anti": _LIST,
    "template": _S,
    "raw_stereo_cell": _S,
    "raw_anti_cell": _S,
    "errata": _LIST,
}
SCORE_COLUMNS: dict[str, pa.DataType] = {
    "run_id": _S,
    "item_id": _S,
    "metric": _S,
    "metric_version": _S,
    "outcome": _S,
    "delta": _F,
    "score_stereo": _F,
    "score_anti": _F,
    "lp_stereo": _F,
    "lp_anti": _F,
    "prior_stereo": _F,
    "prior_anti": _F,
    "prob_stereo": _F,
    "prob_anti": _F,
    "n_tokens_stereo": _I,
    "n_tokens_anti": _I,
    "details": _S,  # JSON text; DuckDB casts it into the JSON column
    "scored_at": _TS,
}
EXCLUSION_COLUMNS: dict[str, pa.DataType] = {
    "run_id": _S,
    "benchmark": _S,
    "benchmark_version": _S,
    "source_row": _I,
    "reason": _S,
    "detail": _S,
}
MEASURE_COLUMNS: dict[str, pa.DataType] = {
    "run_id": _S,
    "benchmark": _S,
    "axis": _S,
    "measure": _S,
    "k": _I,
    "n": _I,
    "value": _F,
    "ci_low": _F,
    "ci_high": _F,
    "definition": _S,
}


def _insert(
    con: duckdb.DuckDBPyConnection,
    table: str,
    columns: dict[str, pa.DataType],
    rows: list[dict[str, Any]],
    *,
    ignore_existing: bool = False,
) -> None:
    """Bulk insert through an Arrow table: one statement, not one round trip per row."""
    if not rows:
        return
    arrow = pa.table(
        {name: pa.array([r[name] for r in rows], type=t) for name, t in columns.items()}
    )
    names = ", ".join(columns)
    view = f"__import_{table}"
    con.register(view, arrow)
    try:
        con.execute(
            f"INSERT INTO {table} ({names}) SELECT {names} FROM {view}"
            + (" ON CONFLICT DO NOTHING" if ignore_existing else "")
        )
    finally:
        con.unregister(view)


def insert_items(con: duckdb.DuckDBPyConnection, items: Iterable[Item]) -> None:
    """Items are shared by every run that scores them: an existing id is left as it is."""
    rows = [
        {
            **{k: getattr(i, k) for k in ITEM_COLUMNS},
            "targets_stereo": list(i.targets_stereo),
            "targets_anti": list(i.targets_anti),
            "errata": list(i.errata),
        }
        for i in items
    ]
    _insert(con, "items", ITEM_COLUMNS, rows, ignore_existing=True)


def insert_scores(
    con: duckdb.DuckDBPyConnection, run_id: str, scores: Iterable[ScoreRow], scored_at: datetime
) -> None:
    rows = [
        {
            **{k: getattr(s, k) for k in SCORE_COLUMNS if hasattr(s, k)},
            "run_id": run_id,
            "details": _json(s.details),
            "scored_at": scored_at,
        }
        for s in scores
    ]
    _insert(con, "scores", SCORE_COLUMNS, rows)


def insert_exclusions(
    con: duckdb.DuckDBPyConnection, run_id: str, exclusions: Iterable[Exclusion]
) -> None:
    rows = [
        {**{k: getattr(e, k) for k in EXCLUSION_COLUMNS if k != "run_id"}, "run_id": run_id}
        for e in exclusions
    ]
    _insert(con, "exclusions", EXCLUSION_COLUMNS, rows)


def insert_axis_measures(
    con: duckdb.DuckDBPyConnection, run_id: str, measures: Iterable[AxisMeasure]
) -> None:
    rows = [
        {**{k: getattr(m, k) for k in MEASURE_COLUMNS if k != "run_id"}, "run_id": run_id}
        for m in measures
    ]
    _insert(con, "axis_measures", MEASURE_COLUMNS, rows)


def write_run(
    con: duckdb.DuckDBPyConnection,
    run: RunRecord,
    *,
    items: Sequence[Item],
    scores: Sequence[ScoreRow],
    exclusions: Sequence[Exclusion],
    measures: Sequence[AxisMeasure],
    finished_at: datetime | None = None,
) -> None:
    """All rows of one finished run in one transaction; refuses a run id already stored."""
    if con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run.run_id]).fetchone():
        raise UserInputError(f"run {run.run_id!r} is already in the store; nothing was written")
    con.execute("BEGIN TRANSACTION")
    try:
        insert_run(
            con,
            run,
            finished_at=finished_at,
            n_scored=len(scores),
            n_excluded=len(exclusions),
        )
        insert_items(con, items)
        insert_scores(con, run.run_id, scores, finished_at or run.started_at)
        insert_exclusions(con, run.run_id, exclusions)
        insert_axis_measures(con, run.run_id, measures)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
