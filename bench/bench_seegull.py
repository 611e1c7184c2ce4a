"""The SeeGULL round of ``make bench``: the monitor's ``seegull-attribute-ll`` against
lm-evaluation-harness scoring the same sentences as ``loglikelihood`` requests.

Contenders, on the same model (Gemma 3 270M, the converted fp32 safetensors folder the
monitor loads: SmolLM2 cannot read these scripts), the same items (SeeGULL Hindi and Tamil
at ``--size``, ``mini`` by default), the same (context, continuation) pairs (a frame naming
an identity, then ``" " + attribute``; four per item: two frames, the stereotyped identity
and the contrast), the same thread count, CPU, fp32:

* **monitor**: ``monitor.families.seegull.scoring.score_local``, what ``bias-monitor run``
  calls: fixed chunks of items, each chunk's distinct sequences scored once;
* **lm-eval**: lm-evaluation-harness (the pin and virtualenv of ``bench_vs_lm_eval.py``)
  ``HFLM.loglikelihood`` at batch size 16 over the pairs, kept loaded in a worker process
  (``lm_eval_worker.py``).

Both condition on BOS (lm-eval is given the BOS token's text in front of the context, as
in ``bench_bbq.py``); the worker reports the token ids lm-eval feeds per pair and the round
stops if any differs from the monitor's sequence. They run interleaved so a change in the
machine's load hits both; read the ratio of the medians. Checks printed with the times:
each pair's log-likelihood from the monitor against lm-eval's (max |diff|, how many over
1e-4 nats), items whose outcome (frame 1 or 2) differs, and reruns bit-identical.

    .venv/bin/python bench/bench_seegull.py [--rounds 3] [--size mini] [--benchmark ID ...]
        [--limit N] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_lm_eval import LmEvalWorker, cpu_name, lm_eval_python, load_average  # noqa: E402

from monitor import paths  # noqa: E402
from monitor.backends.hf_causal import HFCausalLM  # noqa: E402
from monitor.backends.loading import model_folder  # noqa: E402
from monitor.benchmarks.items import Item  # noqa: E402
from monitor.families.seegull.frames import METRIC, continuation, outcome, prompt  # noqa: E402
from monitor.families.seegull.scoring import item_sequences, score_local  # noqa: E402
from monitor.kinds import load_backend  # noqa: E402
from monitor.records import ScoreRow  # noqa: E402
from monitor.snapshots.registry import load_snapshots  # noqa: E402

SNAPSHOT = "gemma-3-270m-q4"
BENCHMARKS = ["seegull-hi", "seegull-ta"]
TOLERANCE = 1e-4


def load_items(datasets: Path, ids: list[str], size: str, limit: int | None) -> list[Item]:
    """SeeGULL items through the family's own loader, at ``size``."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    data_dir = Path(tempfile.mkdtemp(prefix="bench-data-"))
    manifest = load_manifest()
    fetch(manifest, ids, from_dir=datasets, data_dir=data_dir)
    benches = load_benchmarks(ids, data_dir=data_dir, manifest=manifest, options={"size": size})
    return [it for b in benches for it in b.items[:limit]]


def lm_eval_pairs(backend: HFCausalLM, items: list[Item]) -> list[tuple[str, str]]:
    """(context, continuation) per sequence, in the scorer's order: frame 1 naming S, C;
    frame 2 naming S, C; BOS's text in front of every context."""
    bos_text = backend.tokenizer.convert_ids_to_tokens(backend.bos_token_id)
    return [
        (
            bos_text + prompt(str(p["language"]), frame, str(p[who])),
            continuation(str(p["attribute"])),
        )
        for p in (it.payload for it in items)
        for frame in (0, 1)
        for who in ("identity", "contrast")
    ]


def row_values(row: ScoreRow) -> list[float]:
    """The row's four log-likelihoods in pair order."""
    d = row.details
    return [d["lp_stereo"], d["lp_anti"], d["frame2_lp_stereo"], d["frame2_lp_anti"]]


def timed(backend: HFCausalLM, items: list[Item]) -> tuple[list[ScoreRow], float, float]:
    t, cpu = time.perf_counter(), time.process_time()
    rows = score_local(backend, items, METRIC)
    return rows, time.perf_counter() - t, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per contender")
    parser.add_argument("--size", default="mini", choices=("mini", "default", "full"))
    parser.add_argument("--benchmark", action="append", help="a seegull-* id (repeatable)")
    parser.add_argument("--limit", type=int, default=None, help="items per benchmark")
    parser.add_argument("--lm-eval-batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="torch threads for both")
    parser.add_argument(
        "--datasets",
        type=Path,
        default=Path(os.environ.get("MONITOR_TEST_DATASETS", REPO.parent / "shared" / "datasets")),
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"load average at start (1/5/15 min): {load_average()}", flush=True)
    cache = paths.cache_root()
    python = lm_eval_python(cache)
    snapshot = load_snapshots()[SNAPSHOT]
    folder = model_folder(snapshot, cache_dir=cache).folder
    backend = load_backend(snapshot, device="cpu", dtype="float32", cache_dir=cache)
    items = load_items(args.datasets, args.benchmark or BENCHMARKS, args.size, args.limit)
    pairs = lm_eval_pairs(backend, items)
    worker = LmEvalWorker(python, folder, [], args.lm_eval_batch_size, pairs=pairs)
    try:
        return measure(args, backend, items, worker)
    finally:
        worker.close()


def measure(args, backend: HFCausalLM, items: list[Item], worker: LmEvalWorker) -> int:
    print(
        f"{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__} on "
        f"{torch.get_num_threads()} threads (lm-eval worker: torch {worker.info['torch']} on "
        f"{worker.info['threads']} threads)"
    )
    bos = backend.bos_token_id
    seqs = [list(s) for it in items for s, _ in item_sequences(backend, bos, it)]
    print(f"model {backend.name}; {len(items)} items at size {args.size}, {len(seqs)} pairs")
    differ = sum(a != b for a, b in zip(seqs, worker.info["pair_tokens"], strict=True))
    if differ:
        print(f"lm-eval would score other tokens than the monitor for {differ} pairs; stop")
        return 1
    timed(backend, items[:4])  # warm both up
    worker.loglik(limit=8)
    mon_s, mon_cpu, lme_s, lme_cpu = [], [], [], []
    runs: list[list[ScoreRow]] = []
    lm_values: list[list[float]] = []
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}, load average {load_average()}", flush=True)
        rows, seconds, cpu = timed(backend, items)
        runs.append(rows)
        mon_s.append(seconds)
        mon_cpu.append(cpu)
        seconds, cpu, values = worker.loglik()
        lme_s.append(seconds)
        lme_cpu.append(cpu)
        lm_values.append(values)
        print(
            f"  monitor {mon_s[-1]:.1f} s ({mon_cpu[-1]:.1f} s CPU), lm-eval {lme_s[-1]:.1f} s "
            f"({lme_cpu[-1]:.1f} s CPU)",
            flush=True,
        )
    print(f"load average at end: {load_average()}")
    ratio = statistics.median(lme_s) / statistics.median(mon_s)
    cpu_ratio = statistics.median(lme_cpu) / statistics.median(mon_cpu)
    print(
        f"lm-eval / monitor: {ratio:.2f}x wall clock (median), {cpu_ratio:.2f}x CPU time; "
        f"monitor median {statistics.median(mon_s):.1f} s, lm-eval {statistics.median(lme_s):.1f} s"
    )
    ours = [v for row in runs[0] for v in row_values(row)]
    lm = lm_values[0]
    gaps = [abs(a - b) for a, b in zip(ours, lm, strict=True)]
    far = sum(g > TOLERANCE for g in gaps)
    flips = 0
    for k, row in enumerate(runs[0]):
        s1, c1, s2, c2 = lm[4 * k : 4 * k + 4]
        flips += row.outcome != outcome(s1, c1)
        flips += row.details["frame2_outcome"] != outcome(s2, c2)
    print(
        f"per-pair log-likelihood, monitor vs lm-eval: max |diff| {max(gaps):.2e} nats, "
        f"{far} of {len(gaps)} over {TOLERANCE:g}; outcomes that differ (both frames): {flips}"
    )
    reruns = all(
        [row_values(r) for r in runs[0]] == [row_values(r) for r in later] for later in runs[1:]
    )
    print(f"monitor reruns bit-identical: {'yes' if reruns else 'NO'}")
    return 0 if reruns and flips == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
