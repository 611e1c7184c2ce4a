"""A test hook: stop a run at a known point until the test lets it go on.

Tests of two processes on one store (a second command while the first one scores, a
SIGKILL in the middle of a run) must not depend on how fast the machine scores: on a
fast one the first run finished before the second started, and a 121-item run could end
between two polls of the killing test. With ``MONITOR_TEST_HOLD=PATH`` in its
environment, a run stops once at each point ``MONITOR_TEST_HOLD_AT`` names (a comma
between two):

* ``opening``: the backend is loaded and the run is not claimed or begun yet (a process
  that is to take over a run, ready to claim it the moment the test lets it);
* ``scoring`` (the default): the run is open — its row written, its lease held, its
  heartbeat running — and nothing is scored yet;
* ``stored:N``: at least ``N`` of its score rows are committed (rows held for a later
  write are written first, so what the test sees is what a kill would leave).

There it writes ``PATH.held`` (its run id; ``PATH.opening.held`` and the snapshot id at
``opening``) and waits until ``PATH.release`` (``PATH.opening.release``) exists, or it is
killed; after ``MAX_WAIT_S`` it goes on by itself. Without the variable this is one
environment lookup and does nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

HOLD_ENV = "MONITOR_TEST_HOLD"
AT_ENV = "MONITOR_TEST_HOLD_AT"
MAX_WAIT_S = 600.0
_POLL_S = 0.05
_held: set[str] = set()  # a process holds once at each point, where it first matches


def wanted(point: str, stored: int = 0) -> bool:
    """Whether a hold is asked for at ``point`` with ``stored`` rows committed."""
    if point in _held or not os.environ.get(HOLD_ENV):
        return False
    for asked in os.environ.get(AT_ENV, "scoring").split(","):
        name, _, count = asked.strip().partition(":")
        if name == point:
            return point != "stored" or stored >= int(count or 0)
    return False


def hold_at(
    point: str, run_id: str, *, stored: int = 0, prepare: Callable[[], object] | None = None
) -> None:
    """Hold here if the environment asks for ``point``; ``prepare`` runs first (write the
    rows still buffered). ``run_id``: what the held file says (at ``opening``, the
    snapshot's id: there is no run yet)."""
    if not wanted(point, stored):
        return
    _held.add(point)
    if prepare is not None:
        prepare()
    base = os.environ[HOLD_ENV] + (".opening" if point == "opening" else "")
    Path(f"{base}.held").write_text(run_id, encoding="utf-8")
    release = Path(f"{base}.release")
    deadline = time.monotonic() + MAX_WAIT_S
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(_POLL_S)
