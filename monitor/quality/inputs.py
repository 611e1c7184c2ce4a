"""Read one run out of the store as pandas frames for the results suite (plain SQL).

Pandas cannot tell SQL NULL from NaN once a DOUBLE column is fetched, but the results
suite must: NULL is "this metric does not produce the number", NaN is a broken score.
So every floating column comes with a ``<column>_finite`` flag computed in DuckDB:
NULL when the value is NULL, false for NaN and ±inf. Benchmark text is never selected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.errors import UserInputError

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

SCORE_FLOATS = (
    "delta",
    "score_stereo",
    "score_anti",
    "lp_stereo",
    "lp_anti",
    "prior_stereo",
    "prior_anti",
    "prob_stereo",
    "prob_anti",
)
MEASURE_FLOATS = ("value", "ci_low", "ci_high")


def _finite_flags(alias: str, columns: tuple[str, ...]) -> str:
    return ", ".join(f"isfinite({alias}.{c}) AS {c}_finite" for c in columns)


def read_run(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The run's row (provenance), one row; JSON and timestamps as text."""
    frame = con.execute(
        """
        SELECT run_id, snapshot_id, snapshot_revision, metric, metric_version, status,
               CAST(dataset_versions AS VARCHAR) AS dataset_versions,
               CAST(environment AS VARCHAR)      AS environment,
               git_commit, device, CAST(started_at AS VARCHAR) AS started_at, n_scored,
               coalesce(len(json_keys(dataset_versions)), 0) AS n_dataset_versions,
               coalesce(len(json_keys(environment)), 0)      AS n_environment_fields,
               list_has_all(coalesce(json_keys(dataset_versions), []), benchmarks)
                   AS dataset_versions_cover_benchmarks
        FROM runs WHERE run_id = ?
        """,
        [run_id],
    ).df()
    if frame.empty:
        raise UserInputError(f"no run with id {run_id!r} in the store")
    return frame


def read_scores(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    """The run's score rows with the run's own metric beside each and an items-table join flag."""
    columns = ", ".join(f"s.{c}" for c in SCORE_FLOATS)
    return con.execute(
        f"""
        SELECT s.run_id, s.item_id, s.metric, s.metric_version, s.outcome,
               r.metric AS run_metric, r.metric_version AS run_metric_version,
               {columns}, s.n_tokens_stereo, s.n_tokens_anti,
               {_finite_flags("s", SCORE_FLOATS)},
               (i.item_id IS NOT NULL) AS item_known
        FROM scores s
        JOIN runs r ON r.run_id = s.run_id
        LEFT JOIN items i ON i.item_id = s.item_id
        WHERE s.run_id = ?
        ORDER BY s.item_id
        """,
        [run_id],
    ).df()


def read_axis_measures(con: duckdb.DuckDBPyConnection, run_id: str) -> pd.DataFrame:
    return con.execute(
        f"""
        SELECT m.run_id, m.benchmark, m.axis, m.measure, m.k, m.n, m.value, m.ci_low, m.ci_high,
               {_finite_flags("m", MEASURE_FLOATS)}
        FROM axis_measures m
        WHERE m.run_id = ?
        ORDER BY m.benchmark, m.axis, m.measure
        """,
        [run_id],
    ).df()
