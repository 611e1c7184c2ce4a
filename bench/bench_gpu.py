"""The monitor's CLL scoring against lm-evaluation-harness on one GPU, 7B-shaped model.

Issue 28, step 5: ``bench_vs_lm_eval.py``'s comparison where a CUDA device is lent, on a
random-weight model shaped like Llama-2-7B (hidden 4096, 32 layers, 32 heads, MLP
11008), built from its config on the GPU in bfloat16: no download, nothing to pin.
The vocabulary is SmolLM2's (49,152; its tokenizer is the one both sides use), so the
model has 6.74B parameters. Random weights give meaningless log-probs but the same
matrix shapes and the same work as a trained model; the comparison is of speed, and of
whether both sides compute the same values in the same dtype.

Contenders, interleaved round by round on the same model object and the same sentences
(both sentences of every item of the four Indian-BhED axes):

* **monitor**: ``score_items(..., "cll", panel=False)``: sentences and target-word
  priors, prefix sharing on (bf16 models keep their fast attention kernel; the float64
  core is for float32 models only);
* **lm-eval**: lm-evaluation-harness 0.4.13 ``HFLM.loglikelihood_rolling`` over the
  sentences alone, handed the same model object;
* **monitor, padded**: prefix sharing off;
* **default run (panel)**: cll and ull together, the default panel (ull reads cll's
  sentences: the same requests; cll-reference, about twice the positions, is opt-in since
  issue 43).

Printed: per-round times, medians and spread, useful and executed positions, the share
of the GPU's bf16 peak (a plain 8192^3 ``torch.mm``, measured in the same run) at the
positions each side fed and at the positions the task needs, peak GPU memory, and how
far the monitor's per-sentence log-probs are from lm-eval's (in bf16 the two sides'
different batch shapes round differently, so the check is the distance and the
agreement of each item's stereo-minus-anti sign, not 1e-4 nats).

Two steps, because the GPU machine has no copy of the datasets and no monitor install:

    .venv/bin/python bench/bench_gpu.py export --out .gpu     # here: items + tokenizer
    python3 bench/bench_gpu.py run --data .gpu [--rounds 3]    # there, with lm-eval on
                                                               # PYTHONPATH

``export`` writes the items (benchmark sentences: written to a file, never printed) and
SmolLM2's tokenizer files. ``run --shape tiny --device cpu`` runs the whole script on a
two-layer model on a CPU, to test it before spending device time (the lm-eval virtualenv
``make bench`` builds has every package it needs: ``PYTHONPATH=.
.monitor-cache/bench/lm-eval-*/bin/python bench/bench_gpu.py run --shape tiny ...``).
The GPU machine needs only lm-eval 0.4.13 and dill beside its own torch and transformers:
``pip download --no-deps`` their wheels here and install them there with ``--target``.
``--configs`` takes several ``ROWS[:NODES]`` settings (``auto``: what the loader gives a
model on that device, ``monitor.backends.hf_causal.pass_sizes``); lm-eval runs at the same
batch size; ``--profile`` adds one profiled run of each side (device busy time, share in
matrix-product kernels, the top kernels and host calls).

Measured on an H200, 2026-11-26 (docs/performance.md has the whole row): at 128 rows and
up to 8,192 nodes per pass, 2.08x lm-eval at batch 128 (1.81x on a noisier machine), 41%
of the measured bf16 peak on the positions the task needs; BharatBBQ mini 2.75x; at the
CPU's 32 rows of 512 nodes, 0.90x (launch-bound), which is why a GPU gets larger passes.
2026-11-27, same card: with the tree mask built on the device, one non-blocking copy per
pass and values read after the next pass is launched, 2.38x (2.22x before, same machine);
``--chunk 1024`` (calls of eight passes, which overlap) 2.68x against 2.28x in one run,
which is why a GPU's calls now hold 1,024 requests (``pass_sizes``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BENCHMARKS = ["bhed-caste", "bhed-religion", "bhed-gender", "bhed-race"]
# BharatBBQ's 13 English categories at ``mini`` (480 questions): the choice-QA round, and
# the rate from which a nightly full run (54,048 questions) is estimated.
BHARATBBQ = [
    f"bharatbbq-{c}"
    for c in (
        "age",
        "agexgender",
        "caste",
        "disability-status",
        "gender-identity",
        "genderxreligion",
        "nationality",
        "physical-appearance",
        "region",
        "regionxgender",
        "religion",
        "ses",
        "sexual-orientation",
    )
]
CHOICE_SIZE = "mini"
FULL_BHARATBBQ = 54_048
SHAPES = {
    # Llama-2-7B's shape; the vocabulary comes from the tokenizer.
    "7b": dict(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
    ),
    "tiny": dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
    ),
}


def export(out: Path) -> int:
    """Items of the four Indian-BhED axes and SmolLM2's tokenizer, into ``out``."""
    import tempfile

    from monitor import paths
    from monitor.backends.loading import model_folder
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest
    from monitor.snapshots.registry import load_snapshots

    out.mkdir(parents=True, exist_ok=True)
    data_dir = Path(tempfile.mkdtemp(prefix="bench-data-"))
    manifest = load_manifest()
    fetch(manifest, BENCHMARKS, from_dir=paths.data_mirror(), data_dir=data_dir)
    benches = load_benchmarks(BENCHMARKS, data_dir=data_dir, manifest=manifest)
    items = [dataclasses.asdict(it) for b in benches for it in b.items]
    (out / "items.json").write_text(json.dumps(items, ensure_ascii=False))
    fetch(manifest, BHARATBBQ, from_dir=paths.data_mirror(), data_dir=data_dir)
    choice = load_benchmarks(
        BHARATBBQ, data_dir=data_dir, manifest=manifest, options={"size": CHOICE_SIZE}
    )
    questions = [dataclasses.asdict(it) for b in choice for it in b.items]
    (out / "choice.json").write_text(json.dumps(questions, ensure_ascii=False))
    snapshot = load_snapshots()["smollm2-135m-instruct-q4"]
    folder = model_folder(snapshot, cache_dir=paths.cache_root()).folder
    tok = out / "tokenizer"
    tok.mkdir(exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / name, tok / name)
    print(
        f"wrote {len(items)} pair items, {len(questions)} choice questions and the "
        f"tokenizer to {out}"
    )
    return 0


def load_items(path: Path):
    from monitor.benchmarks.items import Item
    from monitor.families.pairs.records import PairItem

    tuples = ("targets_stereo", "targets_anti", "errata")
    return [
        (PairItem if "text_stereo" in d else Item)(
            **{k: tuple(v) if k in tuples else v for k, v in d.items()}
        )
        for d in json.loads(path.read_text())
    ]


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bf16_peak(device: str, n: int) -> float:
    """Best TFLOP/s of a plain (n x n) @ (n x n) in the model's dtype on ``device``."""
    import torch

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(10):
        sync(device)
        t = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e12


def build_model(shape: str, vocab: int, tokenizer, device: str, dtype):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab,
        max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        **SHAPES[shape],
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(old)
    return model.eval()


def lm_eval_positions(counts: list[int], batch_size: int) -> int:
    """Positions lm-eval feeds: its requests sorted longest first (its ``Collator``),
    cut into groups of ``batch_size``, each padded to its longest."""
    counts = sorted(counts, reverse=True)
    return sum(
        len(g) * g[0]
        for g in (counts[i : i + batch_size] for i in range(0, len(counts), batch_size))
    )


def run(args) -> int:
    import torch
    from transformers import AutoTokenizer

    device = args.device
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    items = load_items(args.data / "items.json")[: args.limit]
    tok = AutoTokenizer.from_pretrained(args.data / "tokenizer")
    t = time.perf_counter()
    model = build_model(args.shape, len(tok), tok, device, dtype)
    sync(device)
    params = sum(p.numel() for p in model.parameters())
    # FLOP per position fed: every weight matrix once (2 per multiply-add); the input
    # embedding is a lookup, not a product, so it is left out.
    flop_per_position = 2 * (params - model.get_input_embeddings().weight.numel())
    name = torch.cuda.get_device_name() if device.startswith("cuda") else "CPU"
    print(
        f"{name}; torch {torch.__version__}; model {args.shape}: {params / 1e9:.2f}B "
        f"parameters, {dtype}, built in {time.perf_counter() - t:.1f} s; {len(items)} items, "
        f"{2 * len(items)} sentences; {args.rounds} timed rounds after one untimed",
        flush=True,
    )
    peak = bf16_peak(device, 8192 if device.startswith("cuda") else 512)
    print(f"matmul peak ({dtype}, square): {peak:.1f} TFLOP/s", flush=True)
    from monitor.backends.hf_causal import pass_sizes
    from monitor.scoring.score import requests_per_call

    for config in args.configs:
        if config == "auto":  # what the loader gives a model on this device
            batch, tokens, calls = pass_sizes(device, len(tok), dtype.itemsize)
        else:
            b, _, t = config.partition(":")
            batch, tokens, calls = int(b), int(t) if t else None, None
        bench = Setting(args, model, tok, batch, tokens, calls)
        print(
            f"\n== batch {bench.batch} (monitor and lm-eval), monitor tree passes of up to "
            f"{bench.mon.scoring_options()['max_batch_tokens']} positions, calls of "
            f"{requests_per_call(bench.mon)} requests ==",
            flush=True,
        )
        bench.cll_round(items, peak, flop_per_position)
        bench.choice_round(peak, flop_per_position)
        if device.startswith("cuda"):
            print(f"peak GPU memory: {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")
            torch.cuda.reset_peak_memory_stats()
    return 0


class Setting:
    """Both sides at one batch size (and the monitor at one tree-pass size)."""

    def __init__(self, args, model, tok, batch: int, tokens: int | None, calls: int | None) -> None:
        from lm_eval.models.huggingface import HFLM

        from monitor.backends.hf_causal import HFCausalLM

        self.args, self.batch, self.device = args, batch, args.device
        dt = str(next(model.parameters()).dtype).removeprefix("torch.")
        # ``calls``: requests per score_items call as the loader sets them (``auto``).
        common = dict(
            name="random", device=self.device, dtype=dt, batch_size=batch, requests_per_call=calls
        )
        self.mon = HFCausalLM(model, tok, max_batch_tokens=tokens, **common)
        self.pad = HFCausalLM(model, tok, prefix_sharing=False, **common)
        self.lm = HFLM(pretrained=model, tokenizer=tok, batch_size=batch)
        self.tok = tok

    def timed(self, fn):
        sync(self.device)
        t = time.perf_counter()
        out = fn()
        sync(self.device)
        return time.perf_counter() - t, out

    def profile(self, label: str, fn) -> None:
        """One untimed run under ``torch.profiler``: the share of its wall time the device
        spent in matrix products, and the kernels and host calls that took the most."""
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if self.device.startswith("cuda"):
            activities.append(ProfilerActivity.CUDA)
        with profile(activities=activities) as prof:
            wall, _ = self.timed(fn)
        from torch.autograd import DeviceType

        events = prof.key_averages()
        # Kernels only: an operator's device time is its kernels', counted once.
        on_device = [e for e in events if e.device_type == DeviceType.CUDA]
        gemm = sum(
            e.self_device_time_total
            for e in on_device
            if any(k in e.key.lower() for k in ("gemm", "nvjet", "cutlass", "xmma"))
            and not any(k in e.key.lower() for k in ("sdpa", "flash", "attention"))
        )
        busy = sum(e.self_device_time_total for e in on_device)
        print(
            f"profile {label}: wall {wall:.2f} s, device busy {busy / 1e6:.2f} s "
            f"({busy / 1e6 / wall:.0%}), matrix-product kernels {gemm / 1e6:.2f} s "
            f"({gemm / 1e6 / wall:.0%} of wall)"
        )
        top = sorted(on_device, key=lambda e: -e.self_device_time_total)[:8]
        for e in top:
            print(f"  {e.self_device_time_total / 1e3:9.1f} ms {e.count:6d}x  {e.key[:90]}")
        host = sorted(events, key=lambda e: -e.self_cpu_time_total)[:8]
        for e in host:
            print(f"  host {e.self_cpu_time_total / 1e3:9.1f} ms {e.count:6d}x  {e.key[:85]}")

    def cll_round(self, items, peak: float, flop_per_position: int) -> None:
        """Indian-BhED's four axes: cll, lm-eval rolling, padded, panel."""
        from lm_eval.api.instance import Instance

        from monitor.families.pairs.panel_planner import make_panel_planner
        from monitor.families.pairs.planners import make_planner
        from monitor.families.pairs.scoring import score_items

        mon_b, pad_b, lm, batch = self.mon, self.pad, self.lm, self.batch
        texts = [s for it in items for s in (it.text_stereo, it.text_anti)]
        reqs = [
            Instance(request_type="loglikelihood_rolling", doc={}, arguments=(s,), idx=i)
            for i, s in enumerate(texts)
        ]
        if lm.prefix_token_id != mon_b.bos_token_id:
            print(f"lm-eval conditions on {lm.prefix_token_id}, not BOS {mon_b.bos_token_id}")
        planner = make_planner("cll", mon_b)
        requests = list(dict.fromkeys(r for it in items for r in planner.plan(it).requests))
        useful = {"monitor": sum(len(r) - 1 for r in requests)}
        useful["padded"] = useful["monitor"]
        panel = make_panel_planner("cll", mon_b)
        useful["panel"] = sum(
            len(r) - 1 for r in dict.fromkeys(r for it in items for r in panel.plan(it).requests)
        )
        counts = [len(self.tok(s, add_special_tokens=False)["input_ids"]) for s in texts]
        useful["lm-eval"] = sum(counts)
        executed = {"lm-eval": lm_eval_positions(counts, batch)}

        def monitor_run(backend, panel_on=False, chunk=None):
            before = backend.stats.padded_tokens
            extra = {"chunk_requests": chunk} if chunk else {}
            out = score_items(backend, items, "cll", batch_size=batch, panel=panel_on, **extra)
            return out, backend.stats.padded_tokens - before

        names = ["monitor", "lm-eval", "padded", "panel"]
        chunk = self.args.chunk
        if chunk:  # the monitor with score_items' calls of ``chunk`` requests
            names.append(f"chunk{chunk}")
            useful[names[-1]] = useful["monitor"]
        seconds: dict[str, list[float]] = {k: [] for k in names}
        rows = lm_vals = None
        for r in range(self.args.rounds + 1):  # round 0: untimed warm-up of every contender
            s_m, (rows, executed["monitor"]) = self.timed(lambda: monitor_run(mon_b))
            s_l, lm_vals = self.timed(lambda: lm.loglikelihood_rolling(reqs, disable_tqdm=True))
            s_p, (_, executed["padded"]) = self.timed(lambda: monitor_run(pad_b))
            s_n, (_, executed["panel"]) = self.timed(lambda: monitor_run(mon_b, panel_on=True))
            times = [s_m, s_l, s_p, s_n]
            if chunk:
                s_c, (_, executed[names[-1]]) = self.timed(lambda: monitor_run(mon_b, chunk=chunk))
                times.append(s_c)
            if r == 0:
                continue
            for k, v in zip(seconds, times, strict=True):
                seconds[k].append(v)
            print(
                f"round {r}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in seconds.items()),
                flush=True,
            )

        print(
            f"\n{'contender':<10} {'median s':>9} {'spread':>7} {'vs lm-eval':>10} "
            f"{'fed':>8} {'useful':>8} {'%peak fed':>9} {'%peak use':>9}"
        )
        base = statistics.median(seconds["lm-eval"])
        for k, v in seconds.items():
            med = statistics.median(v)
            spread = (max(v) - min(v)) / med
            fed = executed[k] * flop_per_position / med / 1e12 / peak
            use = useful[k] * flop_per_position / med / 1e12 / peak
            print(
                f"{k:<10} {med:>9.2f} {spread:>7.1%} {base / med:>9.2f}x {executed[k]:>8} "
                f"{useful[k]:>8} {fed:>9.1%} {use:>9.1%}"
            )
        print(f"rounds: {json.dumps({k: [round(x, 3) for x in v] for k, v in seconds.items()})}")
        if self.args.profile:
            self.profile("monitor", lambda: monitor_run(mon_b))
            self.profile("lm-eval", lambda: lm.loglikelihood_rolling(reqs, disable_tqdm=True))
        ours = [v for row in rows for v in (row.lp_stereo, row.lp_anti)]
        gaps = sorted(abs(a - b) for a, b in zip(ours, lm_vals, strict=True))
        rel = sorted(abs(a - b) / abs(b) for a, b in zip(ours, lm_vals, strict=True) if b)
        signs = sum(
            (a1 - a2 > 0) == (b1 - b2 > 0)
            for (a1, a2), (b1, b2) in zip(
                zip(ours[::2], ours[1::2], strict=True),
                zip(lm_vals[::2], lm_vals[1::2], strict=True),
                strict=True,
            )
        )
        print(
            f"per-sentence log-prob, monitor vs lm-eval: median |diff| "
            f"{gaps[len(gaps) // 2]:.3g} nats, max {gaps[-1]:.3g}, max relative {rel[-1]:.2%}; "
            f"stereo-minus-anti sign agrees on {signs} of {len(items)} items"
        )

    def choice_round(self, peak: float, flop_per_position: int) -> None:
        """BharatBBQ mini: ``mc-loglik`` (what ``run`` calls) against lm-eval's multiple-choice
        ``loglikelihood`` on the same prompts and continuations (``bench_bbq.py``'s setup)."""
        from lm_eval.api.instance import Instance

        from monitor.families.choice_qa.loglik import continuations, prompt_text
        from monitor.families.choice_qa.scoring import score_local

        items = load_items(self.args.data / "choice.json")[: self.args.limit]
        bos_text = self.mon.tokenizer.convert_ids_to_tokens(self.mon.bos_token_id)
        pairs = [
            (bos_text + prompt_text(it.payload), c)
            for it in items
            for c in continuations(it.payload)
        ]
        reqs = [
            Instance(request_type="loglikelihood", doc={}, arguments=p, idx=i)
            for i, p in enumerate(pairs)
        ]
        lengths = [
            len(self.mon.tokenizer(c + x, add_special_tokens=False)["input_ids"]) for c, x in pairs
        ]
        mon, lme, fed = [], [], 0
        rows = values = None
        for r in range(self.args.rounds + 1):
            before = self.mon.stats.padded_tokens
            s, rows = self.timed(
                lambda: score_local(self.mon, items, "mc-loglik", batch_size=self.batch)
            )
            fed = self.mon.stats.padded_tokens - before
            t, values = self.timed(
                lambda: [ll for ll, _ in self.lm.loglikelihood(reqs, disable_tqdm=True)]
            )
            if r == 0:  # untimed warm-up
                continue
            mon.append(s)
            lme.append(t)
            print(f"choice round {r}: monitor {s:.2f} s, lm-eval {t:.2f} s", flush=True)
        m, e = statistics.median(mon), statistics.median(lme)
        ours = [v for row in rows for v in row.details["ll"]]
        gaps = sorted(abs(a - b) for a, b in zip(ours, values, strict=True))
        same = sum(
            row.details["choice"] == max(range(3), key=values[3 * k : 3 * k + 3].__getitem__)
            for k, row in enumerate(rows)
        )
        print(
            f"\nBharatBBQ {CHOICE_SIZE} ({len(items)} questions, 13 categories): monitor "
            f"{m:.2f} s (spread {(max(mon) - min(mon)) / m:.1%}), lm-eval {e:.2f} s (spread "
            f"{(max(lme) - min(lme)) / e:.1%}): {e / m:.2f}x; monitor fed {fed} positions "
            f"({fed * flop_per_position / m / 1e12 / peak:.1%} of peak), lm-eval's requests "
            f"{sum(lengths)} tokens"
        )
        print(
            f"per-option log-likelihood, monitor vs lm-eval: median |diff| "
            f"{gaps[len(gaps) // 2]:.3g} nats, max {gaps[-1]:.3g}; same choice on {same} of "
            f"{len(items)} questions"
        )
        print(
            f"full English BharatBBQ ({FULL_BHARATBBQ:,} questions) at this rate: monitor "
            f"{m / len(items) * FULL_BHARATBBQ / 60:.1f} min, lm-eval "
            f"{e / len(items) * FULL_BHARATBBQ / 60:.1f} min"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="write items and tokenizer for the GPU machine")
    e.add_argument("--out", type=Path, default=REPO / ".gpu")
    r = sub.add_parser("run", help="the timed comparison (on the GPU machine)")
    r.add_argument("--data", type=Path, default=REPO / ".gpu")
    r.add_argument("--shape", choices=sorted(SHAPES), default="7b")
    r.add_argument("--device", default="cuda")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument(
        "--configs",
        nargs="+",
        default=["auto", "32"],
        help="BATCH[:TREE_TOKENS] settings, each a full comparison (tree default: 512); "
        "'auto': the loader's sizes for the device (monitor.backends.hf_causal.pass_sizes)",
    )
    r.add_argument("--profile", action="store_true", help="profile one run of each side")
    r.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="add a contender: the monitor with score_items' backend calls of CHUNK requests",
    )
    r.add_argument("--limit", type=int, default=None, help="items (all by default)")
    args = parser.parse_args()
    if args.cmd == "export":
        return export(args.out)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
