"""Issue 47, item 7: the lake against the file store, side by side on the same history.

Takes a file store (``bench/store_scale.py``'s synthetic nightly history: generated here
at ``--snapshots`` x ``--nights``, or an existing one with ``--file-db``, which is only
read), copies it into a fresh DuckLake, and times on both, in interleaved rounds (the
median of ``--rounds`` kept, the lake's ratio to the file printed):

* ``drift --format json`` and ``report`` as a user types them (subprocesses; wall and
  CPU time, the CPU of DuckDB's threads included), against the issue's goal: on the lake
  within 2x of the file store and under 10 s; both stores' ``drift --format json`` and
  report.md (but for its build time and lake snapshot lines) must be equal;
* read throughput: score rows a second through the store's own readers, opened as a
  reading command opens the store (``Store.for_reading``, then one ``read()`` view):
  drift's outcomes read (``prefetch_outcomes`` of each snapshot's two latest runs, one
  scan) and one run's full score table (``scores_table``, what ``show``/``export`` read);
* write throughput, last (so the timed commands read the history as generated): score rows
  a second written the way a run writes, through ``Store``: ``begin_run``,
  ``upsert_items``, ``add_scores`` in batches of ``--batch`` rows (the local driver's
  timed writes: a flush every ``jobs.local.FLUSH_SECONDS`` of 42-question chunks at the
  H200's ~0.1 s a chunk, as ``bench/bench_store_writes.py`` computes it), ``finish_run``.
  Those runs belong to a snapshot of their own (``bench-writes``).

The lake is a SQLite catalog with a local data folder under ``--work`` unless ``--lake``
names another (``ducklake:postgres:...`` with ``--lake-data s3://...`` and the servers'
credentials in the environment, e.g. from ``scripts/ci/lake-servers``); it must be empty.
It is filled from the file by ``INSERT ... SELECT`` through an ATTACH of the file,
``--chunk-runs`` runs (their ``runs`` rows, scores, detail rows and measures) a
transaction in the order the runs started, the commits the generator made on the file
(``store_scale.CHUNK_NIGHTS`` nights of every snapshot; 200 runs for the default 20
snapshots), so the lake's Parquet files hold what the file's row groups hold. A lake
written run by run holds a file per commit instead: ``--chunk-runs 1`` builds that.

    .venv/bin/python bench/store_lake.py [--snapshots 20] [--nights 17]
        [--file-db PATH | --year] [--lake URL --lake-data PATH] [--rounds 3] [--work DIR]
        [--keep]

The default history (20 snapshots x 17 nights, the first night x3) is 380 runs, 1.04M
score rows; ``--year`` copies the year's store ``bench/store_scale.py`` caches (7,340
runs, 20.1M rows; ``--file-db`` any other). Everything made lives under ``--work``
(removed at the end unless ``--keep``); the year's copies take ~2.7 GB of disk (the file 2.2 GB,
the lake 0.5 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import duckdb
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import store_scale  # noqa: E402

from monitor.jobs.local import FLUSH_SECONDS  # noqa: E402
from monitor.metrics.registry import get_metric, run_measures  # noqa: E402
from monitor.store import lake  # noqa: E402
from monitor.store.db import Store  # noqa: E402
from monitor.store.location import LakeLocation, Location, parse  # noqa: E402

GOAL_RATIO = 2.0  # issue 47 item 7: drift and report on the lake within 2x of the file
GOAL_S = 10.0  # ... and under 10 s
CHUNK_SECONDS = 0.097  # one 42-question chunk on the H200 (bench_store_writes.py)
CHUNK_ROWS = 42
# Tables the lake's migrations fill themselves; every other table of the file is copied.
MADE_BY_MIGRATIONS = ("schema_migrations", "detail_tables")
# Tables copied with their runs, chunk by chunk (they hold a run_id); the rest at once.
PER_RUN = ("runs", "scores", "pair_scores", "axis_measures")


@dataclass
class Side:
    """One store under test: its ``--db`` value, environment, and parsed location."""

    name: str
    db: str
    env: dict[str, str]

    @property
    def location(self) -> Location:
        return parse(self.db, self.env.get("MONITOR_LAKE_DATA"))


# -- building the lake ---------------------------------------------------------------


def build_lake(source: Path, side: Side, chunk_runs: int) -> tuple[float, int]:
    """Copy every table of the file ``source`` into the empty lake of ``side``; returns
    (seconds, commits). The lake's schema is made by ``Store.open`` (its migrations), the
    rows by INSERT ... SELECT from the attached file, ``chunk_runs`` runs a transaction."""
    location = side.location
    assert isinstance(location, LakeLocation)
    t = time.perf_counter()
    store = Store.open(location)
    with store.read() as view:
        if view.runs_since(None):
            raise SystemExit(f"{location.label} already holds runs; give an empty lake")
    store.close()
    con = lake.connect(location, read_only=False, create=True)
    commits = 0
    try:
        con.execute(f"ATTACH '{source}' AS src (READ_ONLY)")
        tables = [
            t
            for (t,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = 'src'"
            ).fetchall()
            if t not in MADE_BY_MIGRATIONS
        ]
        for table in tables:
            if table in PER_RUN or not _count(con, f"src.{table}"):
                continue
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM src.{table}")
            commits += 1
        run_ids = [
            r
            for (r,) in con.execute(
                "SELECT run_id FROM src.runs ORDER BY started_at, run_id"
            ).fetchall()
        ]
        for k in range(0, len(run_ids), chunk_runs):
            con.execute("BEGIN")
            con.execute(
                "CREATE OR REPLACE TEMP TABLE chunk AS SELECT unnest(?::VARCHAR[]) AS run_id",
                [run_ids[k : k + chunk_runs]],
            )
            for table in PER_RUN:
                con.execute(
                    f"INSERT INTO {table} BY NAME SELECT t.* FROM src.{table} t "
                    "SEMI JOIN temp.chunk c USING (run_id) ORDER BY t.rowid"
                )
            con.execute("COMMIT")
            commits += 1
        for table in tables:
            a, b = _count(con, f"src.{table}"), _count(con, table)
            if a != b:
                raise SystemExit(f"lake copy of {table}: {b:,} rows, the file has {a:,}")
    finally:
        con.close()
    return time.perf_counter() - t, commits


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]


def compact(side: Side) -> None:
    """DuckLake's maintenance: adjacent small data files merged into larger ones (one file
    per commit otherwise), then the files no snapshot needs any more removed."""
    con = lake.connect(side.location, read_only=False, create=False)
    try:
        con.execute(f"CALL ducklake_merge_adjacent_files('{lake.ALIAS}')")
        con.execute(f"CALL ducklake_cleanup_old_files('{lake.ALIAS}', cleanup_all => true)")
    finally:
        con.close()


def lake_files(side: Side) -> dict[str, int]:
    """Parquet data files (and delete files) of the lake's big tables: what a scan opens."""
    con = lake.connect(side.location, read_only=True, create=False)
    try:
        out = {}
        for table in ("scores", "pair_scores", "runs", "axis_measures"):
            rows = con.execute(
                f"SELECT count(*), count(delete_file) FROM ducklake_list_files('{lake.ALIAS}', "
                f"'{table}')"
            ).fetchall()
            out[table], out[f"{table}_deletes"] = rows[0]
        return out
    finally:
        con.close()


# -- timing --------------------------------------------------------------------------


def report_lines(path: Path) -> list[str]:
    """report.md without the lines that say when it was built and which lake snapshot it
    read, and without blank lines (the snapshot's line comes with one); the rest must be
    the same from a file and from its copy in a lake."""
    return [
        line
        for line in path.read_text().splitlines()
        if line.strip() and not line.startswith(("Generated ", "Read at lake snapshot "))
    ]


def cpu_now() -> float:
    """This process's CPU seconds, every thread's (DuckDB's threads included)."""
    t = os.times()
    return t.user + t.system


def command(side: Side, args: list[str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``bias-monitor ARGS`` on ``side``, and its stdout."""
    exe = str(Path(sys.executable).with_name("bias-monitor"))
    env = {**os.environ, **side.env, "MONITOR_DB": side.db}
    wall, cpu, proc = store_scale.timed([exe, *args], env)
    if proc.returncode not in (0, 1):  # drift exits 1 only with --fail-on
        raise SystemExit(f"{' '.join(args)} on {side.name} failed: {proc.stderr[-2000:]}")
    return wall, cpu, proc.stdout


def read_rates(side: Side) -> dict[str, float]:
    """Open as a reading command does, then drift's outcomes read of each snapshot's two
    latest runs (one scan) and one run's full score table: seconds and rows a second."""
    t = time.perf_counter()
    store = Store.for_reading(side.location)
    opened = time.perf_counter() - t
    try:
        with store.read() as view:
            runs = view.runs_since(None)
            by_snapshot: dict[str, list[str]] = {}
            for r in sorted(runs, key=lambda r: (r.started_at, r.run_id)):
                if r.snapshot_id != WRITE_SNAPSHOT:
                    by_snapshot.setdefault(r.snapshot_id, []).append(r.run_id)
            ids = [rid for rs in by_snapshot.values() for rid in rs[-2:]]
            t, c = time.perf_counter(), cpu_now()
            view.prefetch_outcomes(ids)
            n = sum(len(o.outcomes) for rid in ids for o in view.axis_outcomes(rid).values())
            outcomes_s, outcomes_cpu = time.perf_counter() - t, cpu_now() - c
        t = time.perf_counter()
        table = store.scores_table(ids[-1])
        one_run_s = time.perf_counter() - t
    finally:
        store.close()
    return {
        "open_s": opened,
        "outcomes_s": outcomes_s,
        "outcomes_cpu": outcomes_cpu,
        "outcomes_rows_s": n / outcomes_s,
        "run_scores_s": one_run_s,
        "run_scores_rows_s": table.num_rows / one_run_s,
        "outcome_rows": n,
    }


WRITE_SNAPSHOT = "bench-writes"


def write_rate(side: Side, round_no: int, runs: int, batch: int) -> dict[str, float]:
    """``runs`` runs of every item written as a run writes them (begin_run, upsert_items,
    add_scores in batches of ``batch`` rows, finish_run): seconds and rows a second."""
    items = store_scale.make_items()
    ids = [it.item_id for it in items]
    spec = get_metric(store_scale.METRIC)
    rng = np.random.default_rng(round_no)
    prepared = []
    for k in range(runs):
        record = replace(
            store_scale.run_record(0, 0, 0, "w" * 40),
            run_id=f"bench-write-r{round_no}-{k}",
            snapshot_id=WRITE_SNAPSHOT,
            repeat_group=None,
            started_at=store_scale.START + timedelta(days=400, minutes=10 * round_no + k),
        )
        delta = rng.normal(0, 1, len(ids))
        rows = store_scale.pair_score_rows(ids, delta)
        prepared.append((record, rows, run_measures(spec, rows, items)))
    t, c = time.perf_counter(), cpu_now()
    store = Store.open(side.location)
    calls = 0
    try:
        for record, rows, measures in prepared:
            store.begin_run(record)
            store.upsert_items(items)
            for start in range(0, len(rows), batch):
                store.add_scores(record.run_id, rows[start : start + batch])
                calls += 1
            store.finish_run(record.run_id, "complete", measures, len(rows), 0)
    finally:
        store.close()
    wall, cpu = time.perf_counter() - t, cpu_now() - c
    n = runs * len(ids)
    return {"write_s": wall, "write_cpu": cpu, "write_rows_s": n / wall, "write_calls": calls}


# -- the bench -----------------------------------------------------------------------


def interleaved(
    sides: list[Side], rounds: int, step: Callable[[Side, int], dict[str, float]]
) -> dict[str, dict[str, list[float]]]:
    """``step`` on every side, round by round, the first side alternating between rounds
    (so neither always runs on the warmer cache or the quieter minute)."""
    out: dict[str, dict[str, list[float]]] = {s.name: {} for s in sides}
    for r in range(rounds):
        order = sides if r % 2 == 0 else sides[::-1]
        for side in order:
            for k, v in step(side, r).items():
                out[side.name].setdefault(k, []).append(v)
        print(f"  round {r + 1}/{rounds} done (load {os.getloadavg()[0]:.1f})", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshots", type=int, default=20)
    ap.add_argument("--nights", type=int, default=17)
    ap.add_argument("--file-db", type=Path, help="an existing file store to copy (only read)")
    ap.add_argument(
        "--year",
        action="store_true",
        help="copy the year's store bench/store_scale.py cached (20 snapshots x 365 nights)",
    )
    ap.add_argument("--lake", help="an empty lake (default: a SQLite catalog under --work)")
    ap.add_argument("--lake-data", help="the lake's data path (with --lake)")
    ap.add_argument("--rounds", type=int, default=3, help="timings per measure (median kept)")
    ap.add_argument("--write-runs", type=int, default=2, help="runs written per round")
    ap.add_argument(
        "--batch",
        type=int,
        default=CHUNK_ROWS * max(1, round(FLUSH_SECONDS / CHUNK_SECONDS)),
        help="score rows per add_scores call (default: the local driver's timed writes)",
    )
    ap.add_argument("--chunk-runs", type=int, help="runs per lake commit while copying")
    ap.add_argument(
        "--compact",
        action="store_true",
        help="merge the lake's small Parquet files after the copy (ducklake_merge_adjacent_files)",
    )
    ap.add_argument("--work", type=Path, help="folder for the copies (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="leave --work as it is")
    ap.add_argument("--no-commands", action="store_true", help="skip drift and report")
    args = ap.parse_args()
    if bool(args.lake) != bool(args.lake_data):
        ap.error("--lake and --lake-data go together")
    if args.year:
        args.file_db = store_scale.cached_store(20, 365)
        if not args.file_db.is_file():
            ap.error(f"no year's store at {args.file_db}: run bench/store_scale.py first")

    work = args.work or Path(tempfile.mkdtemp(prefix="store-lake-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> None:
    """The bench proper (``main`` owns the work folder)."""
    print(f"load average (1 min) at start: {os.getloadavg()[0]:.1f}; work folder {work}")
    source = args.file_db
    if source is None:
        source = work / "source.duckdb"
        t = time.perf_counter()
        events = {"drift_night": args.nights - 1, "break_night": 3 * args.nights // 4}
        runs, rows = store_scale.generate(source, args.snapshots, range(args.nights), **events)
        print(f"generated {runs:,} runs, {rows:,} score rows in {time.perf_counter() - t:.0f} s")
    file_copy = work / "file.duckdb"
    t = time.perf_counter()
    shutil.copyfile(source, file_copy)
    print(
        f"file store: {file_copy} ({file_copy.stat().st_size / 2**20:,.0f} MiB, copied "
        f"from {source} in {time.perf_counter() - t:.0f} s)"
    )
    file_side = Side("file", str(file_copy), {})
    if args.lake:
        lake_side = Side("lake", args.lake, {"MONITOR_LAKE_DATA": args.lake_data})
    else:
        lake_side = Side(
            "lake",
            f"ducklake:sqlite:{work / 'lake.sqlite'}",
            {"MONITOR_LAKE_DATA": str(work / "lake-data")},
        )
    with Store.for_reading(file_copy).read() as view:
        stored = view.runs_since(None)
    snapshots = len({r.snapshot_id for r in stored})
    chunk_runs = args.chunk_runs or store_scale.CHUNK_NIGHTS * snapshots
    seconds, commits = build_lake(file_copy, lake_side, chunk_runs)
    files = lake_files(lake_side)
    with duckdb.connect(str(file_copy), read_only=True) as con:
        n_scores = _count(con, "scores")
    print(
        f"lake: {lake_side.location.label} (data {lake_side.location.data_path}): "
        f"{len(stored):,} runs, {n_scores:,} score rows copied in {seconds:.0f} s, "
        f"{commits} commits ({chunk_runs} runs a commit); Parquet files: "
        + ", ".join(f"{t} {n}" for t, n in files.items() if not t.endswith("_deletes"))
    )
    if args.compact:
        t = time.perf_counter()
        compact(lake_side)
        after = lake_files(lake_side)
        print(
            f"compacted in {time.perf_counter() - t:.0f} s; Parquet files now: "
            + ", ".join(f"{t} {n}" for t, n in after.items() if not t.endswith("_deletes"))
        )

    results: dict[str, dict[str, list[float]]] = {"file": {}, "lake": {}}

    def merge(found: dict[str, dict[str, list[float]]]) -> None:
        for side, values in found.items():
            results[side].update(values)

    sides = [file_side, lake_side]
    report_dir = work / "reports"
    drift_out: dict[str, str] = {}

    def commands(side: Side, _r: int) -> dict[str, float]:
        dw, dc, out = command(side, ["drift", "--format", "json"])
        drift_out[side.name] = out
        folder = report_dir / side.name
        shutil.rmtree(folder, ignore_errors=True)
        rw, rc, _ = command(side, ["report", "--out", str(folder)])
        return {"drift_s": dw, "drift_cpu": dc, "report_s": rw, "report_cpu": rc}

    load = [os.getloadavg()[0]]
    if not args.no_commands:
        print("drift and report:", flush=True)
        merge(interleaved(sides, args.rounds, commands))
        same = json.loads(drift_out["file"]) == json.loads(drift_out["lake"])
        md = {n: report_lines(report_dir / n / "report.md") for n in ("file", "lake")}
        print(
            f"  drift --format json the same on both: {'yes' if same else 'NO'}; report.md "
            f"the same but for its time and lake snapshot lines: "
            f"{'yes' if md['file'] == md['lake'] else 'NO'}"
        )
        if not same or md["file"] != md["lake"]:
            raise SystemExit("the lake's outputs differ from the file's: the copy is wrong")
    print("reads:", flush=True)
    merge(interleaved(sides, args.rounds, lambda s, _r: read_rates(s)))
    print("writes:", flush=True)
    merge(
        interleaved(sides, args.rounds, lambda s, r: write_rate(s, r, args.write_runs, args.batch))
    )
    load.append(os.getloadavg()[0])
    files_after = lake_files(lake_side)

    f, lk = results["file"], results["lake"]
    rows = [
        ("drift wall", "drift_s", "s"),
        ("drift CPU", "drift_cpu", "s"),
        ("report wall", "report_s", "s"),
        ("report CPU", "report_cpu", "s"),
        ("open for reading", "open_s", "s"),
        ("read outcomes", "outcomes_rows_s", "rows/s"),
        ("read outcomes CPU", "outcomes_cpu", "s"),
        ("read one run", "run_scores_rows_s", "rows/s"),
        ("write", "write_rows_s", "rows/s"),
        ("write wall", "write_s", "s"),
        ("write CPU", "write_cpu", "s"),
    ]
    print(
        f"\n{len(stored):,} runs, {n_scores:,} score rows; medians of {args.rounds} interleaved "
        f"rounds; reads: {int(f['outcome_rows'][0]):,} outcome rows of "
        f"{2 * snapshots} runs; writes: {args.write_runs} runs x {store_scale.ITEMS_PER_RUN:,} "
        f"rows a round, add_scores every {args.batch} rows"
    )
    print(f"{'':20}{'file':>14}{'lake':>14}{'lake/file':>11}")
    for label, key, unit in rows:
        if key not in f:
            continue
        a, b = statistics.median(f[key]), statistics.median(lk[key])
        fmt = (lambda v: f"{v:,.0f}") if unit == "rows/s" else (lambda v: f"{v:.2f}")
        print(f"{label:20}{fmt(a):>14}{fmt(b):>14}{b / a:>10.2f}x  {unit}")
    print(
        f"load average (1 min): {load[0]:.1f} at the first timing, {load[1]:.1f} at the last "
        "(a shared machine: wall times follow the load, CPU times much less)"
    )
    print(
        "lake Parquet files after the writes: "
        + ", ".join(f"{t} {n}" for t, n in files_after.items() if not t.endswith("_deletes"))
        + "; delete files: "
        + ", ".join(f"{t[:-8]} {n}" for t, n in files_after.items() if t.endswith("_deletes"))
    )
    if not args.no_commands:
        verdicts = []
        for cmd in ("drift", "report"):
            a, b = statistics.median(f[f"{cmd}_s"]), statistics.median(lk[f"{cmd}_s"])
            ok = b <= GOAL_RATIO * a and b < GOAL_S
            verdicts.append(ok)
            print(
                f"goal: {cmd} on the lake within {GOAL_RATIO:g}x of the file and under "
                f"{GOAL_S:g} s (median wall): {'met' if ok else 'NOT met'} "
                f"({b:.2f} s, {b / a:.2f}x)"
            )


if __name__ == "__main__":
    main()
