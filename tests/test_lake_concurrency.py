"""Many writers on one lake, through the CLI a user types (issue 47, item 2's test).

Four ``bias-monitor run`` commands score four Indian-BhED benchmarks with SmolLM2 into
one lake (PostgreSQL catalog, ``s3://`` data path on moto: what a team uses) at once,
while a fifth process runs ``report`` over and over. One writer is killed with
``kill -9`` once its first chunk of scores is committed, and its command is then started
again twice at the same moment, as two CI retries of one job would: exactly one of the
two resumes the killed run (its id, without scoring again what it had stored), the
other sees the live lease and scores a run of its own.

At the end every run is complete with exactly its benchmark's items scored, no table
holds a key twice (each table's key taken from the file store's schema, where it is a
PRIMARY KEY), no lease is left, every report exited 0, and one built while the writers
were committing is built again byte for byte with ``report --as-of`` its snapshot: it
read one snapshot throughout.

The runs are the smallest real ones: ``--size mini`` (24 items, one chunk) for three,
and the whole of bhed-religion (121 items, two chunks of 128 requests) for the one that
is killed, so that the kill lands between two commits; one thread each. Where the lake
servers do not run, skipped with the line that says how to start them (tests/_lake.py).

Breaking the code (docs/team-store.md, "Many writers"): with every lease taken as free,
both retries took the killed run and one failed with exit 2; with ``sql.claim_writes``
disabled this test still passed (the killed owner's lease row makes DuckLake refuse the
overlapping takes itself, and the retries' claims rarely overlap), and the claimer test
below failed (every claimer an owner of a run that had no lease row).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import duckdb
import pytest
from _lake import new_location
from test_store_support import make_run

from monitor.jobs.hold import AT_ENV, HOLD_ENV
from monitor.store.db import Store
from monitor.store.leases import Owner

SNAPSHOT = "smollm2-135m-instruct-q4"
BASE = ["run", "-s", SNAPSHOT, "--no-panel", "--no-controls", "--format", "json"]
# Each writer's benchmark, its size and the items it scores (as on a DuckDB file).
WRITERS = {
    "bhed-caste": (["--size", "mini"], 24),
    "bhed-gender": (["--size", "mini"], 24),
    "bhed-race": (["--size", "mini"], 24),
    "bhed-religion": ([], 121),  # 123 rows, two excluded as exact duplicates
}
KILLED = "bhed-religion"
KILL_AT = 32  # rows committed: the first chunk of two (about 64 items)
READER_PAUSE_S = 3.0  # between two reports: a report costs about 2 CPU-s
GENERATED = re.compile(r'"generated_at": "[^"]*"')


def _command(benchmark: str) -> list[str]:
    size, _ = WRITERS[benchmark]
    return [sys.executable, "-m", "monitor", *BASE, "-b", benchmark, *size]


def _start(env: dict[str, str], benchmark: str, **extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        _command(benchmark),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, **extra},
        start_new_session=True,  # its own group: kill -9 takes any child with it
    )


def _wait_for(path: Path, proc: subprocess.Popen, deadline: float) -> str:
    """What the held run wrote into ``path`` (its run id), once it is there."""
    while not (path.exists() and (text := path.read_text(encoding="utf-8"))):
        if proc.poll() is not None:
            pytest.fail(f"exit {proc.returncode} before {path.name}:\n{proc.stderr.read()}")
        assert time.monotonic() < deadline, f"no {path.name} in time"
        time.sleep(0.05)
    return text


def _finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[dict, str]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{err[-3000:]}"
    (outcome,) = json.loads(out)
    return outcome, err


class Reader(threading.Thread):
    """``report`` again and again until told to stop; every one must exit 0."""

    def __init__(self, env: dict[str, str], out: Path) -> None:
        super().__init__(daemon=True)
        self.env, self.out = env, out
        self.stop = threading.Event()
        self.reports: list[tuple[float, float, Path]] = []  # start, end, folder
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            folder = self.out / f"r{len(self.reports):03d}"
            started = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-m", "monitor", "report", "--out", str(folder)],
                capture_output=True,
                text=True,
                timeout=300,
                env=self.env,
            )
            if done.returncode != 0:
                self.failures.append(f"exit {done.returncode}: {done.stderr[-2000:]}")
            self.reports.append((started, time.monotonic(), folder))
            self.stop.wait(READER_PAUSE_S)


def _keys(folder: Path) -> dict[str, list[str]]:
    """Every table's key, from a new file store's schema (there a PRIMARY KEY; a lake has
    none, so the store checks keys at commit)."""
    Store(folder / "keys.duckdb")
    con = duckdb.connect(str(folder / "keys.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
            "WHERE constraint_type = 'PRIMARY KEY'"
        ).fetchall()
    finally:
        con.close()
    return {table: list(columns) for table, columns in rows}


def _masked(report: Path) -> str:
    return GENERATED.sub('"generated_at": ""', (report / "report.json").read_text())


@pytest.mark.slow  # SmolLM2 in six processes; the claimer test below loads no model
def test_four_writers_one_reader_one_killed_and_resumed(
    tmp_path, session_cache, shared_datasets, monkeypatch
):
    db, lake_env = new_location("lake-postgres", tmp_path)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("MONITOR_DB", "MONITOR_LAKE_DATA")},
        **lake_env,
        "MONITOR_DB": db,
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_DIR": str(tmp_path / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "NO_COLOR": "1",
        # Six model processes on two cores: one thread each, or their OpenMP threads spin
        # against each other (measured: 250 CPU-s for this test with default threads and
        # no pause between reports; about 92 with one thread and a pause).
        "OMP_NUM_THREADS": "1",
    }
    for name, value in lake_env.items():
        monkeypatch.setenv(name, value)
    Store(db).close()  # the lake is made before the writers start (docs/team-store.md)
    keys = _keys(tmp_path)

    reader = Reader(env, tmp_path / "reports")
    reader.start()
    hold = tmp_path / "hold"
    writing = time.monotonic()
    kill_at = {HOLD_ENV: str(hold), AT_ENV: f"stored:{KILL_AT}"}
    writers = {b: _start(env, b, **(kill_at if b == KILLED else {})) for b in WRITERS}
    again: dict[str, subprocess.Popen] = {}
    try:
        deadline = time.monotonic() + 300
        killed = _wait_for(hold.with_suffix(".held"), writers[KILLED], deadline)
        os.killpg(writers[KILLED].pid, signal.SIGKILL)
        writers[KILLED].wait()
        with Store(db, read_only=True)._connect() as con:
            status = con.execute("SELECT status FROM runs WHERE run_id = ?", [killed]).fetchall()
            stored = dict(
                con.execute(
                    "SELECT item_id, scored_at FROM scores WHERE run_id = ?", [killed]
                ).fetchall()
            )
        assert status == [("running",)]
        total = WRITERS[KILLED][1]
        assert KILL_AT <= len(stored) < total, "the kill must land between two commits"

        # The killed command again, twice at once (two retries of one CI job): each holds
        # once its run is open and leased, before it scores, so both have claimed by then.
        for name in ("again-a", "again-b"):
            again[name] = _start(env, KILLED, **{HOLD_ENV: str(tmp_path / name), AT_ENV: "scoring"})
        held = {
            name: _wait_for((tmp_path / name).with_suffix(".held"), proc, deadline)
            for name, proc in again.items()
        }
        for name in again:
            (tmp_path / name).with_suffix(".release").touch()
        outcomes = {b: _finish(p) for b, p in writers.items() if b != KILLED}
        outcomes |= {name: _finish(proc) for name, proc in again.items()}
    finally:
        for proc in [*writers.values(), *again.values()]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        reader.stop.set()
    written = time.monotonic()
    reader.join(timeout=300)

    # Exactly one of the two took the killed run over, and scored only what it lacked;
    # the other met a live lease and scored a run of its own.
    (resumer,) = [n for n in held if held[n] == killed]
    (other,) = [n for n in held if n != resumer]
    resumed, resumed_err = outcomes[resumer]
    fresh, fresh_err = outcomes[other]
    assert resumed["run_id"] == killed and resumed["resumed_from"] == len(stored)
    assert f"resuming run {killed}: {len(stored)} of {total} items already stored" in resumed_err
    assert f"#1: {total - len(stored)} items to score" in resumed_err
    assert f"run {killed} of the same configuration is being scored by pid" in fresh_err
    assert fresh["run_id"] == held[other] != killed and fresh["resumed_from"] == 0

    # Every run complete, with exactly its items; no key twice in any table; no lease left.
    expected = {o["run_id"]: WRITERS[b][1] for b, (o, _) in outcomes.items() if b in WRITERS}
    expected |= {killed: total, fresh["run_id"]: total}
    assert {o["run_id"]: (o["status"], o["n_scored"]) for o, _ in outcomes.values()} == {
        r: ("complete", n) for r, n in expected.items()
    }
    with Store(db, read_only=True)._connect() as con:
        runs = dict(con.execute("SELECT run_id, status FROM runs").fetchall())
        scores = dict(con.execute("SELECT run_id, count(*) FROM scores GROUP BY 1").fetchall())
        pairs = dict(con.execute("SELECT run_id, count(*) FROM pair_scores GROUP BY 1").fetchall())
        kept = dict(
            con.execute(
                "SELECT item_id, scored_at FROM scores "
                "WHERE run_id = ? AND list_contains(?, item_id)",
                [killed, list(stored)],
            ).fetchall()
        )
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        doubled = {
            table: con.execute(
                f"SELECT {', '.join(key)}, count(*) FROM {table} GROUP BY ALL HAVING count(*) > 1"
            ).fetchall()
            for table, key in keys.items()
            if table in tables
        }
        leases = con.execute("SELECT count(*) FROM run_leases").fetchone()[0]
        measures = {
            tuple(row[:4]): row[4:]
            for row in con.execute(
                "SELECT run_id, benchmark, axis, measure, n, value FROM axis_measures"
            ).fetchall()
        }
    assert runs == dict.fromkeys(expected, "complete")
    assert scores == pairs == expected
    assert kept == stored  # the rows stored before the kill are the ones kept
    assert {"scores", "items", "axis_measures", "pair_items", "pair_scores"} <= set(doubled)
    assert {table: rows for table, rows in doubled.items() if rows} == {}
    assert leases == 0

    # Every report exited 0 and shows each run it names as it finally is (a run is
    # listed once complete, and then never changes) ...
    assert reader.failures == []
    during = [f for start, end, f in reader.reports if writing < start and end < written]
    assert len(during) >= 2, f"only {len(during)} reports while the writers ran"
    read_at = []
    for folder in (f for _start, _end, f in reader.reports):
        report = json.loads((folder / "report.json").read_text())
        read_at.append(report["lake_snapshot"]["id"])
        for trend in report["trends"]:
            for point in trend["points"]:
                key = (point["run_id"], trend["benchmark"], trend["axis"], trend["measure"])
                assert point["status"] == "complete"
                assert (point["n"], point["value"]) == measures[key], (folder.name, key)
    assert read_at == sorted(read_at)
    # ... and read one snapshot throughout: one built while the writers committed is
    # built again from its snapshot, byte for byte but for its build time.
    middle = during[len(during) // 2]
    snapshot = json.loads((middle / "report.json").read_text())["lake_snapshot"]["id"]
    rebuilt = tmp_path / "as-of"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "report",
            "--as-of",
            str(snapshot),
            "--out",
            str(rebuilt),
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert _masked(rebuilt) == _masked(middle)


# Several processes claim one run whose owner is gone, all at the same instant: exactly
# one takes it. Each claim reads the lease and writes its own in one transaction; two such
# transactions that overlap both read the lease free, so only the lake's refusal of the
# second commit and the retry that then sees the first's lease keep the run to one owner.
# Where a lease row is there, each take deletes it and DuckLake refuses the second itself;
# where none is (``interrupted``), only ``sql.claim_writes`` makes them conflict. Each
# claimer stays alive until all have claimed: a claimer that had exited would be a gone
# owner, whose run the next may rightly take.
CLAIMER = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, sys.argv[2])
    from monitor.store.db import Store
    from monitor.store.leases import Owner
    store, me = Store(sys.argv[1]), Owner()
    store.peek_resumable("fp-toy", me)  # connected, the catalog read once
    print("ready", flush=True)
    start = float(sys.stdin.readline())
    while time.time() < start:
        pass
    run_id, busy = store.claim_resumable("fp-toy", me)
    print(json.dumps({"owner": me.token, "run": run_id, "busy": [b.owner for b in busy]}))
    sys.stdout.flush()
    sys.stdin.read()  # alive (a live owner) until the test has every answer
    """
)
CLAIMERS = 3


@pytest.mark.parametrize("left", ["killed", "interrupted"])
def test_claimers_at_the_same_instant_give_a_run_one_owner(left, tmp_path, monkeypatch):
    db, lake_env = new_location("lake-postgres", tmp_path)
    for name, value in lake_env.items():
        monkeypatch.setenv(name, value)
    store = Store(db)
    if left == "killed":  # its lease names a process that is gone
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        store.begin_run(make_run("run-killed"), owner=Owner(pid=int(gone.stdout)))
    else:  # stopped with Ctrl-C: no lease left at all
        store.begin_run(make_run("run-killed"))
        store.set_status("run-killed", "interrupted")
    store.close()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, db, os.path.dirname(__file__)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(CLAIMERS)
    ]
    try:
        ready = [proc.stdout.readline().strip() for proc in procs]
        start = time.time() + 0.2  # all of them are connected, and claim together
        for proc in procs:
            proc.stdin.write(f"{start}\n")
            proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline() or "{}") for proc in procs]
    finally:
        for proc in procs:
            _out, err = proc.communicate(timeout=120)
    assert ready == ["ready"] * CLAIMERS, err[-3000:]
    assert all(answers), err[-3000:]
    winners = [a["owner"] for a in answers if a["run"] == "run-killed"]
    assert len(winners) == 1, answers
    assert [a["busy"] for a in answers if a["run"] is None] == [winners] * (CLAIMERS - 1)
    with Store(db, read_only=True)._connect() as con:
        owners = con.execute("SELECT owner FROM run_leases WHERE run_id = 'run-killed'").fetchall()
    assert owners == [(winners[0],)]
