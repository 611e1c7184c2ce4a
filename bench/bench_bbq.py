"""The BBQ round of ``make bench``: the monitor's ``mc-loglik`` against lm-evaluation-harness's
multiple-choice scoring, side by side in one run.

Contenders, on the same model (SmolLM2-135M-Instruct, the converted fp32 safetensors folder
the monitor loads), the same items (BharatBBQ at ``--size``, ``mini`` by default, all 13
categories unless ``--benchmark`` names some), the same prompt and continuations (lm-eval's
``bbq_multiple_choice``: ``"{context}\\n\\nQ: {question}\\nA:"`` and ``" " + option``), the
same thread count, CPU, fp32:

* **monitor**: ``monitor.families.choice_qa.scoring.score_local``, what ``bias-monitor run``
  calls for choice questions: an item's three options are branches of one prefix tree, so
  the prompt (context and question) is computed once per item, several items per pass;
* **lm-eval**: lm-evaluation-harness (the pin and virtualenv of ``bench_vs_lm_eval.py``)
  ``HFLM.loglikelihood`` at batch size 16 over the (context, continuation) pairs, the
  requests its ``multiple_choice`` output type makes, kept loaded in a worker process
  (``lm_eval_worker.py``).

Both condition on BOS: the monitor puts it before every prompt; lm-eval is given the
BOS token's text in front of the context, which its ``tok_encode`` reads as "already
starts with BOS" (no second one is added). The worker reports the token ids lm-eval
feeds per pair; the run stops if any differs from the monitor's sequence, so the two
sides score exactly the same tokens.

They run interleaved (monitor, lm-eval, monitor, ...) so that a change in the machine's
load hits both; the ratio of the medians is what to read, absolute seconds are noisy on
a shared machine. Checks printed with the times: each option's log-likelihood from the
monitor equals lm-eval's within 1e-4 nats (max |diff| printed; where one is over, a
float64 copy of the model says whether lm-eval's own float32 error explains it), how many
items' choices differ, and reruns are bit-identical. Goal (issue 26): >= 2.5x lm-eval on
BharatBBQ ``mini`` with SmolLM2 on 2 cores.

    .venv/bin/python bench/bench_bbq.py [--rounds 3] [--size mini] [--benchmark ID ...]
        [--limit N] [--threads 2]
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lm_eval_round as lm_round
from bench_vs_lm_eval import SNAPSHOT

from monitor.backends.hf_causal import HFCausalLM
from monitor.benchmarks.items import Item
from monitor.families.choice_qa.loglik import continuations, prompt_text
from monitor.families.choice_qa.scoring import OptionPlanner, score_local
from monitor.records import ScoreRow

BHARATBBQ = [
    "bharatbbq-age",
    "bharatbbq-agexgender",
    "bharatbbq-caste",
    "bharatbbq-disability-status",
    "bharatbbq-gender-identity",
    "bharatbbq-genderxreligion",
    "bharatbbq-nationality",
    "bharatbbq-physical-appearance",
    "bharatbbq-region",
    "bharatbbq-regionxgender",
    "bharatbbq-religion",
    "bharatbbq-ses",
    "bharatbbq-sexual-orientation",
]
TOLERANCE = 1e-4
GOAL = 2.5


def lm_eval_pairs(backend: HFCausalLM, items: list[Item]) -> list[tuple[str, str]]:
    """(context, continuation) per option, item by item: lm-eval's multiple-choice
    requests for the same prompt, with BOS's text in front (see the module docstring)."""
    bos = lm_round.bos_text(backend)
    return [
        (bos + prompt_text(it.payload), cont) for it in items for cont in continuations(it.payload)
    ]


def padded_positions(lengths: list[int], batch_size: int) -> int:
    """About what lm-eval feeds: requests sorted longest first, cut into batches, each
    padded to its longest input (a request's tokens but the last)."""
    ordered = sorted((n - 1 for n in lengths), reverse=True)
    batches = (ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size))
    return sum(len(b) * b[0] for b in batches)


def timed(backend: HFCausalLM, items: list[Item], batch_size: int | None):
    """(rows, wall s, CPU s, positions fed) of one monitor run."""
    before = backend.stats.padded_tokens
    t, cpu = time.perf_counter(), time.process_time()
    rows = score_local(backend, items, "mc-loglik", batch_size=batch_size)
    return (
        rows,
        time.perf_counter() - t,
        time.process_time() - cpu,
        backend.stats.padded_tokens - before,
    )


def main() -> int:
    parser = lm_round.arguments(__doc__.splitlines()[0], "a bharatbbq-* id (repeatable)")
    parser.add_argument("--batch-size", type=int, default=None, help="monitor (default its own)")
    args = lm_round.shared_arguments(parser)
    return lm_round.start(args, SNAPSHOT, BHARATBBQ, lm_eval_pairs, measure, prefix_sharing=True)


def measure(args, backend: HFCausalLM, items: list[Item], worker) -> int:
    lm_round.header(worker)
    planner = OptionPlanner(backend)
    seqs = [list(s) for it in items for s in planner.plan(it).sequences]
    n_bench = len({it.benchmark for it in items})
    print(
        f"model {backend.name}; {len(items)} items of {n_bench} benchmark(s) at size "
        f"{args.size}, {len(seqs)} options"
    )
    if not lm_round.same_tokens(seqs, worker, "options"):
        return 1

    timed(backend, items[:4], args.batch_size)  # warm both up
    worker.loglik(limit=12)
    rounds = lm_round.interleave(
        args.rounds, lambda: timed(backend, items, args.batch_size), worker
    )
    fed = rounds.extra[0] if rounds.extra else 0

    lm_positions = padded_positions([len(s) for s in seqs], args.lm_eval_batch_size)
    print(
        f"\npositions fed: monitor {fed:,} (prefix-tree nodes), lm-eval about "
        f"{lm_positions:,} (padded batches of {args.lm_eval_batch_size}); "
        f"{lm_positions / max(fed, 1):.2f}x"
    )
    ratio, cpu_ratio = rounds.medians()
    per_round = ", ".join(f"{b / a:.2f}" for a, b in zip(rounds.mon_s, rounds.lme_s, strict=True))
    print(
        f"lm-eval / monitor: {ratio:.2f}x wall clock (median; per round {per_round}), "
        f"{cpu_ratio:.2f}x CPU time; monitor median {statistics.median(rounds.mon_s):.1f} s, "
        f"lm-eval {statistics.median(rounds.lme_s):.1f} s"
    )
    agree = check_agreement(backend, seqs, rounds.runs[0], rounds.lm_values[0])
    first = [r.details["ll"] for r in rounds.runs[0]]
    reruns = all(first == [r.details["ll"] for r in later] for later in rounds.runs[1:])
    print(f"monitor reruns bit-identical: {'yes' if reruns else 'NO'}")
    ok = agree and reruns
    verdict = "met" if ok and ratio >= GOAL else "NOT met"
    print(
        f"goal (>= {GOAL}x lm-eval on BharatBBQ {args.size}, per-option log-likelihoods "
        f"within {TOLERANCE:g} nats of lm-eval's): {verdict}"
    )
    return 0 if ok else 1


def option_gaps(rows: list[ScoreRow], lm: list[float]) -> tuple[list[float], list[float], int]:
    """(monitor's per-option values in pair order, |monitor - lm-eval| per option, items
    whose argmax choice differs)."""
    ours = [v for row in rows for v in row.details["ll"]]
    gaps = [abs(a - b) for a, b in zip(ours, lm, strict=True)]
    flips = 0
    for k, row in enumerate(rows):
        theirs = lm[3 * k : 3 * k + 3]
        flips += row.details["choice"] != max(range(3), key=theirs.__getitem__)
    return ours, gaps, flips


def check_agreement(
    backend: HFCausalLM, seqs: list[list[int]], rows: list[ScoreRow], lm: list[float]
) -> bool:
    """Per option, the monitor's log-likelihood against lm-eval's; one over TOLERANCE is
    checked against a float64 copy of the model (lm-eval normalises in float32 with
    ``log_softmax``; see ``bench_vs_lm_eval.check_against_lm_eval``)."""
    ours, gaps, flips = option_gaps(rows, lm)
    far = [k for k, g in enumerate(gaps) if g > TOLERANCE]
    print(
        f"\nper-option log-likelihood, monitor vs lm-eval: max |diff| {max(gaps):.2e} nats, "
        f"{len(far)} of {len(gaps)} over {TOLERANCE:g}; items whose choice differs: {flips}"
    )
    if not far:
        return True
    exact = HFCausalLM(
        copy.deepcopy(backend.model).double(), backend.tokenizer, name="f64", prefix_sharing=False
    )
    n_option = [row.details["n_tokens"][j] for row in rows for j in range(3)]
    f64 = [
        float(v[len(v) - n_option[k] :].sum())
        for k, v in zip(far, exact.token_logprobs([seqs[k] for k in far]), strict=True)
    ]
    lm_err = [abs(lm[k] - e) for k, e in zip(far, f64, strict=True)]
    our_err = [abs(ours[k] - e) for k, e in zip(far, f64, strict=True)]
    unexplained = sum(gaps[k] > TOLERANCE + le for k, le in zip(far, lm_err, strict=True))
    print(
        f"  those {len(far)} against float64: monitor max |error| {max(our_err):.2e}, "
        f"lm-eval {max(lm_err):.2e}; not explained by lm-eval's own error: {unexplained}"
    )
    return unexplained == 0


if __name__ == "__main__":
    raise SystemExit(main())
