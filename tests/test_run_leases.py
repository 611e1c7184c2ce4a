"""Two writers, one store: a run in progress is owned, so two commands never share it.

Before leases, a second `bias-monitor run` of the same configuration resumed the first
one's live run and scored into it; one process then exited 2 after writing. Now the
second starts its own run (both complete, exit 0), and a killed owner's run is still
resumed (tests/test_cli_run.py::test_kill_minus_nine_then_resume).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from monitor.jobs.hold import AT_ENV, HOLD_ENV
from monitor.records import RunRecord
from monitor.store.db import Store
from monitor.store.leases import Owner


def _record(run_id: str, day: int = 1) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        snapshot_id="s",
        snapshot_kind="hf-causal",
        snapshot_revision="r",
        snapshot_manifest={},
        metric="cll",
        metric_version="2",
        benchmarks=["b"],
        dataset_versions={},
        fingerprint="fp",
        trigger="manual",
        started_at=datetime(2026, 1, day, tzinfo=UTC),
    )


def _age_lease(path: Path, run_id: str, seconds: int) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE run_leases SET heartbeat_at = heartbeat_at - to_seconds(?) WHERE run_id = ?",
            [seconds, run_id],
        )


def test_a_live_owners_run_is_passed_over_and_a_gone_owners_run_is_taken(tmp_path):
    store = Store(tmp_path / "m.duckdb")
    me, other = Owner(), Owner()
    store.begin_run(_record("live"), owner=other)  # this very process: alive
    run_id, busy = store.claim_resumable("fp", me)
    assert run_id is None and [b.run_id for b in busy] == ["live"]
    assert "pid" in busy[0].describe()

    # The same owner may always take its own run back.
    assert store.claim_resumable("fp", other)[0] == "live"

    # An owner on this host whose process is gone: its run is free at once.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    store.begin_run(
        _record("killed", day=2), owner=replace(other, token="t2", pid=int(dead.stdout))
    )
    assert store.claim_resumable("fp", me)[0] == "killed"

    # An owner on another machine: free only once its heartbeat is stale.
    remote = Owner(host="elsewhere.invalid")
    store.begin_run(_record("remote", day=3), owner=remote)
    assert store.claim_resumable("fp", me, stale_after=timedelta(seconds=60))[0] != "remote"
    _age_lease(store.path, "remote", 120)
    assert store.claim_resumable("fp", me, stale_after=timedelta(seconds=60))[0] == "remote"

    # A heartbeat says whether the lease is still held; release gives it up.
    assert store.heartbeat("remote", me) and not store.heartbeat("remote", remote)
    store.release("remote", me)
    assert store.claim_resumable("fp", remote)[0] == "remote"


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 600) -> None:
    """Until ``path`` exists; fails at once if ``proc`` ended first (it never held)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            _out, err = proc.communicate()
            pytest.fail(f"the run ended (exit {proc.returncode}) before it held:\n{err[-3000:]}")
        assert time.monotonic() < deadline, f"no {path.name} after {timeout:.0f} s"
        time.sleep(0.1)


@pytest.mark.slow
def test_two_identical_commands_on_one_store_give_two_complete_runs(monitor_env: Path):
    db = monitor_env / "monitor.duckdb"
    args = [sys.executable, "-m", "monitor", "run", "-b", "bhed-caste", "--no-controls",
            "--no-panel", "--db", str(db), "--format", "json"]  # fmt: skip
    # The first run is held (monitor.jobs.hold) once it is open — its lease held, nothing
    # scored — and the second runs whole meanwhile: the case where the second used to
    # resume (and corrupt) the first one's run. Held, not raced: on a fast machine the
    # first used to finish before the second started.
    hold = monitor_env / "hold"
    first = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, HOLD_ENV: str(hold), AT_ENV: "scoring"},
    )  # fmt: skip
    try:
        _wait_for(hold.with_suffix(".held"), first)
        held_run = hold.with_suffix(".held").read_text(encoding="utf-8")
        # One whole run, then the rest of the first: 1,800 s each, for a loaded machine
        # (at load 22 on two cores one run took over 900 s).
        second = subprocess.run(args, capture_output=True, text=True, timeout=1800)
        out2, err2 = second.stdout, second.stderr
        hold.with_suffix(".release").touch()
        out1, err1 = first.communicate(timeout=1800)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert f"run {held_run} of the same configuration is being scored by pid" in err2, err2
    assert "being scored by" not in err1
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    [a], [b] = json.loads(out1), json.loads(out2)
    assert a["run_id"] == held_run != b["run_id"]
    assert a["status"] == b["status"] == "complete" and a["n_scored"] == b["n_scored"] == 106
    with duckdb.connect(str(db), read_only=True) as con:
        per_run = dict(con.execute("SELECT run_id, count(*) FROM scores GROUP BY 1").fetchall())
        leases = con.execute("SELECT count(*) FROM run_leases").fetchone()[0]
    assert per_run == {a["run_id"]: 106, b["run_id"]: 106}
    assert leases == 0  # both released their lease when they finished

    # Smaller truths seen on the way. Progress in a log is plain lines as the work goes,
    # not carriage-return redraws that only show up at the end.
    for err in (err1, err2):
        progress = [line for line in err.splitlines() if "/106 items" in line]
        # One line per batch the backend scores (how many depends on its batch size), the
        # last one the whole run.
        assert progress and "106/106 items (100%)" in progress[-1] and "\r" not in err, err
    # The batch size used is recorded, also when it was the default.
    with duckdb.connect(str(db), read_only=True) as con:
        sizes = {b for (b,) in con.execute("SELECT batch_size FROM runs").fetchall()}
    assert sizes == {16}


def test_a_store_whose_lease_was_taken_over_writes_nothing_more_to_that_run(store_db):
    """Every write of an owner's Store to a run it leased checks the lease in the write's
    own transaction (``Store._transaction(run=...)``): once another process took the run
    over, each is refused with ``LeaseLost`` (exit code 4), nothing lands, and the new
    owner writes on. A run this Store never leased (an import) is written as before.
    Through the CLI: tests/test_lease_takeover.py."""
    from test_store_support import make_items, make_measures, make_run, make_score

    from monitor.store.leases import LEASE_LOST_EXIT, LeaseLost

    items = make_items(4)
    slow, taker = Owner(host="slow.invalid"), Owner(host="taker.invalid", pid=4242)
    mine = Store(store_db)  # the slow owner's Store
    mine.begin_run(make_run("r"), owner=slow)
    mine.upsert_items(items)
    assert mine.add_scores("r", [make_score(items[0])]) == 1
    assert mine.heartbeat("r", slow)

    other = Store(store_db)  # another process, once the slow owner's heartbeat is stale
    with other._transaction() as con:
        con.execute("UPDATE run_leases SET heartbeat_at = heartbeat_at - INTERVAL 10 MINUTE")
    assert other.claim_resumable("fp-toy", taker)[0] == "r"

    def tables() -> dict[str, list]:
        with other._connect() as con:
            return {
                t: sorted(map(repr, con.execute(f"SELECT * FROM {t}").fetchall()))
                for t in ("runs", "scores", "axis_measures", "validations", "run_leases")
            }

    before = tables()
    writes = {
        "add_scores": lambda: mine.add_scores("r", [make_score(items[1])]),
        "finish_run": lambda: mine.finish_run("r", "complete", make_measures(), 2, 0),
        "set_status": lambda: mine.set_status("r", "failed", "should not land"),
        "add_validation": lambda: mine.add_validation("r", "suite", True, {}),
        "update_run_environment": lambda: mine.update_run_environment("r", {"x": 1}),
    }
    for name, write in writes.items():
        with pytest.raises(LeaseLost) as lost:
            write()
        assert lost.value.exit_code == LEASE_LOST_EXIT == 4, name
        assert str(lost.value) == (
            "run r was taken over by pid 4242 on taker.invalid after this process stalled; "
            "stopping (nothing more written to it)"
        ), name
    assert not mine.heartbeat("r", slow)
    assert tables() == before  # nothing of any refused write landed

    # The new owner writes on; once it released the lease, the slow owner is still refused.
    assert other.add_scores("r", [make_score(items[1])]) == 1
    other.release("r", taker)
    with pytest.raises(LeaseLost, match=r"taken over by another process \(which has since"):
        mine.add_scores("r", [make_score(items[2])])
    # A run this Store never leased: no check.
    mine.begin_run(make_run("imported", fingerprint="fp-other"))
    assert mine.add_scores("imported", [make_score(items[3])]) == 1
    for store in (mine, other):
        store.close()
