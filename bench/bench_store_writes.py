"""What the local driver's timed writes save: score rows written chunk by chunk against
the same rows written as ``jobs.local.TimedWrites`` groups them.

On an H200 the nightly job's question step (the full English BharatBBQ, 54,032 questions)
handed the store one chunk of about 42 questions every ~0.1 s, and each ``add_scores`` call
(open the DuckDB file, commit, checkpoint) took 66 ms: 85 of the run's 244 s. The driver now
writes at most every ``FLUSH_SECONDS``, so at that cadence a write holds about
``flush / chunk_seconds`` chunks. This bench writes the same synthetic rows both ways into
fresh stores, interleaved, and prints each round and the ratio. It measures the store's
cost alone (no model, no sleeping): the scoring time between chunks is what the cadence
stands for.

    .venv/bin/python bench/bench_store_writes.py [--rows 8400] [--chunk 42]
        [--chunk-seconds 0.097] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from store_scale import make_items, night_deltas, pair_score_rows, run_record

from monitor.jobs.local import FLUSH_SECONDS
from monitor.store.db import Store


def write_all(folder: Path, name: str, rows, items, per_write: int) -> tuple[float, int]:
    """Seconds to write ``rows`` in writes of ``per_write`` rows into a fresh store."""
    store = Store.open(folder / f"{name}.duckdb")
    store.begin_run(run_record(0, 0, 0, "synthetic"))
    store.upsert_items(items)
    t = time.perf_counter()
    writes = 0
    for k in range(0, len(rows), per_write):
        store.add_scores("s00-n000-r0", rows[k : k + per_write])
        writes += 1
    return time.perf_counter() - t, writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8400)
    parser.add_argument("--chunk", type=int, default=42, help="rows a backend call gives")
    parser.add_argument(
        "--chunk-seconds", type=float, default=0.097, help="seconds between chunks (H200)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base = make_items()  # one synthetic run's items; copies with new ids up to --rows
    items = [
        replace(base[i % len(base)], item_id=f"{base[i % len(base)].item_id}:{i // len(base)}")
        for i in range(args.rows)
    ]
    ids = [it.item_id for it in items]
    rng = np.random.default_rng(0)
    rows = pair_score_rows(ids, night_deltas(rng.random(len(ids)) < 0.5, np.ones(len(ids)), rng))
    per_flush = args.chunk * max(1, round(FLUSH_SECONDS / args.chunk_seconds))
    print(
        f"{len(rows):,} score rows; chunks of {args.chunk} every {args.chunk_seconds} s; "
        f"timed writes every {FLUSH_SECONDS:g} s = {per_flush} rows a write"
    )
    each, timed = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            a, na = write_all(Path(tmp), f"chunk{r}", rows, items, args.chunk)
            b, nb = write_all(Path(tmp), f"timed{r}", rows, items, per_flush)
            each.append(a)
            timed.append(b)
            print(
                f"round {r + 1}: per chunk {a:.2f} s ({na} writes, {1000 * a / na:.0f} ms each); "
                f"timed {b:.2f} s ({nb} writes); {a / b:.1f}x"
            )
    a, b = statistics.median(each), statistics.median(timed)
    print(f"median: per chunk {a:.2f} s, timed {b:.2f} s: the timed writes take 1/{a / b:.1f}")


if __name__ == "__main__":
    main()
