"""Issue 14, item 5: does ``drift`` and ``report`` stay fast on a store a year old?

Generates a store the size a year of nightly runs makes (the rows the store's import path,
``Store.record_run`` + ``finish_run``, writes, in bulk: ``bench/store_bulk.py``), then times the
commands a user types, ``bias-monitor drift`` and ``bias-monitor report``, as
subprocesses (the median of ``--repeats``, wall and CPU time, beside the 5-s goal and
the load average: on a shared machine the wall time follows the load), and prints the
report's sizes. It does so at two points of the same
history, after ``--early-nights`` nights and after all of them, so the printed ratio
shows what history length costs: the report should grow with what it shows (snapshots ×
axes), not with how many nights lie behind it.

The default history: 20 local snapshots × 365 nights, each run scoring every shipped pair
benchmark at the size a nightly run scores it (Indian-BhED's four axes, its neutral
control, CrowS-Pairs, the Indic-Bias taxonomy's default size): 2,740 items a run,
20.1M score rows. Items are synthetic (placeholder texts, no benchmark content); each
snapshot has its own outcomes with 2% of items redrawn each night (API-like noise).
Every 4th snapshot regresses on the last night (15% of items pushed to the stereotype)
and every 5th changes revision three quarters into the year (a configuration break with
its own outcomes), so ``drift`` and the report have something real to find. The first
night of each snapshot is scored three times (a repeat group), as ``run --repeat 3``
would, so comparisons have a noise floor.

    .venv/bin/python bench/store_scale.py [--snapshots 20] [--nights 365]
        [--early-nights 30] [--db PATH] [--keep]

The generated file is cached under ``.monitor-cache/bench/`` keyed by the generator's
version and arguments (``--db`` to choose, ``--regenerate`` to rebuild). Generating the
full default took 487 s on this 2-core machine at load 5–8 (2026-11-28; through
``record_run`` + ``finish_run`` one run at a time it was ~0.24 s a run, ~30 min) and
writes about 3.1 GB of disk (the year's store, 2.8 GB in schema 7, and the 30-night
copy); the benchmark refuses to start with less than ``MIN_FREE_GB`` free, since a full
disk fails every other job on the machine too.

What paid, from profiles of the year's store (cProfile of the commands as typed):

* reading a year of runs in one query per snapshot instead of one per run, and all the
  outcomes a drift session compares in one scan (drift 131 s → 8.5 s, report 539 s →
  18 s; 4159691 → 473c850);
* keeping ``scipy.stats`` and statsmodels off the drift path (~2 s of imports a
  command), with McNemar, Wilson, BH and the MDE's binomials on ``scipy.special``;
  caching MDE searches (170 distinct among 432 comparisons); building each axis's item
  maps from DuckDB lists, not from a Python loop over 250k rows; skipping redaction
  patterns whose literals are absent (11 MB of report JSON: 2.6 s → 0.3 s);
* (2026-11-24, second session) trend series read as columns, one row per series with
  its runs as DuckDB lists, and a point made a validated model only when the report keeps
  it (``report.history.SeriesColumns``): 147k ``TrendRow``/raw-point objects were ~1.6 s;
  a frozen view that walks more than one snapshot's history reads every run once, not a
  query per snapshot plus the report's own read of them (~0.4 s); the run's
  configuration key computed once per run; the redactor remembering short texts for the
  current secrets (a year's trends ask it ~130k times, mostly the same run ids and keys);
  the JSON report written by pydantic's serialiser (``json.dumps`` with an indent is the
  standard library's pure-Python encoder: 0.6 s → 0.1 s for 11 MB);
* (2026-11-24, third session; report ~6.0 s → ~4.8 s, outputs byte-identical) the
  command's garbage collector at a young-generation threshold of 50,000 instead of 700
  (the collector re-walked the session's millions of long-lived objects: 0.58 s → 0.12 s
  of collections, same peak memory); bytecode written at install (``make install``), as a
  regular install does, where PYTHONDONTWRITEBYTECODE kept every command recompiling
  ~70 modules (~0.1 s); a trend point's texts made safe once per distinct text for all
  series (``report.history.SafeTexts``) and the point validated without the report
  model's field walk (``SHOWN_SAFELY``), with the walk itself skipping numbers and
  dates; the run list built for the runs a report lists, not all 7,340; the measures of
  the report's ~60 runs in one scan (``prefetch_measures``), each baseline and each
  snapshot's latest run in one query for all snapshots; repeated JSON texts of the runs
  (a snapshot's manifest, its benchmark versions) parsed once; item templates fetched as
  NULLs where there are none rather than as copies of the item ids; summary points from
  index ranges (slices) rather than index lists; plot times already in UTC not
  converted again;
* (2026-11-24, fourth session; outputs identical but for the generation time; report
  ~5.0 s → ~4.7 s) the delta tests' sign-flip nulls of a whole session computed per
  cluster count as one matrix product (``deltas.SignFlipBatch``): each test had read its
  9,999 × G pattern matrix (up to 30 MB) from memory again, 432 times in all (~0.3 s →
  ~0.05 s); the random patterns kept as bytes and widened to float64 a block of rows at a
  time, not as a 109 MB float64 copy (~0.13 s of allocation → ~0.05 s); the trend's six
  lists ordered by one row number instead of each by (start time, run id) (~0.04 s);
  templates read only for items that have one. Side by side with the session's start
  (6249f8f), interleaved, 5 rounds: report 4.93–5.50 s → 4.51–5.02 s, drift 3.06–3.68 s
  → 2.86–3.28 s; ``--repeats 3``: report 4.75 s, drift 3.09 s.

* (2026-11-28, generic core records, schema 7) a frozen view remembering the items it
  read: drift asked ``view.items`` once per comparison, 340 queries of ``items`` joined
  to the pairs' ``pair_items`` for the same 2,740 items; interleaved with 20742c9 on the
  same year's store, 3 rounds at load ~5: report 7.2–7.8 s → 4.9–5.4 s of CPU, drift
  5.5–6.5 s → 3.3–3.5 s, outputs identical (docs/performance.md).

* (2026-11-29, the report's rendering) the pairs' answer indexing the rates in context
  once per call, not once per comparison (~2,000 dicts of every context); one Jinja
  overlay per family folder, not one per part (each recompiled the report's macros);
  each trend point placed once (x, y, interval) instead of once per band, line, dot and
  whisker (~250k ``x()``/``y()`` calls); the dots and whiskers written by two filters
  (``report.html.whisker_lines``, ``dot_circles``) instead of a Jinja attribute lookup
  and an escape per number (~100k). On the year's report input, fresh process, 3
  interleaved rounds at load ~8: HTML 0.83–0.91 s → 0.61–0.66 s of CPU, Markdown
  0.08–0.09 s → 0.02 s; report.html, .md and .json byte-identical. The report does not
  re-run ``compare_runs`` (2026-11-28's profile read it so): in a profile of ``report``
  its 24 calls all come from drift's session, which the section is handed.

* (2026-11-29, DuckDB 1.5.5, the DuckLake extensions' build, after 2.0.0) the compared
  runs' panel outcomes in one scan (``reads.panel_outcomes_of``, announced by drift's
  session through ``StoreView.prefetch_panel_outcomes``): on 1.5.5 a ``scores.run_id = ?``
  filter prunes none of the year's 167 row groups (2.0.0 prunes all of them), so reading
  the 44 compared runs one by one was 44 scans of 20M rows, 2.23 s of the report's CPU
  (0.19 s on 2.0.0), the whole of 1.5.5's regression; now 0.07 s. The items' reads execute
  their query instead of building a ``con.sql`` relation with parameters (``fetch_table``;
  on 1.5.5 ~4x the CPU: 17 reads 0.26 s → 0.07 s). Interleaved with 5a555ab on 1.5.5
  and on 2.0.0, 3 rounds at load 4.5–6.1: report 6.32 s → 4.02 s of CPU (2.0.0: 3.91 s),
  drift 4.82 s → 2.98 s (2.0.0: 3.15 s); outputs identical.

What did not: a background thread reading the trend while drift runs (no gain: DuckDB
already keeps both cores busy during its queries, and fetching rows holds the GIL);
outcomes fetched as one string of one-letter codes per axis (~0.04 s, but the column
admits any text, so it needs a fallback the gain does not pay for); a vectorised trend
condensing (its loop is ~0.07 s; the ~24k points it keeps, each a validated model, are
most of its ~0.35 s); on 1.5.5 (2026-11-29) the outcomes' read sorting its rows once in
a subquery instead of five lists each ordered by rowid (0.30–0.33 s against 0.45–0.75 s
of the query's CPU at load ~6, inside the noise, the same on 2.0.0, and an unordered
``list()`` keeps a subquery's order only by DuckDB's present behaviour). Earlier:
statsmodels' closed-form Wilson interval (7× faster than scipy's ``binomtest``, but
2.8e-17 instead of 0 at k = 0, which the results suite refuses); a case-insensitive
regex alternation as the redaction prefilter (1.8 s on the same JSON, where substring
tests on the case-folded text take milliseconds); importing ``brentq`` lazily (every
drift session needs it for the MDE); ``gc.freeze()`` after the imports without a higher
threshold (no change: the cost is the session's own objects); inlining the trend's
per-run unit function (a few hundredths of a second in a profile; not worth losing a
readable helper); Jinja's on-disk bytecode cache (not tried: compiling the templates is
~0.08 s, and the cache would write into a shared temp folder).

What remained at a year before the fourth session, in one unprofiled run of the report
(~4.8 s): interpreter, typer and imports ~0.9 s (scipy.special's array-API layer imports
``numpy.f2py`` and ``numpy.testing``, ~0.1 s; ``scipy.optimize`` for ``brentq`` 0.17 s);
the runs and their configuration groups ~0.45 s; reading the compared runs' 330k item
outcomes ~0.65 s (DuckDB ~0.2 s, Python objects the rest); the 432 comparisons ~0.95 s,
of which the sign-flip test's 9,999 patterns ~0.34 s (generating them for 9 distinct
cluster counts ~0.1 s); trends ~0.75 s (the store's lists ~0.33 s); the HTML ~0.55 s
(plot geometry ~0.3 s, Jinja ~0.25 s); the rest of the report input, the JSON and the
interpreter's teardown ~0.5 s. The fourth session's changes took ~0.3 s of it from the
comparisons (the sign-flip nulls) and a few hundredths from the store's reads.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from monitor.benchmarks.items import Item  # noqa: E402
from monitor.families.pairs.records import PairItem, PairScoreRow  # noqa: E402
from monitor.metrics.registry import get_metric, run_measures  # noqa: E402
from monitor.records import RunRecord, ScoreRow  # noqa: E402
from monitor.store import codec  # noqa: E402
from monitor.store.db import Store  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import store_bulk  # noqa: E402

GENERATOR_VERSION = "3"  # 3: bulk writes (the same rows as 2)
CHUNK_NIGHTS = 10  # nights of runs written in one transaction
METRIC = "cll"
# (benchmark, axes, items): a nightly run's pair benchmarks at the sizes it scores them.
BENCHMARKS: list[tuple[str, list[str], int]] = [
    ("bhed-caste", ["caste"], 106),
    ("bhed-religion", ["religion"], 123),
    ("bhed-gender", ["gender"], 159),
    ("bhed-race", ["race"], 383),
    ("bhed-neutral", ["caste-control"], 52),
    (
        "crows-pairs",
        [
            "race-color",
            "socioeconomic",
            "gender",
            "disability",
            "nationality",
            "sexual-orientation",
            "physical-appearance",
            "religion",
            "age",
        ],
        1508,
    ),
    ("indic-taxonomy", ["caste", "religion", "region", "tribe"], 409),
]
ITEMS_PER_RUN = sum(n for _, _, n in BENCHMARKS)
START = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)
REPEATS_FIRST_NIGHT = 3
NIGHTLY_CHURN = 0.02  # share of items redrawn each night (API-like measurement noise)
DRIFT_SHARE = 0.15  # share of a drifting snapshot's items pushed to the stereotype
GOAL_S = 5.0  # issue 14 item 5 / issue 45 item 5: drift and report on the year's store
MIN_FREE_GB = 5.0  # free disk the default history needs (3.1 GB written, WAL, reports)


def cached_store(snapshots: int, nights: int) -> Path:
    """Where the generated history of ``snapshots`` x ``nights`` is cached, keyed by the
    generator's version and arguments (``bench/store_lake.py --year`` reads it too)."""
    key = hashlib.sha256(
        json.dumps([GENERATOR_VERSION, snapshots, nights, BENCHMARKS]).encode()
    ).hexdigest()[:12]
    return REPO / ".monitor-cache" / "bench" / f"store-scale-{key}.duckdb"


def make_items() -> list[Item]:
    """Synthetic pair items with the shipped benchmarks' ids, axes and sizes."""
    items = []
    for bench, axes, n in BENCHMARKS:
        for i in range(n):
            axis = axes[i % len(axes)]
            items.append(
                PairItem(
                    item_id=f"{bench}:{i:05d}",
                    benchmark=bench,
                    axis=axis,
                    region="india" if not bench.startswith("crows") else "us",
                    benchmark_version="synthetic-1",
                    source_row=i,
                    text_stereo=f"synthetic sentence {i} (a)",
                    text_anti=f"synthetic sentence {i} (b)",
                )
            )
    return items


def run_record(snap: int, night: int, repeat: int, revision: str) -> RunRecord:
    started = START + timedelta(days=night, minutes=snap, seconds=repeat)
    spec = get_metric(METRIC)
    return RunRecord(
        run_id=f"s{snap:02d}-n{night:03d}-r{repeat}",
        snapshot_id=f"synthetic-model-{snap:02d}",
        snapshot_kind="hf-causal",
        snapshot_revision=revision,
        snapshot_manifest={"repo": f"synthetic/model-{snap:02d}", "revision": revision},
        metric=METRIC,
        metric_version=spec.version,
        benchmarks=[b for b, _, _ in BENCHMARKS],
        dataset_versions={b: {"label": "synthetic-1"} for b, _, _ in BENCHMARKS},
        fingerprint=f"synthetic-{snap}-{revision}",
        trigger="schedule",
        started_at=started,
        repeat_group=f"s{snap:02d}-n{night:03d}" if night == 0 else None,
        repeat_index=repeat,
        git_commit="0" * 40,
        monitor_version="bench",
        device="cpu",
        dtype="float32",
        batch_size=16,
        environment={"python": "3.11", "torch": "2.13.0", "scoring": {"panel": False}},
    )


def night_deltas(stereo: np.ndarray, magnitude: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One night's deltas: the snapshot's outcomes ``stereo`` with ``NIGHTLY_CHURN`` of the
    items redrawn (API-like noise; a repeat group measures it) and delta's size jittered."""
    churn = rng.random(len(stereo)) < NIGHTLY_CHURN
    side = np.where(churn, rng.random(len(stereo)) < 0.5, stereo)
    return np.where(side, 1.0, -1.0) * magnitude * rng.uniform(0.9, 1.1, len(stereo))


def score_columns(run: RunRecord, delta: np.ndarray, item_ids: pa.Array) -> pa.Table:
    """One run's score rows as the store's wide batch (``codec.score_schema``: the core
    columns, then the pairs' detail columns), built from ``delta`` as columns: the same
    values ``outcome_rows`` and a run's imported rows hold, without a Python object per row."""
    n = len(delta)
    spec = get_metric(METRIC)
    columns: dict[str, pa.Array] = {
        "run_id": pa.array([run.run_id] * n, pa.string()),
        "item_id": item_ids,
        "metric": pa.array([METRIC] * n, pa.string()),
        "metric_version": pa.array([spec.version] * n, pa.string()),
        "outcome": pa.array(np.where(delta > 0, "stereo", "anti"), pa.string()),
        "delta": pa.array(delta),
        "details": pa.array(["{}"] * n, pa.string()),
        "score_stereo": pa.array(-20.0 + delta),
        "score_anti": pa.array(np.full(n, -20.0)),
        "lp_stereo": pa.array(-40.0 + delta),
        "lp_anti": pa.array(np.full(n, -40.0)),
        "prior_stereo": pa.array(np.full(n, -20.0)),
        "prior_anti": pa.array(np.full(n, -20.0)),
        "n_tokens_stereo": pa.array(np.full(n, 12, np.int32)),
        "n_tokens_anti": pa.array(np.full(n, 12, np.int32)),
    }
    schema = codec.score_schema()
    arrays = [
        columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type) for f in schema
    ]
    scored_at = pa.array([codec.utc(run.started_at)] * n, pa.timestamp("us", tz="UTC"))
    return pa.Table.from_arrays([*arrays, scored_at], names=[*schema.names, "scored_at"])


def generate(
    path: Path,
    snapshots: int,
    nights: range,
    *,
    drift_night: int,
    break_night: int,
    seed: int = 0,
) -> tuple[int, int]:
    """Append ``nights`` of every snapshot to the store at ``path``; (runs, rows) written.

    Every 4th snapshot (1, 5, ...) shifts ``DRIFT_SHARE`` of its anti-stereotype items to
    the stereotype from ``drift_night`` on; every 5th (2, 7, ...) changes revision at
    ``break_night`` (a configuration break, with its own outcomes). Deterministic in
    (snapshot, night): nights 0–29 then 30–364 write what 0–364 at once would.

    The store is opened (created, migrated) by ``Store.open`` and its items written by
    ``upsert_items``; the runs, scores and measures are then written ``CHUNK_NIGHTS``
    nights at a time as Arrow batches in one transaction each (``store_bulk``): the
    rows ``record_run`` + ``finish_run`` write, without their per-run transactions and
    per-row Python objects (those took ~0.24 s a run, ~30 min for a year, on this
    machine under load).
    """
    items = make_items()
    store = Store.open(path)
    if nights.start == 0:  # items once per store (later runs reference them)
        store.upsert_items(items)
    with store_bulk.BulkWriter(path) as writer:
        return _generate(writer, items, snapshots, nights, drift_night, break_night, seed)


def _generate(
    writer: store_bulk.BulkWriter,
    items: list[Item],
    snapshots: int,
    nights: range,
    drift_night: int,
    break_night: int,
    seed: int,
) -> tuple[int, int]:
    item_ids = [it.item_id for it in items]
    id_array = pa.array(item_ids, pa.string())
    spec = get_metric(METRIC)
    runs = rows = 0
    for chunk_start in range(nights.start, nights.stop, CHUNK_NIGHTS):
        batch = store_bulk.Batch()
        for night in range(chunk_start, min(chunk_start + CHUNK_NIGHTS, nights.stop)):
            for snap in range(snapshots):
                changed = snap % 5 == 2 and night >= break_night
                revision = (f"{snap:02d}" + ("b" if changed else "a") * 38)[:40]
                base = np.random.default_rng([seed, snap, int(changed)])
                stereo = base.random(len(items)) < base.beta(2, 2, size=len(items))
                magnitude = base.gamma(2.0, 0.5, size=len(items))
                if snap % 4 == 1 and night >= drift_night:
                    stereo = stereo | (base.random(len(items)) < DRIFT_SHARE)
                repeats = REPEATS_FIRST_NIGHT if night == 0 else 1
                for r in range(repeats):
                    rng = np.random.default_rng([seed, snap, night, r])
                    record = run_record(snap, night, r, revision)
                    delta = night_deltas(stereo, magnitude, rng)
                    measures = run_measures(spec, outcome_rows(item_ids, delta), items)
                    batch.add(record, score_columns(record, delta, id_array), measures)
                    runs += 1
                    rows += len(delta)
        writer.write(batch)
    return runs, rows


def pair_score_rows(item_ids: list[str], delta: np.ndarray) -> list[PairScoreRow]:
    """One run's score rows as a scoring run hands them to ``Store.add_scores``: the values
    ``score_columns`` holds, as records (the write benches time the store's own path)."""
    spec = get_metric(METRIC)
    return [
        PairScoreRow(
            item_id=i,
            metric=spec.name,
            metric_version=spec.version,
            outcome="stereo" if d > 0 else "anti",
            delta=d,
            score_stereo=-20.0 + d,
            score_anti=-20.0,
            lp_stereo=-40.0 + d,
            lp_anti=-40.0,
            prior_stereo=-20.0,
            prior_anti=-20.0,
            n_tokens_stereo=12,
            n_tokens_anti=12,
        )
        for i, d in zip(item_ids, delta.tolist(), strict=True)
    ]


def outcome_rows(item_ids: list[str], delta: np.ndarray) -> list[ScoreRow]:
    """The rows ``run_measures`` reads (outcome and delta; the measures of these pair
    rows use nothing else), built without the component numbers the store keeps."""
    version = get_metric(METRIC).version
    return [
        ScoreRow(item_id, METRIC, version, "stereo" if d > 0 else "anti", d)
        for item_id, d in zip(item_ids, delta.tolist(), strict=True)
    ]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall and CPU seconds (user + system of the child and its threads) of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def measure(db: Path, out: Path, repeats: int) -> dict[str, float]:
    """Median wall and CPU time of ``drift`` and ``report`` as a user runs them, interleaved
    ``repeats`` times, with the machine's load average (1 min) before and after: on a
    shared machine the wall time follows the load, the CPU time much less."""
    exe = str(Path(sys.executable).with_name("bias-monitor"))
    env = {**os.environ, "MONITOR_DB": str(db)}
    times: dict[str, list[float]] = {
        k: [] for k in ("drift_s", "drift_cpu", "report_s", "report_cpu")
    }
    load = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name, cmd in (
            ("drift", [exe, "drift", "--format", "json"]),
            ("report", [exe, "report", "--out", str(out)]),
        ):
            wall, cpu, proc = timed(cmd, env)
            if proc.returncode != 0:
                raise SystemExit(f"{name} failed ({proc.returncode}): {proc.stderr[-2000:]}")
            times[f"{name}_s"].append(wall)
            times[f"{name}_cpu"].append(cpu)
    load.append(os.getloadavg()[0])
    sizes = {f.name: f.stat().st_size for f in out.iterdir()}
    return {
        **{k: statistics.median(v) for k, v in times.items()},
        "load": max(load),
        "html_bytes": sizes.get("report.html", 0),
        "json_bytes": sizes.get("report.json", 0),
        "md_bytes": sizes.get("report.md", 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshots", type=int, default=20)
    ap.add_argument("--nights", type=int, default=365)
    ap.add_argument("--early-nights", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3, help="timings per command (median kept)")
    ap.add_argument("--db", type=Path, help="store file (default: cached by arguments)")
    ap.add_argument("--regenerate", action="store_true")
    args = ap.parse_args()
    if not 0 < args.early_nights < args.nights:
        ap.error("--early-nights must be between 0 and --nights")

    cache = REPO / ".monitor-cache" / "bench"
    db = args.db or cached_store(args.snapshots, args.nights)
    early = db.with_name(db.stem + "-early.duckdb")
    out = cache / "store-scale-report"
    db.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"history: {args.snapshots} snapshots x {args.nights} nights, {ITEMS_PER_RUN} items a "
        f"run (first night x{REPEATS_FIRST_NIGHT}); early point after {args.early_nights} nights"
    )
    if args.regenerate or not (db.exists() and early.exists()):
        free = shutil.disk_usage(db.parent).free / 2**30
        needed = MIN_FREE_GB * args.snapshots * args.nights / (20 * 365)
        if free < needed:
            raise SystemExit(f"{free:.1f} GB free under {db.parent}; the store needs ~{needed:.1f}")
        for f in (db, early):
            f.unlink(missing_ok=True)
        t = time.perf_counter()
        events = {"drift_night": args.nights - 1, "break_night": 3 * args.nights // 4}
        runs, rows = generate(db, args.snapshots, range(args.early_nights), **events)
        shutil.copyfile(db, early)
        r2, w2 = generate(db, args.snapshots, range(args.early_nights, args.nights), **events)
        print(
            f"generated {runs + r2:,} runs, {rows + w2:,} score rows in "
            f"{time.perf_counter() - t:.0f} s -> {db} ({db.stat().st_size / 2**20:.0f} MiB)"
        )
    else:
        print(f"reusing {db} ({db.stat().st_size / 2**20:.0f} MiB)")

    results = {}
    for label, path in (("early", early), ("year", db)):
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        with Store.open(path).read() as view:
            n_runs = len(view.runs_since(None))
        results[label] = {"runs": n_runs, **measure(path, out, args.repeats)}
    e, y = results["early"], results["year"]
    print(f"\n{'':14}{'early':>15}{'year':>15}{'year/early':>12}")
    for k, unit in (
        ("runs", ""),
        ("drift_s", " s"),
        ("drift_cpu", " s"),
        ("report_s", " s"),
        ("report_cpu", " s"),
        ("html_bytes", " B"),
        ("json_bytes", " B"),
        ("md_bytes", " B"),
    ):
        a, b = (f"{v:.2f}{unit}" if unit == " s" else f"{v:,}{unit}" for v in (e[k], y[k]))
        goal = f"  goal < {GOAL_S:g} s" if k in ("drift_s", "report_s") else ""
        print(f"{k:14}{a:>15}{b:>15}{y[k] / e[k]:>11.2f}x{goal}")
    print(f"load average (1 min) while timing: up to {max(e['load'], y['load']):.1f}")
    ok = y["drift_s"] < GOAL_S and y["report_s"] < GOAL_S
    print(
        f"\ngoal: drift and report under {GOAL_S:g} s (median wall) on the year's store: "
        f"{'met' if ok else 'NOT met'} (report {y['report_s']:.2f} s wall, "
        f"{y['report_cpu']:.2f} s CPU)"
    )


if __name__ == "__main__":
    main()
