"""What every importer of published results shares: the snapshot name it files runs
under, the date it says they were made, and the word for a fact the files do not give.

The importers themselves live with the family whose results they read (its
``Family.importers``: the caste study's with the sentence pairs, BBQ's and BharatBBQ's
with the choice questions) and write through ``jobs.lifecycle`` like every run.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

from monitor.errors import UserInputError
from monitor.snapshots.model import SNAPSHOT_ID_MAX_CHARS

UNKNOWN = "unknown"  # a provenance fact the published files do not record

_SNAPSHOT_ID = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def check_snapshot_id(snapshot: str) -> None:
    """A snapshot id is a file-name-safe series name of at most ``SNAPSHOT_ID_MAX_CHARS``
    (a longer one is accepted by the store but breaks ``export``, whose file names hold
    it); anything else is a UserInputError."""
    if len(snapshot) > SNAPSHOT_ID_MAX_CHARS:
        raise UserInputError(
            f"snapshot id {snapshot[:40]!r}… is {len(snapshot)} characters; at most "
            f"{SNAPSHOT_ID_MAX_CHARS} (a shorter --suffix?)"
        )
    if not _SNAPSHOT_ID.match(snapshot):
        raise UserInputError(
            f"snapshot id {snapshot!r} must be lower-case letters, digits, '.', '_' or '-'"
        )


def parse_date(date: str) -> datetime:
    """An ISO date or date-time as an aware datetime (UTC where no zone is given); a
    one-line UserInputError otherwise."""
    try:
        parsed = datetime.fromisoformat(date)
    except ValueError:
        raise UserInputError(
            f"date {date!r} is not an ISO date (e.g. 2025-04-15 or 2025-04-15T10:00:00+00:00)"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_day(text: str | None, option: str = "--since") -> datetime | None:
    """A ``YYYY-MM-DD`` option as midnight UTC (None stays None); a one-line
    UserInputError naming ``option`` otherwise (an import's ``--date``, ``drift --since``)."""
    if text is None:
        return None
    try:
        return datetime.combine(date.fromisoformat(text), datetime.min.time(), tzinfo=UTC)
    except ValueError as exc:
        raise UserInputError(f"{option} {text!r}: expected a date YYYY-MM-DD") from exc
