"""A writer that lost its lease stops (issue 47, item 2), through the CLI a user types.

A run's owner that was only slow, not dead, may find its run taken over when it wakes:
it sent no heartbeat for longer than the stale time, so another ``bias-monitor run`` of
the same configuration resumed the run. Before this check the slow owner scored on into
the run and finished it under the new owner, which then failed (``run ... is already
complete; it cannot be finished again``, exit 2).

The stall is real: the first process is held (``monitor.jobs.hold``) once its first
chunk of scores is committed, then stopped with SIGSTOP, so its heartbeat thread stops
too, as on a swapped-out machine. Its lease is aged past the stale time (what 120 s
without a heartbeat would leave), and a second process takes the run over and is held
once it has it. The first is then let go (SIGCONT): it must stop at its next write with
the one-line message and exit code 4, and the store must be exactly as the take-over
left it. The second then completes the run with exactly its items.

The model is a tiny random Llama saved as a folder and pinned with ``snapshots add``:
what is tested is the lease, not the scores, and SmolLM2 would cost ~25 s a process.
On a file store and on a SQLite-catalog lake (offline); the PostgreSQL + S3 lake is the
same code path (``Store._transaction``) and is left to tests/test_lake_concurrency.py.
"""

from __future__ import annotations

import json
import os
import signal
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


@pytest.fixture(scope="module")
def tiny_snapshot(tmp_path_factory) -> dict[str, str]:
    """A tiny random causal LM saved as a model folder and pinned by ``snapshots add``;
    the environment every command of this module runs with."""
    from _models import tiny_causal

    root = tmp_path_factory.mktemp("lease-takeover")
    folder = root / "models" / SNAPSHOT
    backend = tiny_causal()
    backend.model.save_pretrained(folder, safe_serialization=True)
    backend.tokenizer.save_pretrained(folder)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("MONITOR_DB", "MONITOR_LAKE_DATA")},
        "MONITOR_SNAPSHOTS_DIR": str(root / "snapshots"),
        "MONITOR_CACHE_DIR": str(root / "cache"),
        "NO_COLOR": "1",
        "OMP_NUM_THREADS": "1",
    }
    env.pop("MONITOR_HOME", None)
    added = subprocess.run(
        [sys.executable, "-m", "monitor", "snapshots", "add", str(folder), "--id", SNAPSHOT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert added.returncode == 0, added.stderr
    return env


def _wait_for(path: Path, proc: subprocess.Popen, deadline: float) -> str:
    """What the held process wrote into ``path`` (its run id), once it is there."""
    while not (path.exists() and (text := path.read_text(encoding="utf-8"))):
        if proc.poll() is not None:
            pytest.fail(f"exit {proc.returncode} before {path.name}:\n{proc.stderr.read()}")
        assert time.monotonic() < deadline, f"no {path.name} in time"
        time.sleep(0.05)
    return text


def _age_lease(db: str, run_id: str, proc: subprocess.Popen) -> None:
    """Make ``run_id``'s lease 10 minutes old (stale: the default stale time is 120 s).
    The stopped process may have been stopped inside a heartbeat's transaction, holding
    the file's lock: then it runs a moment and is stopped again."""
    for _ in range(20):
        try:
            store = Store(db, lock_timeout=1.0)
            with store._transaction() as con:
                con.execute(
                    "UPDATE run_leases SET heartbeat_at = heartbeat_at - INTERVAL 10 MINUTE "
                    "WHERE run_id = ?",
                    [run_id],
                )
            store.close()
            return
        except Exception:  # the lock or a catalog busy with the stopped process's write
            os.kill(proc.pid, signal.SIGCONT)
            time.sleep(0.2)
            os.kill(proc.pid, signal.SIGSTOP)
    pytest.fail("the stopped process kept the store locked")


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


@pytest.mark.parametrize("kind", ["file", "lake-sqlite"])
def test_an_owner_that_stalled_and_lost_its_run_stops_and_writes_nothing(
    kind, tiny_snapshot, tmp_path, monkeypatch, shared_datasets
):
    db, lake_env = new_location(kind, tmp_path)
    for name, value in lake_env.items():
        monkeypatch.setenv(name, value)
    env = {
        **tiny_snapshot,
        **lake_env,
        "MONITOR_DB": db,
        "MONITOR_DATA_DIR": str(tmp_path / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
    }
    command = [sys.executable, "-m", "monitor", *RUN]

    def start(hold: str, at: str) -> subprocess.Popen:
        return subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, HOLD_ENV: str(tmp_path / hold), AT_ENV: at},
        )

    slow = start("slow", "stored:1")  # held once its first chunk is committed
    taker: subprocess.Popen | None = None
    try:
        deadline = time.monotonic() + 300
        run_id = _wait_for(tmp_path / "slow.held", slow, deadline)
        os.kill(slow.pid, signal.SIGSTOP)  # stalled: its heartbeat stops too
        _age_lease(db, run_id, slow)
        stored = len(_state(db, run_id)["scores"])
        assert 0 < stored < TOTAL, stored

        taker = start("taker", "scoring")  # held once it owns the run, before scoring
        assert _wait_for(tmp_path / "taker.held", taker, deadline) == run_id
        taken = _state(db, run_id)
        assert taken["lease"] == [(taken["lease"][0][0], taker.pid)]

        (tmp_path / "slow.release").touch()
        os.kill(slow.pid, signal.SIGCONT)  # wakes up, scores its next chunk, tries to write
        out, err = slow.communicate(timeout=300)
        assert slow.returncode == LEASE_LOST_EXIT, err[-3000:]
        assert out == ""
        message = [line for line in err.splitlines() if line.startswith("error:")]
        host = os.uname().nodename
        assert message == [
            f"error: run {run_id} was taken over by pid {taker.pid} on {host} after this "
            "process stalled; stopping (nothing more written to it)"
        ], err[-3000:]
        assert _state(db, run_id) == taken  # nothing written after the take-over

        (tmp_path / "taker.release").touch()
        out, err = taker.communicate(timeout=300)
    finally:
        for proc in (slow, taker):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()
    assert taker.returncode == 0, err[-3000:]
    (outcome,) = json.loads(out)
    assert outcome["run_id"] == run_id and outcome["resumed_from"] == stored
    assert (outcome["status"], outcome["n_scored"]) == ("complete", TOTAL)
    assert f"resuming run {run_id}: {stored} of {TOTAL} items already stored" in err
    with Store(db, read_only=True)._connect() as con:
        per_run = con.execute("SELECT run_id, count(*) FROM scores GROUP BY 1").fetchall()
        distinct = con.execute("SELECT count(DISTINCT item_id) FROM scores").fetchone()[0]
        runs = con.execute("SELECT run_id, status FROM runs").fetchall()
        validations = con.execute("SELECT count(*) FROM validations").fetchone()[0]
        lease_rows = con.execute("SELECT count(*) FROM run_leases").fetchone()[0]
    assert per_run == [(run_id, TOTAL)] and distinct == TOTAL
    assert runs == [(run_id, "complete")]
    assert validations == 1  # judged once, by the new owner
    assert lease_rows == 0
