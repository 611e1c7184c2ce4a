"""A writer that lost its lease stops (issue 47, item 2), through the CLI a user types.

A run's owner that was only slow, not dead, may find its run taken over when it wakes:
it sent no heartbeat for longer than the stale time, so another ``bias-monitor run`` of
the same configuration resumed the run. Before this check the slow owner scored on into
the run and finished it under the new owner, whose own finish would then be refused
(``finish_run``: ``run ... is already complete; it cannot be finished again``).

The stall is real: the first process is held (``monitor.jobs.hold``) once its first
chunk of scores is committed, then stopped with SIGSTOP, so its heartbeat thread stops
too, as on a swapped-out machine. Its lease is aged past the stale time (what 120 s
without a heartbeat would leave). A second process, started with the first and held
with its model loaded before it claims anything, is then let go: it takes the run over
and is held again once it has it. The first is then let go (SIGCONT): it must stop at
its next write with the one-line message and exit code 4, and the store must be exactly
as the take-over left it. The second then completes the run with exactly its items.

The model is a tiny random Llama saved as a folder and pinned as a ``local-dir``
snapshot (what ``snapshots add`` writes): what is tested is the lease, not the scores,
and SmolLM2 would cost ~25 s a process. On a file store and on a SQLite-catalog lake
(offline), the two side by side, step by step (their processes overlap). The
PostgreSQL + S3 lake goes through the same code (``Store._transaction``); it is not
repeated here.

Breaking the code: with the lease check in ``Store._transaction`` skipped, the slow
owner scored on and finished the run (exit 0) on both stores.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _lake import new_location

from monitor.jobs.hold import AT_ENV, HOLD_ENV
from monitor.store.db import Store
from monitor.store.leases import LEASE_LOST_EXIT

SNAPSHOT = "tiny-lease"
BENCHMARK = "bhed-caste"  # 106 items, 212 requests: two chunks of scoring
TOTAL = 106
RUN = ["run", "-s", SNAPSHOT, "-b", BENCHMARK, "--no-panel", "--no-controls", "--format", "json"]


KINDS = ("file", "lake-sqlite")


@pytest.fixture(scope="module")
def tiny_snapshot(tmp_path_factory) -> dict[str, str]:
    """A tiny random causal LM saved as a model folder and pinned as a snapshot; the
    environment every command of this module runs with."""
    from _models import tiny_causal

    from monitor.snapshots.pin import pin

    root = tmp_path_factory.mktemp("lease-takeover")
    folder = root / "models" / SNAPSHOT
    backend = tiny_causal()
    backend.model.save_pretrained(folder, safe_serialization=True)
    backend.tokenizer.save_pretrained(folder)
    pin(str(folder), root / "snapshots", snapshot_id=SNAPSHOT)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("MONITOR_DB", "MONITOR_LAKE_DATA")},
        "MONITOR_SNAPSHOTS_DIR": str(root / "snapshots"),
        "MONITOR_CACHE_DIR": str(root / "cache"),
        "NO_COLOR": "1",
        "OMP_NUM_THREADS": "1",
    }
    env.pop("MONITOR_HOME", None)
    return env


def _wait_for(path: Path, proc: subprocess.Popen, deadline: float) -> str:
    """What the held process wrote into ``path`` (its run id), once it is there."""
    while not (path.exists() and (text := path.read_text(encoding="utf-8"))):
        if proc.poll() is not None:
            pytest.fail(f"exit {proc.returncode} before {path.name}:\n{proc.stderr.read()}")
        assert time.monotonic() < deadline, f"no {path.name} in time"
        time.sleep(0.05)
    return text


def _state(db: str, run_id: str) -> dict[str, object]:
    """Everything a write to the run would change: its row, its scores (with the time
    each was stored), validations, measures and its lease."""
    with Store(db, read_only=True)._connect() as con:

        def rows(query: str) -> list[tuple]:
            return sorted(con.execute(query, [run_id]).fetchall(), key=repr)

        return {
            "run": rows(
                "SELECT status, n_scored, finished_at, notes, environment FROM runs "
                "WHERE run_id = ?"
            ),
            "scores": rows("SELECT item_id, scored_at FROM scores WHERE run_id = ?"),
            "validations": rows("SELECT suite FROM validations WHERE run_id = ?"),
            "measures": rows("SELECT benchmark, axis, measure FROM axis_measures WHERE run_id = ?"),
            "lease": rows("SELECT owner, pid FROM run_leases WHERE run_id = ?"),
        }


class Takeover:
    """One store's case, in steps, so that two stores' cases run side by side."""

    def __init__(self, kind: str, folder: Path, env: dict[str, str], monkeypatch) -> None:
        folder.mkdir()
        self.kind, self.folder = kind, folder
        self.db, lake_env = new_location(kind, folder)
        for name, value in lake_env.items():  # this process reads the lake too
            monkeypatch.setenv(name, value)
        self.env = {
            **env,
            **lake_env,
            "MONITOR_DB": self.db,
            "MONITOR_DATA_DIR": str(folder / "datasets"),
        }
        # Made before the two processes start (docs/team-store.md: two processes that
        # create one new lake at once may fail its first migration).
        Store(self.db).close()
        self.slow: subprocess.Popen | None = None
        self.taker: subprocess.Popen | None = None
        self.deadline = time.monotonic() + 300

    def _start(self, hold: str, at: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "monitor", *RUN],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**self.env, HOLD_ENV: str(self.folder / hold), AT_ENV: at},
        )

    def start(self) -> None:
        self.slow = self._start("slow", "stored:1")  # held once its first chunk is committed
        # Loaded alongside, held before it claims; held again once it owns the run.
        self.taker = self._start("taker", "opening,scoring")

    def stall(self) -> None:
        """Stop the held owner (its heartbeat thread too) and age its lease past the
        stale time, as 10 minutes without a heartbeat would have."""
        assert self.slow is not None
        self.run_id = _wait_for(self.folder / "slow.held", self.slow, self.deadline)
        os.kill(self.slow.pid, signal.SIGSTOP)
        for _ in range(20):
            try:
                store = Store(self.db, lock_timeout=1.0)
                with store._transaction() as con:
                    con.execute(
                        "UPDATE run_leases SET heartbeat_at = heartbeat_at - INTERVAL 10 MINUTE "
                        "WHERE run_id = ?",
                        [self.run_id],
                    )
                store.close()
                break
            except Exception:  # stopped inside a heartbeat's transaction: let it finish
                os.kill(self.slow.pid, signal.SIGCONT)
                time.sleep(0.2)
                os.kill(self.slow.pid, signal.SIGSTOP)
        else:
            pytest.fail(f"{self.kind}: the stopped owner kept the store locked")
        self.stored = len(_state(self.db, self.run_id)["scores"])
        assert 0 < self.stored < TOTAL, (self.kind, self.stored)

    def take(self) -> None:
        assert self.taker is not None
        assert _wait_for(self.folder / "taker.opening.held", self.taker, self.deadline)
        (self.folder / "taker.opening.release").touch()

    def taken(self) -> None:
        assert self.taker is not None
        assert _wait_for(self.folder / "taker.held", self.taker, self.deadline) == self.run_id
        self.at_takeover = _state(self.db, self.run_id)
        assert [pid for _owner, pid in self.at_takeover["lease"]] == [self.taker.pid]

    def wake_slow(self) -> None:
        assert self.slow is not None
        (self.folder / "slow.release").touch()
        os.kill(self.slow.pid, signal.SIGCONT)  # scores its next chunk, tries to write it

    def slow_stopped(self) -> None:
        assert self.slow is not None and self.taker is not None
        out, err = self.slow.communicate(timeout=300)
        assert self.slow.returncode == LEASE_LOST_EXIT, (self.kind, err[-3000:])
        assert out == ""
        assert [line for line in err.splitlines() if line.startswith("error:")] == [
            f"error: run {self.run_id} was taken over by pid {self.taker.pid} on "
            f"{socket.gethostname()} after this process stalled; stopping (nothing more "
            "written to it)"
        ], (self.kind, err[-3000:])
        # Nothing written after the take-over: not a row, a status, a measure, a lease.
        assert _state(self.db, self.run_id) == self.at_takeover, self.kind

    def release_taker(self) -> None:
        (self.folder / "taker.release").touch()

    def taker_completed(self) -> None:
        assert self.taker is not None
        out, err = self.taker.communicate(timeout=300)
        assert self.taker.returncode == 0, (self.kind, err[-3000:])
        (outcome,) = json.loads(out)
        assert outcome["run_id"] == self.run_id and outcome["resumed_from"] == self.stored
        assert (outcome["status"], outcome["n_scored"]) == ("complete", TOTAL), self.kind
        resumed = f"resuming run {self.run_id}: {self.stored} of {TOTAL} items already stored"
        assert resumed in err, (self.kind, err[-3000:])
        with Store(self.db, read_only=True)._connect() as con:
            per_run = con.execute("SELECT run_id, count(*) FROM scores GROUP BY 1").fetchall()
            items = con.execute("SELECT count(DISTINCT item_id) FROM scores").fetchone()[0]
            runs = con.execute("SELECT run_id, status FROM runs").fetchall()
            validations = con.execute("SELECT count(*) FROM validations").fetchone()[0]
            leases = con.execute("SELECT count(*) FROM run_leases").fetchone()[0]
        assert per_run == [(self.run_id, TOTAL)] and items == TOTAL, self.kind
        assert runs == [(self.run_id, "complete")], self.kind
        assert validations == 1, self.kind  # judged once, by the new owner
        assert leases == 0, self.kind

    def kill(self) -> None:
        for proc in (self.slow, self.taker):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()


def test_an_owner_that_stalled_and_lost_its_run_stops_and_writes_nothing(
    tiny_snapshot, tmp_path, monkeypatch, shared_datasets
):
    env = {**tiny_snapshot, "MONITOR_DATA_MIRROR": str(shared_datasets)}
    cases = [Takeover(kind, tmp_path / kind, env, monkeypatch) for kind in KINDS]
    steps = ("start", "stall", "take", "taken", "wake_slow", "slow_stopped", "release_taker",
             "taker_completed")  # fmt: skip
    try:
        for step in steps:
            for case in cases:
                getattr(case, step)()
    finally:
        for case in cases:
            case.kill()
