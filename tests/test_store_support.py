"""Builders shared by the store tests (no tests here): real Items, RunRecords, ScoreRows.

The sentences are neutral stand-ins; the store does not care what they say, and the
ids come from the real ``make_item_id`` so they behave like a benchmark's.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from monitor.benchmarks.items import Exclusion, Item
from monitor.families.pairs.records import PairItem, PairScoreRow, make_item_id
from monitor.records import AxisMeasure, RunRecord, ScoreRow

BENCHMARK = "toy-bench"
VERSION = "toy-bench@0000:1111:errata-none"
STORE_TABLES = (
    "runs",
    "items",
    "scores",
    "exclusions",
    "axis_measures",
    "validations",
    "api_requests",
    "api_batches",
)


def make_items(n: int, version: str = VERSION) -> list[Item]:
    items = []
    for row in range(n):
        stereo = f"Person {row} arrived early to the meeting."
        anti = f"Person {row} arrived late to the meeting."
        items.append(
            PairItem(
                item_id=make_item_id(version, stereo, anti),
                benchmark=BENCHMARK,
                axis="caste" if row % 2 else "religion",
                region="india",
                benchmark_version=version,
                source_row=row,
                text_stereo=stereo,
                text_anti=anti,
                targets_stereo=("early",),
                targets_anti=("late",),
                template="Person {row} arrived XXX to the meeting.",
                raw_stereo_cell="early",
                raw_anti_cell="late",
                errata=("E1",) if row == 0 else (),
            )
        )
    return items


def make_run(
    run_id: str,
    fingerprint: str = "fp-toy",
    snapshot_id: str = "toy-model",
    started_at: datetime | None = None,
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        snapshot_id=snapshot_id,
        snapshot_kind="hf",
        snapshot_revision="0123456789abcdef0123456789abcdef01234567",
        snapshot_manifest={"repo": "toy/model", "files": {"model.safetensors": "ab" * 32}},
        metric="cll",
        metric_version="cll-1",
        benchmarks=[BENCHMARK],
        dataset_versions={BENCHMARK: {"sha256": "11" * 32, "errata_version": "none"}},
        fingerprint=fingerprint,
        trigger="test",
        started_at=started_at or datetime(2025, 4, 1, 12, 0, tzinfo=UTC),
        seed=7,
        git_commit="f" * 40,
        monitor_version="0.1.0",
        device="cpu",
        dtype="float32",
        batch_size=8,
        environment={"torch": "2.13.0", "python": "3.11", "nested": {"b": 2, "a": 1}},
    )


def make_api_request(item: Item, order: str, answer: str = "A") -> dict[str, Any]:
    """One stored forced-choice request, shaped as the API runner stores it."""
    return {
        "request_key": f"{item.item_id}/{order}/0",
        "item_id": item.item_id,
        "option_order": order,
        "sample_index": 0,
        "prompt_template_id": "toy-choice-v1",
        "prompt": f"Choose A or B for row {item.source_row}.",
        "options": [{"side": "stereo", "text": "early"}, {"side": "anti", "text": "late"}],
        "endpoint": "chat.completions",
        "request_params": {"temperature": 0, "top_logprobs": 20, "max_tokens": 1},
        "status": "ok",
        "response_text": answer,
        "top_logprobs": [[answer, -0.1, [["A", -0.1], ["B", -2.4]]]],
        "response": {"id": "cmpl-1", "model": "toy-api", "usage": {"prompt_tokens": 12}},
        "reported_model": "toy-api-2025-04-01",
        "system_fingerprint": "fp_toy",
        "input_tokens": 12,
        "output_tokens": 1,
        "latency_s": 0.25,
        "attempts": 1,
        "retries": None,
        "error": None,
        "batch_id": "batch-1",
    }


def make_score(item: Item, salt: float = 0.0) -> ScoreRow:
    """A deterministic score per item, with every numeric field filled."""
    delta = math.sin(item.source_row + 1.0 + salt)
    return PairScoreRow(
        item_id=item.item_id,
        metric="cll",
        metric_version="cll-1",
        outcome="stereo" if delta > 0 else "anti",
        delta=delta,
        score_stereo=-10.0 + delta,
        score_anti=-10.0,
        lp_stereo=-12.5 + delta,
        lp_anti=-12.5,
        prior_stereo=-3.0,
        prior_anti=-3.1,
        n_tokens_stereo=9,
        n_tokens_anti=9,
        details={"tokens": [item.source_row, 2], "note": "ok"},
    )


def make_exclusions(n: int) -> list[Exclusion]:
    return [
        Exclusion(BENCHMARK, VERSION, 1000 + i, "target_mask_mismatch", f"row {1000 + i}")
        for i in range(n)
    ]


def make_measures() -> list[AxisMeasure]:
    definition = "stereo wins / decided pairs"
    return [
        AxisMeasure(BENCHMARK, "caste", "bias_rate", 3, 5, 0.6, 0.23, 0.88, definition),
        AxisMeasure(BENCHMARK, "religion", "bias_rate", 2, 5, 0.4, 0.12, 0.77, definition),
    ]


def table_rows(path: Any, table: str) -> list[tuple]:
    """Every row of a table in a DuckDB file, sorted, read without the Store."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        data: pa.Table = con.sql(f"SELECT * FROM {table}").to_arrow_table()
    finally:
        con.close()
    rows = [tuple(repr(v) for v in row.values()) for row in data.to_pylist()]
    return sorted(rows)


def snapshot_tables(path: Any) -> dict[str, list[tuple]]:
    return {table: table_rows(path, table) for table in (*STORE_TABLES, "schema_migrations")}
