"""Which DuckLake snapshot a command reads, and reading a lake as it was (``--as-of``).

Every commit to a lake is a snapshot with a number and a time. A reading command holds
one transaction on a lake (``Store.read``), and DuckLake pins a transaction to the
snapshot current when it first reads, so everything one command reads comes from one
snapshot; ``current`` names it. A report records that snapshot (``lake_snapshot``) and
``report --as-of N`` attaches the lake at snapshot N (DuckLake's ``SNAPSHOT_VERSION``;
a time: ``SNAPSHOT_TIME``, the newest snapshot committed by then), so the same report
can be built again byte for byte after more runs have landed. A DuckDB file has no
snapshots: ``--as-of`` on one is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from monitor.errors import UserInputError
from monitor.store.location import LakeLocation, Location


@dataclass(frozen=True)
class LakeSnapshot:
    """One committed snapshot of a lake: its number (what ``--as-of`` takes) and when it
    was committed (UTC)."""

    id: int
    committed_at: datetime


AsOf = int | datetime  # a snapshot number, or a time (aware, UTC)


def parse_as_of(text: str) -> AsOf:
    """``--as-of``'s value: a snapshot number, or an ISO 8601 time (a date is its
    midnight; UTC unless an offset is named). A time still to come is refused: the lake's
    state at it is not known yet, so a report "as of" it could not be built again."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UserInputError(
            f"--as-of {text!r}: give a lake snapshot number (a report's lake_snapshot) "
            "or a time such as 2024-07-18T12:00:00Z"
        ) from None
    when = when.replace(tzinfo=UTC) if when.utcoffset() is None else when.astimezone(UTC)
    if when > datetime.now(UTC):
        raise UserInputError(f"--as-of {text!r} is in the future; give a time already past")
    return when


def refuse_on_file(where: Location, as_of: AsOf | None) -> None:
    """A DuckDB file keeps only its latest state: ``--as-of`` on one is one line."""
    if as_of is not None and not isinstance(where, LakeLocation):
        raise UserInputError(
            f"--as-of reads a lake's snapshot, and {where.label} is a DuckDB file, which has "
            "no snapshots; pass a DuckLake --db (ducklake:...)"
        )


def attach_option(as_of: AsOf) -> str:
    """The ATTACH option that pins the lake at ``as_of``."""
    if isinstance(as_of, int):
        return f"SNAPSHOT_VERSION {as_of}"
    return f"SNAPSHOT_TIME '{as_of.astimezone(UTC).isoformat()}'"


def not_found(exc: duckdb.Error, location: LakeLocation, as_of: AsOf) -> UserInputError | None:
    """The one line for a snapshot the lake does not have (``exc`` from the ATTACH),
    else None (another failure, which the caller words)."""
    if "No snapshot found" not in str(exc):
        return None
    if isinstance(as_of, int):
        what = f"snapshot {as_of}"
    else:
        what = f"snapshot committed by {as_of.isoformat()} (the lake is younger)"
    return UserInputError(
        f"--as-of: {location.label} has no {what}; a report's lake_snapshot names one"
    )


def current(con: duckdb.DuckDBPyConnection, catalog: str) -> LakeSnapshot:
    """The snapshot ``con`` reads the lake ``catalog`` at: inside a transaction, the one
    the transaction is pinned to; on a lake attached ``--as-of``, that one."""
    row = con.execute(
        f"SELECT s.snapshot_id, s.snapshot_time FROM {catalog}.current_snapshot() AS c "
        f"JOIN {catalog}.snapshots() AS s ON s.snapshot_id = c.id"
    ).fetchone()
    assert row is not None, "a lake always has a current snapshot"
    return LakeSnapshot(id=int(row[0]), committed_at=row[1].astimezone(UTC))
