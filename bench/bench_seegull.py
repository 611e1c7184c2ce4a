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

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lm_eval_round as lm_round

from monitor.backends.hf_causal import HFCausalLM
from monitor.benchmarks.items import Item
from monitor.families.seegull.frames import METRIC, continuation, outcome, prompt
from monitor.families.seegull.scoring import item_sequences, score_local
from monitor.records import ScoreRow

SNAPSHOT = "gemma-3-270m-q4"
BENCHMARKS = ["seegull-hi", "seegull-ta"]
TOLERANCE = 1e-4


def lm_eval_pairs(backend: HFCausalLM, items: list[Item]) -> list[tuple[str, str]]:
    """(context, continuation) per sequence, in the scorer's order: frame 1 naming S, C;
    frame 2 naming S, C; BOS's text in front of every context."""
    bos = lm_round.bos_text(backend)
    return [
        (
            bos + prompt(str(p["language"]), frame, str(p[who])),
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
    parser = lm_round.arguments(__doc__.splitlines()[0], "a seegull-* id (repeatable)")
    args = lm_round.shared_arguments(parser)
    return lm_round.start(args, SNAPSHOT, BENCHMARKS, lm_eval_pairs, measure)


def measure(args, backend: HFCausalLM, items: list[Item], worker) -> int:
    lm_round.header(worker)
    bos = backend.bos_token_id
    seqs = [list(s) for it in items for s, _ in item_sequences(backend, bos, it)]
    print(f"model {backend.name}; {len(items)} items at size {args.size}, {len(seqs)} pairs")
    if not lm_round.same_tokens(seqs, worker, "pairs"):
        return 1
    timed(backend, items[:4])  # warm both up
    worker.loglik(limit=8)
    rounds = lm_round.interleave(args.rounds, lambda: timed(backend, items), worker)
    ratio, cpu_ratio = rounds.medians()
    print(
        f"lm-eval / monitor: {ratio:.2f}x wall clock (median), {cpu_ratio:.2f}x CPU time; "
        f"monitor median {statistics.median(rounds.mon_s):.1f} s, lm-eval "
        f"{statistics.median(rounds.lme_s):.1f} s"
    )
    ours = [v for row in rounds.runs[0] for v in row_values(row)]
    lm = rounds.lm_values[0]
    gaps = [abs(a - b) for a, b in zip(ours, lm, strict=True)]
    far = sum(g > TOLERANCE for g in gaps)
    flips = 0
    for k, row in enumerate(rounds.runs[0]):
        s1, c1, s2, c2 = lm[4 * k : 4 * k + 4]
        flips += row.outcome != outcome(s1, c1)
        flips += row.details["frame2_outcome"] != outcome(s2, c2)
    print(
        f"per-pair log-likelihood, monitor vs lm-eval: max |diff| {max(gaps):.2e} nats, "
        f"{far} of {len(gaps)} over {TOLERANCE:g}; outcomes that differ (both frames): {flips}"
    )
    first = [row_values(r) for r in rounds.runs[0]]
    reruns = all(first == [row_values(r) for r in later] for later in rounds.runs[1:])
    print(f"monitor reruns bit-identical: {'yes' if reruns else 'NO'}")
    return 0 if reruns and flips == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
