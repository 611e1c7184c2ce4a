"""What a family's round of ``make bench`` against lm-evaluation-harness shares.

``bench_bbq.py`` and ``bench_seegull.py`` time a family's ``score_local`` against
lm-eval's ``loglikelihood`` over the same (context, continuation) pairs, on one model,
interleaved (monitor, lm-eval, monitor, ...) so that a change in the machine's load hits
both. This is that harness, once: the command line both take, the items through the
project's own loader, the backend and the lm-eval worker (``lm_eval_worker.py``) started
and closed, the header line, and the timed rounds. Each round keeps what it measured, and
the family's script reads its checks (per-pair agreement, reruns) from it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vs_lm_eval import LmEvalWorker, cpu_name, lm_eval_python, load_average  # noqa: E402

from monitor import paths  # noqa: E402
from monitor.backends.hf_causal import HFCausalLM  # noqa: E402
from monitor.backends.loading import model_folder  # noqa: E402
from monitor.benchmarks.items import Item  # noqa: E402
from monitor.kinds import load_backend  # noqa: E402
from monitor.records import ScoreRow  # noqa: E402
from monitor.snapshots.registry import load_snapshots  # noqa: E402


def arguments(description: str, benchmark_help: str) -> argparse.ArgumentParser:
    """The options every round takes (a script adds its own before parsing)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per contender")
    parser.add_argument("--size", default="mini", choices=("mini", "default", "full"))
    parser.add_argument("--benchmark", action="append", help=benchmark_help)
    parser.add_argument("--limit", type=int, default=None, help="items per benchmark")
    return parser


def shared_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Add the lm-eval batch, thread and datasets options, parse, and set the threads."""
    parser.add_argument("--lm-eval-batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2, help="torch threads for both")
    parser.add_argument(
        "--datasets",
        type=Path,
        default=Path(os.environ.get("MONITOR_TEST_DATASETS", REPO.parent / "shared" / "datasets")),
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    return args


def load_items(datasets: Path, ids: list[str], size: str, limit: int | None) -> list[Item]:
    """The benchmarks' items through the family's own loader, at ``size``."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    data_dir = Path(tempfile.mkdtemp(prefix="bench-data-"))
    manifest = load_manifest()
    fetch(manifest, ids, from_dir=datasets, data_dir=data_dir)
    benches = load_benchmarks(ids, data_dir=data_dir, manifest=manifest, options={"size": size})
    return [it for b in benches for it in b.items[:limit]]


def bos_text(backend: HFCausalLM) -> str:
    """BOS as text, which lm-eval's ``tok_encode`` reads as "already starts with BOS"."""
    return backend.tokenizer.convert_ids_to_tokens(backend.bos_token_id)


def start(
    args: argparse.Namespace,
    snapshot_id: str,
    default_ids: list[str],
    pairs_of: Callable[[HFCausalLM, list[Item]], list[tuple[str, str]]],
    measure: Callable[[argparse.Namespace, HFCausalLM, list[Item], LmEvalWorker], int],
    **backend_options: Any,
) -> int:
    """Load the snapshot and the items, start lm-eval's worker on their pairs, and run
    ``measure`` (its exit status); the worker is closed whatever happens."""
    print(f"load average at start (1/5/15 min): {load_average()}", flush=True)
    cache = paths.cache_root()
    python = lm_eval_python(cache)
    snapshot = load_snapshots()[snapshot_id]
    folder = model_folder(snapshot, cache_dir=cache).folder
    backend = load_backend(
        snapshot, device="cpu", dtype="float32", cache_dir=cache, **backend_options
    )
    items = load_items(args.datasets, args.benchmark or default_ids, args.size, args.limit)
    worker = LmEvalWorker(
        python, folder, [], args.lm_eval_batch_size, pairs=pairs_of(backend, items)
    )
    try:
        return measure(args, backend, items, worker)
    finally:
        worker.close()


def header(worker: LmEvalWorker) -> None:
    """The machine, torch and threads of both contenders."""
    print(
        f"{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__} on "
        f"{torch.get_num_threads()} threads (lm-eval worker: torch {worker.info['torch']} on "
        f"{worker.info['threads']} threads)"
    )


def same_tokens(seqs: Sequence[Sequence[int]], worker: LmEvalWorker, what: str) -> bool:
    """Whether lm-eval feeds the monitor's token ids for every pair (said if not)."""
    differ = sum(a != b for a, b in zip(seqs, worker.info["pair_tokens"], strict=True))
    if differ:
        print(f"lm-eval would score other tokens than the monitor for {differ} {what}; stop")
    return not differ


@dataclass
class Rounds:
    """What the interleaved rounds measured: wall and CPU seconds of each contender per
    round, the monitor's rows and lm-eval's values per round, and the monitor's last
    round's extra figures (what its ``timed`` returns after rows, wall and CPU)."""

    mon_s: list[float] = field(default_factory=list)
    mon_cpu: list[float] = field(default_factory=list)
    lme_s: list[float] = field(default_factory=list)
    lme_cpu: list[float] = field(default_factory=list)
    runs: list[list[ScoreRow]] = field(default_factory=list)
    lm_values: list[list[float]] = field(default_factory=list)
    extra: tuple[Any, ...] = ()

    def medians(self) -> tuple[float, float]:
        """lm-eval / monitor, median wall clock and median CPU time."""
        return (
            statistics.median(self.lme_s) / statistics.median(self.mon_s),
            statistics.median(self.lme_cpu) / statistics.median(self.mon_cpu),
        )


def interleave(rounds: int, timed: Callable[[], tuple[Any, ...]], worker: LmEvalWorker) -> Rounds:
    """``rounds`` of the monitor (``timed()``: rows, wall s, CPU s, then any extra) then
    lm-eval, each round's times printed as it ends."""
    out = Rounds()
    for r in range(rounds):
        print(f"round {r + 1}/{rounds}, load average {load_average()}", flush=True)
        rows, seconds, cpu, *extra = timed()
        out.runs.append(rows)
        out.mon_s.append(seconds)
        out.mon_cpu.append(cpu)
        out.extra = tuple(extra)
        seconds, cpu, values = worker.loglik()
        out.lme_s.append(seconds)
        out.lme_cpu.append(cpu)
        out.lm_values.append(values)
        print(
            f"  monitor {out.mon_s[-1]:.1f} s ({out.mon_cpu[-1]:.1f} s CPU), lm-eval "
            f"{out.lme_s[-1]:.1f} s ({out.lme_cpu[-1]:.1f} s CPU)",
            flush=True,
        )
    print(f"load average at end: {load_average()}")
    return out
