"""Run leases: one owning process per run in progress.

Two ``bias-monitor run`` commands of the same configuration on one store must not score
into one run (the second used to resume the first's live run, and one of them then
failed after writing). A run in progress therefore has a lease: the owner's random
token, host and pid, and a heartbeat the owner refreshes while it scores. Another
process may take a run over (resume it) only when its lease is free: no lease, or the
owner is gone — its pid no longer exists on this host, or its heartbeat is older than
``stale_after`` (an owner on another machine that died). Otherwise it starts its own run.

The check and the take-over happen in one transaction, and DuckDB lets one process
write at a time, so two processes can never both win one run.

An owner that was only slow, not dead (stopped, swapped out, cut off from the catalog
for longer than ``stale_after``), may find its run taken over when it wakes. Every write
it then makes to that run checks the lease first, in the write's own transaction
(``require``, called by the ``Store``): the lease is another's, so nothing is written
and :class:`LeaseLost` stops the command (exit code ``LEASE_LOST_EXIT``), leaving the
run to its new owner. Checked in the same transaction, a batch cannot land after the
take-over: the two transactions are serialised (one writer on a file; on a lake the
claim of ``sql.claim_writes`` and a retry).
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import duckdb

from monitor.errors import MonitorError
from monitor.store import sql

DEFAULT_STALE_AFTER = timedelta(seconds=120)
HEARTBEAT_EVERY_S = 20.0
# The exit code of a command whose run was taken over (docs/configuration.md): distinct
# from a failed run (1), bad input (2) and skipped snapshots (3), so a CI job can tell
# "another runner has this run now" from a failure of its own.
LEASE_LOST_EXIT = 4


@dataclass(frozen=True)
class Owner:
    """Who holds a lease: a random token per process, with its host and pid for people
    (and for the dead-pid check on the same host)."""

    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


@dataclass(frozen=True)
class Lease:
    run_id: str
    owner: str
    host: str
    pid: int
    heartbeat_at: datetime

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


class LeaseLost(MonitorError):
    """This process's run was taken over by another while it was stalled: it writes
    nothing more to the run and stops (the new owner finishes it)."""

    exit_code = LEASE_LOST_EXIT

    def __init__(self, run_id: str, holder: Lease | None) -> None:
        by = holder.describe() if holder is not None else "another process"
        now = "" if holder is not None else " (which has since given its lease up)"
        super().__init__(
            f"run {run_id} was taken over by {by}{now} after this process stalled; "
            "stopping (nothing more written to it)"
        )
        self.run_id = run_id
        self.holder = holder


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return True


def is_free(lease: Lease | None, me: Owner, now: datetime, stale_after: timedelta) -> bool:
    """Whether ``me`` may take the run this lease is on."""
    if lease is None or lease.owner == me.token:
        return True
    if lease.host == me.host and not _pid_alive(lease.pid):
        return True  # its owner was killed on this machine
    return now - lease.heartbeat_at > stale_after


def lease_of(con: duckdb.DuckDBPyConnection, run_id: str) -> Lease | None:
    row = sql.one(
        con,
        "SELECT run_id, owner, host, pid, heartbeat_at FROM run_leases WHERE run_id = ?",
        [run_id],
    )
    return Lease(*row) if row else None


def take(con: duckdb.DuckDBPyConnection, run_id: str, me: Owner) -> None:
    """Make ``me`` the owner of ``run_id`` (inside the caller's transaction)."""
    con.execute("DELETE FROM run_leases WHERE run_id = ?", [run_id])
    con.execute(
        "INSERT INTO run_leases VALUES (?, ?, ?, ?, current_timestamp, current_timestamp)",
        [run_id, me.token, me.host, me.pid],
    )


def first_free(
    con: duckdb.DuckDBPyConnection,
    candidates: list[str],
    me: Owner,
    now: datetime,
    stale_after: timedelta,
) -> tuple[str | None, list[Lease]]:
    """The newest candidate run whose lease is free, and the live leases passed over."""
    passed: list[Lease] = []
    for run_id in candidates:
        lease = lease_of(con, run_id)
        if is_free(lease, me, now, stale_after):
            return run_id, passed
        assert lease is not None
        passed.append(lease)
    return None, passed


def require(con: duckdb.DuckDBPyConnection, run_id: str, me: Owner) -> None:
    """Raise :class:`LeaseLost` unless ``me`` still holds ``run_id``'s lease (inside the
    caller's write transaction, before it writes: a refused write stores nothing)."""
    lease = lease_of(con, run_id)
    if lease is None or lease.owner != me.token:
        raise LeaseLost(run_id, lease)


def refresh(con: duckdb.DuckDBPyConnection, run_id: str, me: Owner) -> bool:
    """Refresh ``me``'s heartbeat on ``run_id`` (inside the caller's transaction); False
    when ``me`` no longer holds the lease. Looked up, then updated: a lake's UPDATE
    has no RETURNING."""
    held = sql.one(
        con, "SELECT 1 FROM run_leases WHERE run_id = ? AND owner = ?", [run_id, me.token]
    )
    if held is None:
        return False
    con.execute(
        "UPDATE run_leases SET heartbeat_at = current_timestamp WHERE run_id = ? AND owner = ?",
        [run_id, me.token],
    )
    return True
