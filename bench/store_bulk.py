"""The store-scale benchmark's own store helper: many runs written in one transaction.

``Store.record_run`` + ``finish_run`` write one run in two transactions from Python
records; a year of synthetic nights (7,340 runs, 20.1M score rows) took ~30 min that way
on a loaded 2-core machine. This writes the same rows (the ``runs`` row as
``codec.run_params`` makes it, closed ``complete`` with its counts; the scores as the
store's wide batch, split into ``scores`` and the pairs' ``pair_scores`` by the store's
own ``details.insert``; the measures as ``codec.measures_table``) for a batch of runs at
once. Benchmark use only: it skips the checks the API makes for a user's import (a run
id already stored, unique keys), which the generator's ids satisfy by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

import duckdb
import pyarrow as pa

from monitor.records import Measure, RunRecord
from monitor.store import codec, details


@dataclass
class Batch:
    """Runs gathered for one write: their ``runs`` rows, score batches and measures."""

    runs: list[dict] = field(default_factory=list)
    scores: list[pa.Table] = field(default_factory=list)
    measures: list[pa.Table] = field(default_factory=list)

    def add(self, run: RunRecord, scores: pa.Table, measures: list[Measure]) -> None:
        """A finished run: status ``complete``, ``n_scored`` its rows, none excluded."""
        row = codec.run_params(run)
        row.update(status="complete", n_scored=scores.num_rows, n_excluded=0)
        self.runs.append(row)
        self.scores.append(scores)
        self.measures.append(codec.measures_table(run.run_id, measures))


class BulkWriter:
    """One DuckDB connection to a store that ``Store.open`` has created and migrated."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> Self:
        self.con = duckdb.connect(str(self.path))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.con.close()

    def write(self, batch: Batch) -> None:
        """Every run of ``batch`` with its scores and measures, in one transaction."""
        if not batch.runs:
            return
        con = self.con
        finished = datetime.now(UTC)
        runs = pa.Table.from_pylist([{**r, "finished_at": finished} for r in batch.runs])
        scores = pa.concat_tables(batch.scores)
        measures = pa.concat_tables(batch.measures)
        con.execute("BEGIN TRANSACTION")
        try:
            con.register("_bulk_runs", runs)
            con.execute("INSERT INTO runs BY NAME SELECT * FROM _bulk_runs")
            con.register("_bulk_scores", scores)
            details.insert(con, "scores", "_bulk_scores", scores.schema.names)
            con.register("_bulk_measures", measures)
            con.execute("INSERT INTO axis_measures BY NAME SELECT * FROM _bulk_measures")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        finally:
            for view in ("_bulk_runs", "_bulk_scores", "_bulk_measures"):
                con.unregister(view)
