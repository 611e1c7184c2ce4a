"""Durability and locking across real processes: SIGKILL mid-run, resume, readers between batches.

A separate Python process writes score batches; the test kills it with SIGKILL while
it writes, then checks what a fresh process finds: every acknowledged batch, no
partial batch, and a resume that ends with exactly one row per item.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_store_support import make_items, make_run, make_score

from monitor.errors import UserInputError
from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
N_ITEMS = 800
BATCH = 8
PACED = 10  # the first batches leave gaps (like model compute) so a reader can get in
KILL_AFTER = 12  # then the writer runs flat out, so the kill most likely lands mid-write
FINGERPRINT = "fp-kill-test"

WRITER = textwrap.dedent(
    f"""
    import sys
    import time
    from test_store_support import make_items, make_run, make_score
    from monitor.store.db import Store

    store = Store(sys.argv[1])
    items = make_items({N_ITEMS})
    store.upsert_items(items)
    store.begin_run(make_run("run-killed", fingerprint={FINGERPRINT!r}))
    print("started", flush=True)
    for start in range(0, {N_ITEMS}, {BATCH}):
        batch = items[start : start + {BATCH}]
        store.add_scores("run-killed", [make_score(item) for item in batch])
        print("committed", start // {BATCH}, flush=True)
        if start // {BATCH} < {PACED}:
            time.sleep(0.05)
    print("finished", flush=True)
    """
)

HOLDER = textwrap.dedent(
    """
    import sys, time
    import duckdb
    con = duckdb.connect(sys.argv[1])
    print("holding", flush=True)
    time.sleep(60)
    """
)


def _spawn(script: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(REPO / "tests")]))
    return subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def _read_until(proc: subprocess.Popen, prefix: str, deadline: float) -> str:
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"child exited early: {proc.stderr.read()}")
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"child did not print {prefix!r} in time")


def test_sigkill_mid_run_keeps_committed_batches_and_resume_completes(tmp_path):
    path = tmp_path / "kill.duckdb"
    Store(path)  # created up front so the reader below can open it at once
    items = make_items(N_ITEMS)
    batches = [items[i : i + BATCH] for i in range(0, N_ITEMS, BATCH)]

    writer = _spawn(WRITER, str(path))
    try:
        deadline = time.monotonic() + 120
        _read_until(writer, "started", deadline)
        # A reader in this process gets in between the writer's batches.
        reader = Store(path, read_only=True, lock_timeout=30)
        seen = []
        acknowledged = -1
        while acknowledged < KILL_AFTER:
            acknowledged = int(_read_until(writer, "committed", deadline).split()[1])
            if acknowledged < PACED:
                seen.append(len(reader.scored_item_ids("run-killed")))
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == -signal.SIGKILL
    assert seen == sorted(seen) and seen[-1] >= PACED * BATCH  # batch PACED-1 and earlier

    store = Store.open(path)  # the killed writer's file opens and is consistent
    run_id = store.find_resumable(FINGERPRINT)
    assert run_id == "run-killed"
    assert store.get_run(run_id)["status"] == "running"
    store.set_status(run_id, "running", "resumed after a kill")  # as the runner does
    stored = store.scored_item_ids(run_id)
    whole = [b for b in batches if {i.item_id for i in b} <= stored]
    partial = [b for b in batches if 0 < len({i.item_id for i in b} & stored) < len(b)]
    assert partial == []  # a batch is all there or not there
    assert len(stored) == len(whole) * BATCH
    assert len(whole) >= KILL_AFTER + 1  # every acknowledged batch survived
    assert len(whole) < len(batches), "writer finished before the kill; raise N_ITEMS"
    by_id = {r["item_id"]: r for r in store.scores(run_id)}
    for item in items:
        if item.item_id in stored:
            assert by_id[item.item_id]["delta"] == make_score(item).delta

    # Resume: send what is missing plus a batch that is already stored.
    missing = [i for i in items if i.item_id not in stored]
    resend = batches[0]
    added = store.add_scores(run_id, [make_score(i) for i in resend])
    for start in range(0, len(missing), 100):
        added += store.add_scores(run_id, [make_score(i) for i in missing[start : start + 100]])
    assert added == len(missing)
    store.finish_run(run_id, "complete", [], n_scored=N_ITEMS, n_excluded=0)

    rows = store.scores(run_id)
    assert len(rows) == N_ITEMS
    assert sorted(r["item_id"] for r in rows) == sorted(i.item_id for i in items)
    assert store.find_resumable(FINGERPRINT) is None


def test_lock_held_by_another_process_gives_a_clear_error(tmp_path):
    path = tmp_path / "locked.duckdb"
    store = Store(path)
    store.begin_run(make_run("run-l"))
    holder = _spawn(HOLDER, str(path))
    try:
        _read_until(holder, "holding", time.monotonic() + 60)
        started = time.monotonic()
        with pytest.raises(UserInputError) as exc:
            Store(path, lock_timeout=0.5)
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert "locked by another process" in str(exc.value) and "\n" not in str(exc.value)
    assert 0.4 < waited < 10  # it retried for lock_timeout, then gave up
    assert Store(path).get_run("run-l")["status"] == "running"


def test_session_holds_the_lock_and_each_call_commits_alone(tmp_path):
    path = tmp_path / "session.duckdb"
    store = Store(path)
    items = make_items(3)
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("run-s"))
        store.add_scores("run-s", [make_score(items[0])])
        with pytest.raises(UserInputError):
            store.add_scores("run-s", [make_score(i) for i in make_items(5)])  # unknown items
        probe = _spawn(
            "import sys, duckdb\n"
            "try:\n    duckdb.connect(sys.argv[1], read_only=True)\n    print('opened')\n"
            "except duckdb.IOException:\n    print('locked')\n",
            str(path),
        )
        out, _ = probe.communicate(timeout=60)
        assert out.strip() == "locked"
    assert store.scored_item_ids("run-s") == {items[0].item_id}
