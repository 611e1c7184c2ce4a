"""Error types that carry the process exit code the CLI should use.

Keeping the exit code on the exception lets every room raise a precise,
user-facing error without knowing about the CLI, and lets the CLI print one
clear line instead of a traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class MonitorError(Exception):
    """Base for errors that should reach the user as one line, not a traceback."""

    exit_code: int = 1


class UserInputError(MonitorError):
    """Bad input: unknown snapshot, malformed config, missing data, unwritable DB.

    Raised *before* anything is written, so the store is left untouched.
    """

    exit_code = 2


class NotApplicable(UserInputError):
    """A snapshot's kind has no metric for the selected benchmarks (an embedding model
    asked to answer questions). ``run --only-applicable`` skips such a snapshot by name;
    otherwise it is bad input like any other."""


class DataIntegrityError(UserInputError):
    """A benchmark file is missing, malformed or fails its pinned checksum."""


class SnapshotUnavailable(MonitorError):
    """A snapshot's weights cannot be obtained here (no hub access, package missing).

    Not fatal for a multi-snapshot run: the snapshot is skipped with this reason.
    """

    exit_code = 3


def closest(name: str, known: Iterable[str], n: int = 1) -> list[str]:
    """Up to ``n`` known names a mistyped ``name`` most likely meant, for a "did you mean"
    (a typo is the usual cause of an unknown id): those it is the start of first, then
    the closest by ``difflib``'s ratio (0.6 or better). Unknown snapshots and benchmarks
    share it, so both suggest alike."""
    ids = sorted(set(known))
    found = [k for k in ids if k.startswith(name)][:n]
    for k in difflib.get_close_matches(name, ids, n=n, cutoff=0.6):
        if len(found) < n and k not in found:
            found.append(k)
    return found
