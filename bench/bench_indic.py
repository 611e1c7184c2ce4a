"""Issue 12 measurements, each side by side in one run on one machine:

1. **Metric panel cost**: ``score_items`` with the full panel (``cll`` + ``cll-reference``
   + ``ull`` from one pass, ``run --metrics cll-reference``; the default panel is ``cll``
   + ``ull``, measured by ``make bench``'s default-run row) against the run's metric alone,
   interleaved per benchmark so a change in machine load hits both; the primary metric's
   outcomes must not change.
2. **Prior form (cll v2 → v3)**: v3 scores each target's prior in the form it takes in
   the sentence (no leading space at the start of a sentence); v2 used " " + target
   everywhere. From the v3 rows and the v2 priors of the affected targets: how many items
   change prior, how many outcomes flip, and the bias rate under each.
3. **Taxonomy throughput**: items/s of the Indic-Bias taxonomy benchmark with the panel,
   and the expected time of the default (3,418 pairs) and full (15,381) sizes.

    .venv/bin/python bench/bench_indic.py [--snapshot smollm2-135m-instruct-q4]
        [--limit N] [--taxonomy-limit N] [--threads 1]

Prints plain text; nothing is stored. Runs on the machine's data mirror
(``$MONITOR_DATA_MIRROR``, default ../shared/datasets).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from monitor.backends.loading import load_causal_lm  # noqa: E402
from monitor.benchmarks.fetch import fetch  # noqa: E402
from monitor.benchmarks.load import load_benchmarks  # noqa: E402
from monitor.benchmarks.manifest import load_manifest  # noqa: E402
from monitor.families.pairs import cll  # noqa: E402
from monitor.families.pairs.scoring import score_items  # noqa: E402
from monitor.metrics.outcomes import decide  # noqa: E402
from monitor.snapshots.registry import get_snapshot, load_snapshots  # noqa: E402

AXES = ["bhed-caste", "bhed-religion", "bhed-gender", "bhed-race"]
TAXONOMY_SIZES = {"indic-taxonomy": 3418, "indic-taxonomy-full": 15381}


def rate(outcomes: list[str]) -> str:
    c = Counter(outcomes)
    n = c["stereo"] + c["anti"]
    return f"{c['stereo']}/{n} = {100 * c['stereo'] / n:.1f}%" if n else "—"


FULL = ("cll-reference",)  # what ``--metrics cll-reference`` adds to the default panel


def panel_cost(lm, benches) -> dict:
    """Returns the rows of ``cll`` alone per benchmark (reused by the prior-form check)."""
    print("\n== 1. full metric panel: cll alone vs cll + cll-reference + ull in one pass ==")
    alone = {}
    totals = {False: 0.0, True: 0.0}
    n_items = 0
    for b in benches:
        timings, rows = {}, {}
        for panel in (False, True):
            t = time.perf_counter()
            rows[panel] = score_items(lm, b.items, "cll", panel=panel, panel_metrics=FULL)
            timings[panel] = time.perf_counter() - t
            totals[panel] += timings[panel]
        alone[b.benchmark] = rows[False]
        same = sum(a.outcome == p.outcome for a, p in zip(rows[False], rows[True], strict=True))
        maxdiff = max(abs(a.delta - p.delta) for a, p in zip(rows[False], rows[True], strict=True))
        n_items += len(b.items)
        print(
            f"{b.benchmark:14} {len(b.items):4} items  alone {timings[False]:7.1f}s  "
            f"panel {timings[True]:7.1f}s  ratio {timings[True] / timings[False]:.2f}x  "
            f"cll outcomes equal {same}/{len(b.items)}  max |delta diff| {maxdiff:.2e}"
        )
    print(
        f"all            {n_items:4} items  alone {n_items / totals[False]:.2f} items/s  "
        f"panel {n_items / totals[True]:.2f} items/s  ratio {totals[True] / totals[False]:.2f}x"
    )
    return alone


def prior_form(lm, benches, scored: dict) -> None:
    print("\n== 2. cll prior form: v2 (' ' + target) vs v3 (the form in the sentence) ==")
    bos = lm.bos_token_id
    for b in benches:
        rows = scored.get(b.benchmark) or score_items(lm, b.items, "cll", panel=False)
        affected, flips, v2, v3 = 0, 0, [], []
        for item, row in zip(b.items, rows, strict=True):
            ts = [t.strip() for t in item.targets_stereo if t.strip()]
            ta = [t.strip() for t in item.targets_anti if t.strip()]
            forms_s = cll.prior_forms(item.text_stereo, ts, item.template)
            forms_a = cll.prior_forms(item.text_anti, ta, item.template)
            old_s, old_a = [" " + t for t in ts], [" " + t for t in ta]
            v3.append(row.outcome)
            if forms_s == old_s and forms_a == old_a:
                v2.append(row.outcome)
                continue
            affected += 1
            seqs = [(bos, *lm.encode(f, add_special_tokens=False)) for f in old_s + old_a]
            lps = [float(np.sum(x, dtype=np.float64)) for x in lm.token_logprobs(seqs)]
            p_s, p_a = sum(lps[: len(ts)]), sum(lps[len(ts) :])
            delta = (row.lp_stereo - p_s) - (row.lp_anti - p_a)
            v2.append(decide(delta))
            flips += decide(delta) != row.outcome
        print(
            f"{b.benchmark:14} items {len(b.items):4}  prior changed {affected:4}  "
            f"outcome flips {flips:3}  bias rate v2 {rate(v2)}  v3 {rate(v3)}"
        )


def taxonomy_throughput(lm, limit: int, manifest, data_dir) -> None:
    print("\n== 3. Indic-Bias taxonomy throughput (cll with the default panel, cll + ull) ==")
    (tax,) = load_benchmarks(["indic-taxonomy"], data_dir=data_dir, manifest=manifest)
    items = tax.items[:limit]
    t = time.perf_counter()
    score_items(lm, items, "cll")
    elapsed = time.perf_counter() - t
    per_s = len(items) / elapsed
    print(f"{len(items)} pairs in {elapsed:.1f}s: {per_s:.2f} pairs/s")
    for name, size in TAXONOMY_SIZES.items():
        print(f"  expected {name} ({size} pairs): {size / per_s / 60:.0f} min")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshot", default="smollm2-135m-instruct-q4")
    ap.add_argument("--limit", type=int, default=None, help="items per Indian-BhED axis")
    ap.add_argument("--taxonomy-limit", type=int, default=200)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--only", choices=["panel", "prior", "taxonomy"], default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    mirror = Path(os.environ.get("MONITOR_DATA_MIRROR", REPO.parent / "shared" / "datasets"))
    data_dir = Path(tempfile.mkdtemp(prefix="bench-indic-"))
    manifest = load_manifest()
    fetch(manifest, [*AXES, "indic-taxonomy"], from_dir=mirror, data_dir=data_dir)
    benches = load_benchmarks(AXES, data_dir=data_dir, manifest=manifest)
    if args.limit:
        benches = [type(b)(**{**b.__dict__, "items": b.items[: args.limit]}) for b in benches]
    lm = load_causal_lm(get_snapshot(args.snapshot, load_snapshots()), device="cpu", dtype="auto")
    print(f"{args.snapshot} on {lm.device}, torch threads {torch.get_num_threads()}")
    scored = panel_cost(lm, benches) if args.only in (None, "panel") else {}
    if args.only in (None, "prior"):
        prior_form(lm, benches, scored)
    if args.only in (None, "taxonomy"):
        taxonomy_throughput(lm, args.taxonomy_limit, manifest, data_dir)


if __name__ == "__main__":
    main()
