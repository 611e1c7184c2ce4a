"""The one read the pull-request check's reuse of a baseline run needs (``monitor.jobs.reuse``).

Kept in a module of its own: the decision (trusted origin, same fingerprint) is the jobs
room's, this is only the SQL that finds the candidate.
"""

from __future__ import annotations

from typing import Any

import duckdb

from monitor.store import queries


def latest_complete_run(
    con: duckdb.DuckDBPyConnection, snapshot_id: str, metric: str
) -> dict[str, Any] | None:
    """The newest complete run of ``snapshot_id`` with ``metric`` (the quality gate passed
    it; a quarantined run is never a baseline), as a row with its JSON columns parsed: the
    run ``drift --baseline-snapshot`` would compare with. ``None`` when there is none."""
    rows = queries.fetch_dicts(
        con,
        "SELECT * FROM runs WHERE snapshot_id = ? AND metric = ? AND status = 'complete' "
        "ORDER BY started_at DESC, run_id DESC LIMIT 1",
        [snapshot_id, metric],
    )
    return rows[0] if rows else None
