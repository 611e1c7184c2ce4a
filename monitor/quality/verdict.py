"""Record a suite's verdict in the store: the validation document, and quarantine on failure.

Plain SQL against the schema in ``monitor.store.schema`` (migration 1) on a connection
the caller owns, so the gate can run inside the caller's transaction.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from monitor.errors import UserInputError
from monitor.quality.suites import SuiteResult

if TYPE_CHECKING:
    import duckdb

MAX_NOTE_CHARS = 300


def store_validation(con: duckdb.DuckDBPyConnection, run_id: str, result: SuiteResult) -> None:
    """Append the suite's JSON document to ``validations`` (one row per suite run)."""
    con.execute(
        "INSERT INTO validations (run_id, suite, success, results, validated_at) "
        "VALUES (?, ?, ?, CAST(? AS JSON), ?)",
        [run_id, result.suite, result.success, result.to_json(), datetime.now(UTC)],
    )


def quarantine_note(result: SuiteResult) -> str:
    """A short reason for ``runs.notes``: how many checks failed and the first one."""
    note = "quality gate failed: " + result.summary()
    return note if len(note) <= MAX_NOTE_CHARS else note[: MAX_NOTE_CHARS - 1] + "…"


def quarantine(con: duckdb.DuckDBPyConnection, run_id: str, result: SuiteResult) -> None:
    """Mark the run quarantined: kept for inspection, never used as a baseline."""
    row = con.execute(
        "UPDATE runs SET status = 'quarantined', notes = ?, "
        "finished_at = coalesce(finished_at, ?) WHERE run_id = ? RETURNING run_id",
        [quarantine_note(result), datetime.now(UTC), run_id],
    ).fetchone()
    if row is None:
        raise UserInputError(f"cannot quarantine run {run_id!r}: no such run in the store")
