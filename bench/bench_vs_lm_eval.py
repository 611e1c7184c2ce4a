"""The monitor's CLL scoring against lm-evaluation-harness, side by side in one run.

Contenders, on the same model (SmolLM2-135M-Instruct: the converted fp32 safetensors
folder the monitor itself loads), the same sentences (both sentences of every item of
the four Indian-BhED axes), the same thread count, CPU, fp32:

* **monitor**: ``score_items(..., "cll", batch_size=16, panel=False)``: the sentences
  *and* every target-word prior, as the snapshot loader gives it (prefix sharing on, the
  float32 model's attention core in float64, ``monitor.backends.wide_attention``).
  ``panel=False`` is ``run --no-panel``: CLL alone. (This benchmark left the then
  three-metric panel on until 2026-11-24; that day it gave 0.79× lm-eval with the panel,
  1.71× without);
* **lm-eval**: lm-evaluation-harness (pinned below, in its own virtualenv under
  ``$MONITOR_CACHE_DIR/bench``, created on first use) ``HFLM.loglikelihood_rolling`` at
  batch size 16 over the sentences alone, kept loaded in a worker process
  (``lm_eval_worker.py``) so neither side pays a process start or a model load;
* **unshared**: the monitor with ``prefix_sharing=False`` (padded, length-sorted
  batches; the same attention core), the reference for "0 outcome flips" and "same
  bits";
* **float32 core**: the monitor with prefix sharing but ``wide_attention=False`` (on its
  own copy of the model, attention ``sdpa``): what the float64 core costs, and how far a
  float32 core puts the tree from the padded path (up to 7.9e-4 nats on 2026-11-24).

* **MKL linears**: the monitor with every linear layer back on ``F.linear`` (torch's
  default, MKL's sgemm), on its own copy of the model: what oneDNN's kernel, the
  float64 first layers and first rows (``monitor.backends.onednn_linear``, since
  2026-11-28) change in time and in values.

They run interleaved, round by round, so that a change in the machine's load hits all of
them: the default run, the monitor and lm-eval next to each other (reversed every other
round, so each of the two ratios to the monitor is read from adjacent runs and a trend in
the load favours neither side), then unshared, float32 core and MKL linears; the script
prints the load average before every round and the medians. Checks, printed with the
times: each sentence's log-prob from the monitor equals lm-eval's within 1e-4 nats; the
monitor's per-item values equal the unshared path's within 1e-4 nats with no outcome
flip (and how many have the same bits); reruns are bit-identical.

FLOP formula: a token fed to the model and projected onto the vocabulary costs
2 x P FLOP, P = the model's parameter count (134.5M; the tied embedding counted once, as
the LM head's weight); attention's own score/value products (< 3% here) are left out.
"executed" counts the positions each contender really fed (padding included; for the
monitor, prefix-tree nodes), "useful" the positions the task needs without sharing or
padding (one per scored token). The peak is a plain fp32 ``torch.mm`` on the same
threads, once square and once shaped like the model's MLP at the monitor's batch width,
and oneDNN's linear kernel at that shape (2.2x MKL's on this project's AMD CPUs); the
share of peak printed is the monitor's rate on the positions fed against the higher.

What paid and what did not (measured on the 2-core development machine, see the
report in the branch's history for the numbers):

* paid for exactness, cost 3% of the monitor's time (2026-11-24; 9% and 17% in two
  earlier single rounds): the float64 attention core (tree and padded path within
  4.8e-5 nats, mostly the same bits, instead of up to 7.9e-4 nats apart);
* paid: prefix trees (one row per forward pass, tree attention mask): 28% fewer
  positions fed than the padded path; feeding only nodes with a child (a sequence's last
  token is a target, never an input): a further 13%; logits only at fed positions, so no
  projection at padding.

Round-to-round drift (issue 28), measured 2026-11-26 on the shared 2-core machine (load
average 10-15, other work running): five rounds of the default path in one process
(120 items) took 118, 109, 122, 119 and 116 s of CPU time with the resident set flat at
1,022-1,028 MB and every round's values the same bits, while wall time went 475, 449,
635, 615 and 744 s with the load average. Nothing on the default path grows from round
to round; its wall-clock drift is the machine's. Weights cloned out of the safetensors
file mapping into process memory were not faster (4.82 s against 4.57 s CPU, medians of
4 alternating runs, 1 thread) and change the last bits of some log-probs (the matrix
kernels' path depends on the weights' alignment), so the loader keeps the mapping.

The float64 attention core against the float32 core, same day, 1 thread, CPU time of
the same 100 items' CLL requests, two alternating runs: 13.39 / 14.36 s against 12.65 /
13.54 s, 5.9% and 6.1%. One profiled run (wide core): matrix products 79% of the time,
the attention kernel 9%, conversions (``copy_``) 1.5%, the normaliser's ``exp``/``amax``/
``sub`` 1.7%: the passes are matmul-bound, and the gap to the matmul peak is the shape of
the passes (106 fed positions per pass on average: chunks of 128 requests cut into
passes of 16 sequences, and the target-word priors are 3-5 tokens long).

The panel against cll alone, same day, 1 thread, 40 items, two alternating runs: 9.77 /
10.34 s against 5.38 / 4.89 s of CPU time (1.95x) for 1,177 against 574 positions fed
(2.05x; 26,079 against 12,892 on the four full axes). The cost per position is the same;
what the panel adds is cll-reference's no-BOS sentences and word priors, which share no
prefix with cll's BOS sequences, so sharing tokenisation, trees or batches cannot bring it
under 1.5x: only feeding fewer positions could. Issue 43 did that: cll-reference left the
default panel (``run --metrics cll-reference`` asks for it), and the default run, cll +
ull, feeds exactly cll's positions (2026-11-28: 1.00x the positions, 0.93-1.03x the CPU
time, 0.83-1.08x wall clock at load 8-19; docs/performance.md). No fixed cost per run:
in a fresh process the first default run costs what the first cll-alone run does, and
the panel's own code (planning both metrics, finishing ull) took 0.15 s of a profiled
98 s ``run -b bhed-caste``; a one-round reading of 12.78x on 16 items was the busy
machine (see busy_caution).

* **default run**: the monitor as ``make run`` scores, ``panel=True``: cll and ull in one
  pass (issue 43). ull reads cll's two sentences, so the run asks for exactly cll's
  requests and reads ull off the same log-probs; the bar is at most 1.15x cll alone,
  printed as the ratio of the two contenders' medians, measured next to each other in
  every round, with a caution when the machine is busier than its CPUs. Until 2026-11-28
  the default panel also held cll-reference, whose no-BOS sentences and word priors share
  no prefix with cll's BOS sequences: 2.02x the positions fed, 2.0-2.2x the time.
* **full panel** (untimed rounds; one run after them): ``run --metrics cll-reference``,
  cll + cll-reference + ull, for the agreement checks: its cll-reference agrees with
  cll-reference scored alone, its cll with cll alone, within 1e-4 nats and no outcome
  flip; and the default run's cll values are cll alone's bits, its ull deltas exactly
  cll's two sentence log-probs subtracted.

Each round's times are printed as they come, and at the end every contender's rounds,
median and spread ((slowest - fastest) / median), so a contender that drifts from round
to round shows. The share of wall time spent in matrix products is measured on one extra,
untimed, profiled run of the monitor (``torch.profiler``: the self time of ``aten::mm``,
``addmm``, ``bmm`` and ``baddbmm`` over the run's wall time; a fused attention kernel,
if torch picks one, counts as outside).

    .venv/bin/python bench/bench_vs_lm_eval.py [--rounds 5] [--limit N] [--batch-size 16]
        [--panel-only]

``--panel-only`` times only cll alone against the default run (alternating which goes
first) and runs the panel's agreement checks: no lm-eval virtualenv, a fraction of the
time, for a machine too busy for the whole bench.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import fcntl
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from monitor import paths  # noqa: E402
from monitor.backends.hf_causal import HFCausalLM  # noqa: E402
from monitor.backends.loading import model_folder  # noqa: E402
from monitor.backends.onednn_linear import Float64Linear, OneDnnLinear  # noqa: E402
from monitor.benchmarks.items import Item  # noqa: E402
from monitor.families.pairs.panel_planner import make_panel_planner  # noqa: E402
from monitor.families.pairs.planners import make_planner  # noqa: E402
from monitor.families.pairs.scoring import score_items  # noqa: E402
from monitor.kinds import load_backend  # noqa: E402
from monitor.records import ScoreRow  # noqa: E402
from monitor.snapshots.registry import load_snapshots  # noqa: E402

BENCHMARKS = ["bhed-caste", "bhed-religion", "bhed-gender", "bhed-race"]
SNAPSHOT = "smollm2-135m-instruct-q4"
LM_EVAL_PIN = "lm-eval[hf]==0.4.13"
TORCH_PIN = "torch==2.13.0"  # the CPU wheel on disk; a looser pin pulls CUDA wheels
TOLERANCE = 1e-4
FIELDS = ("lp_stereo", "lp_anti", "prior_stereo", "prior_anti")


def load_items(datasets: Path, limit: int | None) -> list[Item]:
    """Items of the four Indian-BhED axes through the project's own loader."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    data_dir = Path(tempfile.mkdtemp(prefix="bench-data-"))
    manifest = load_manifest()
    fetch(manifest, BENCHMARKS, from_dir=datasets, data_dir=data_dir)
    benches = load_benchmarks(BENCHMARKS, data_dir=data_dir, manifest=manifest)
    return [it for b in benches for it in b.items[:limit]]


# --- lm-eval in its own virtualenv --------------------------------------------------------


def lm_eval_python(cache: Path) -> Path:
    """The python of a virtualenv holding lm-eval (pinned), created once per pin set.

    transformers, tokenizers and accelerate are pinned to the monitor's own versions so
    both sides run the same model code; torch is the same CPU wheel.
    """
    import accelerate
    import tokenizers
    import transformers

    pins = [
        TORCH_PIN,
        LM_EVAL_PIN,
        f"transformers=={transformers.__version__}",
        f"tokenizers=={tokenizers.__version__}",
        f"accelerate=={accelerate.__version__}",
    ]
    root = cache / "bench"
    root.mkdir(parents=True, exist_ok=True)
    venv = root / f"lm-eval-0.4.13-py{sys.version_info.major}{sys.version_info.minor}"
    python = venv / "bin" / "python"
    marker = venv / ".bench-installed"
    with open(root / "lm-eval.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two benchmarks sharing a cache build it once
        if marker.is_file() and marker.read_text() == json.dumps(pins):
            return python
        print(f"creating lm-eval virtualenv in {venv} (once; a few minutes)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        with open(root / "lm-eval-install.log", "w") as log:
            # torch first and exactly pinned, so lm-eval's "torch>=1.8" is then satisfied.
            for step in ([TORCH_PIN], pins[1:]):
                done = subprocess.run([*pip, *step], stdout=log, stderr=subprocess.STDOUT)
                if done.returncode != 0:
                    sys.exit(f"pip install {' '.join(step)} failed; see {log.name}")
        marker.write_text(json.dumps(pins))
    return python


class LmEvalWorker:
    """lm-eval's HFLM loaded once in its own process; ``run`` times one rolling pass."""

    def __init__(
        self,
        python: Path,
        folder: Path,
        texts: list[str],
        batch_size: int,
        pairs: list[tuple[str, str]] | None = None,
    ) -> None:
        # Benchmark sentences go through private temporary files (mode 0600), never argv.
        self._files: list[Path] = []
        inputs = {"texts": texts, "pairs": pairs or []}
        args = []
        for key, value in inputs.items():
            fd, name = tempfile.mkstemp(prefix=f"bench-{key}-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(value, fh)
            self._files.append(Path(name))
            args.append(f"--{key}={name}")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the worker)
        self.proc = subprocess.Popen(
            [
                str(python),
                str(Path(__file__).with_name("lm_eval_worker.py")),
                f"--pretrained={folder}",
                *args,
                f"--batch-size={batch_size}",
                f"--threads={torch.get_num_threads()}",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        self.info = self._reply()

    def _reply(self) -> dict:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            self._log.seek(0)
            tail = self._log.read().decode(errors="replace").strip().splitlines()[-5:]
            raise RuntimeError("lm-eval worker stopped:\n" + "\n".join(tail))
        return json.loads(line)

    def run(self, limit: int | None = None) -> tuple[float, float, list[float]]:
        """(wall seconds, CPU seconds, log-prob per text) of one rolling pass."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": "run", "limit": limit}) + "\n")
        self.proc.stdin.flush()
        reply = self._reply()
        return reply["seconds"], reply["cpu_seconds"], reply["logprobs"]

    def loglik(self, limit: int | None = None) -> tuple[float, float, list[float]]:
        """(wall seconds, CPU seconds, log-likelihood per pair) of one ``loglikelihood``
        pass over the first ``limit`` (context, continuation) pairs given (all: None)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"cmd": "loglik", "limit": limit}) + "\n")
        self.proc.stdin.flush()
        reply = self._reply()
        return reply["seconds"], reply["cpu_seconds"], reply["logprobs"]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()
        for f in self._files:
            f.unlink(missing_ok=True)


# --- measuring ------------------------------------------------------------------------


def matmul_peak(m: int, k: int, n: int, seconds: float = 2.0, onednn: bool = False) -> float:
    """Best GFLOP/s of a plain fp32 (m x k) @ (k x n) on the current thread count:
    ``torch.mm`` (MKL), or with ``onednn`` oneDNN's linear kernel in one piece."""
    a, b = torch.randn(m, k), torch.randn(k, n)
    out = torch.empty(m, n)
    weight = b.t().contiguous()

    def once() -> None:
        if onednn:
            torch.ops.mkldnn._linear_pointwise(a, weight, None, "none", [], "")
        else:
            torch.mm(a, b, out=out)

    once()
    best, end = float("inf"), time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        for _ in range(5):
            once()
        best = min(best, (time.perf_counter() - t) / 5)
    return 2 * m * k * n / best / 1e9


def on_aten_linears(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of a routed model whose linear layers all run on ``F.linear`` again (MKL):
    the monitor before oneDNN, for the bench's row."""
    plain = copy.deepcopy(model)
    for module in plain.modules():
        if isinstance(module, (OneDnnLinear, Float64Linear)):
            module.__class__ = torch.nn.Linear
            module.__dict__.pop("_float64", None)
            module.__dict__.pop("_parts", None)
    return plain


def lm_eval_positions(token_counts: list[int], batch_size: int) -> int:
    """Positions lm-eval feeds and projects: ``loglikelihood_rolling`` cuts the requests,
    in the order given, into groups of ``batch_size`` and pads each group to its longest
    input (BOS + all tokens but the last: as many positions as the text has tokens)."""
    return sum(
        len(group) * max(group)
        for group in (
            token_counts[i : i + batch_size] for i in range(0, len(token_counts), batch_size)
        )
    )


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def busy_caution() -> str:
    """A line saying the wall-clock ratios are not to be trusted, when the machine is busier
    than its CPUs (the 15-minute load average at least the CPU count); else "".

    On a busy machine torch's threads wait for each other in every parallel region, so one
    run can take many times its quiet time: a one-round, 16-item bench on 2 threads, run
    beside other tests (2026-11-28), read the default run at 12.78x cll alone (7.0 s
    against 0.5 s for the same 245 positions; 0.99x on a quiet machine), and at load 10
    8 items took 26-42 s of wall clock and 7-10 s of CPU time for what takes about 0.3 s
    quiet. On one thread the CPU time stays put (at load 17-19 the default run's within
    0.2 s of cll alone's in every round)."""
    load, cpus = os.getloadavg()[2], os.cpu_count() or 1
    if load < cpus:
        return ""
    advice = (
        "read the CPU-time ratio and the rounds"
        if torch.get_num_threads() == 1
        else "rerun with --threads 1 and read the CPU-time ratio"
    )
    return (
        f"  caution: the machine was busy (15-minute load average {load:.1f} on {cpus} CPUs): "
        f"wall-clock ratios swing from round to round; {advice}"
    )


@dataclass
class Contender:
    name: str
    seconds: list[float] = field(default_factory=list)  # wall clock per round
    cpu: list[float] = field(default_factory=list)  # CPU time of all threads per round
    executed: int = 0  # positions fed and projected per run
    useful: int = 0  # positions the task needs, without sharing or padding


def timed_monitor(
    backend: HFCausalLM, items: list[Item], batch_size: int, c: Contender, panel: bool = False
):
    """One timed CLL run (with the metric panel when ``panel``) into ``c``; returns its rows."""
    before = backend.stats.padded_tokens
    t, cpu = time.perf_counter(), time.process_time()
    rows = score_items(backend, items, "cll", batch_size=batch_size, panel=panel)
    c.seconds.append(time.perf_counter() - t)
    c.cpu.append(time.process_time() - cpu)
    c.executed = backend.stats.padded_tokens - before
    return rows


@dataclass
class Agreement:
    """How two runs' per-item rows agree, over the log-prob sums both have."""

    worst: float = 0.0  # max |diff| of a log-prob sum
    worst_delta: float = 0.0  # max |diff| of an item's delta
    over: int = 0  # sums more than TOLERANCE apart
    equal: int = 0  # sums with the same bits
    compared: int = 0
    flips: int = 0  # items whose outcome differs


def compare_rows(a: list[ScoreRow], b: list[ScoreRow]) -> Agreement:
    out = Agreement()
    for x, y in zip(a, b, strict=True):
        assert x.item_id == y.item_id
        for f in FIELDS:
            u, v = getattr(x, f), getattr(y, f)
            if u is not None and v is not None:
                out.worst = max(out.worst, abs(u - v))
                out.over += abs(u - v) > TOLERANCE
                out.equal += u == v
                out.compared += 1
        if x.delta is not None and y.delta is not None:
            out.worst_delta = max(out.worst_delta, abs(x.delta - y.delta))
        out.flips += x.outcome != y.outcome
    return out


def same_bits(a: list[ScoreRow], b: list[ScoreRow]) -> bool:
    return all(
        (x.item_id, x.delta, *(getattr(x, f) for f in FIELDS))
        == (y.item_id, y.delta, *(getattr(y, f) for f in FIELDS))
        for x, y in zip(a, b, strict=True)
    )


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per contender")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--limit", type=int, default=None, help="items per benchmark")
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads for both (default: torch's)"
    )
    parser.add_argument(
        "--datasets",
        type=Path,
        default=Path(os.environ.get("MONITOR_TEST_DATASETS", REPO.parent / "shared" / "datasets")),
    )
    parser.add_argument(
        "--panel-only",
        action="store_true",
        help="only the default run against cll alone (interleaved rounds) and the panel's "
        "agreement checks: no lm-eval, no diagnostic contenders",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    print(f"load average at start (1/5/15 min): {load_average()}", flush=True)
    cache = paths.cache_root()
    if args.panel_only:
        snapshot = load_snapshots()[SNAPSHOT]
        backend = load_backend(
            snapshot, device="cpu", dtype="float32", cache_dir=cache, prefix_sharing=True
        )
        return measure_panel(args, backend, load_items(args.datasets, args.limit))
    python = lm_eval_python(cache)
    snapshot = load_snapshots()[SNAPSHOT]
    folder = model_folder(snapshot, cache_dir=cache).folder
    backend = load_backend(
        snapshot, device="cpu", dtype="float32", cache_dir=cache, prefix_sharing=True
    )
    unshared = HFCausalLM(backend.model, backend.tokenizer, name=backend.name, prefix_sharing=False)
    narrow_model = copy.deepcopy(backend.model)
    narrow_model.set_attn_implementation("sdpa")
    narrow = HFCausalLM(narrow_model, backend.tokenizer, name=backend.name, wide_attention=False)
    aten = HFCausalLM(
        on_aten_linears(backend.model), backend.tokenizer, name=backend.name, onednn_linears=False
    )
    items = load_items(args.datasets, args.limit)
    texts = [t for it in items for t in (it.text_stereo, it.text_anti)]
    worker = LmEvalWorker(python, folder, texts, args.batch_size)
    try:
        return measure(args, backend, unshared, narrow, aten, items, worker)
    finally:
        worker.close()


def measure(
    args,
    backend: HFCausalLM,
    unshared: HFCausalLM,
    narrow: HFCausalLM,
    aten: HFCausalLM,
    items,
    worker,
) -> int:
    threads = torch.get_num_threads()
    params = sum(p.numel() for p in backend.model.parameters())
    print(
        f"{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__} on {threads} "
        f"threads (lm-eval worker: torch {worker.info['torch']} on "
        f"{worker.info['threads']} threads)"
    )
    print(
        f"model {backend.name}: {params / 1e6:.1f}M parameters; "
        f"{len(items)} items, {2 * len(items)} sentences"
    )
    if worker.info["prefix_token_id"] != backend.bos_token_id:
        print(f"lm-eval conditions on token {worker.info['prefix_token_id']}, not BOS")
        return 1

    # Useful positions: one per scored token. lm-eval: each sentence's tokens; the
    # monitor: every unique request it answers (sentences and priors), as sent.
    planner = make_planner("cll", backend)
    requests = list(dict.fromkeys(r for it in items for r in planner.plan(it).requests))
    mon = Contender("monitor: cll, sentences + priors, shared prefixes")
    lme = Contender(f"lm-eval: rolling, batch {args.batch_size}, sentences only")
    old = Contender("monitor: same, prefix sharing off (padded)")
    f32 = Contender("monitor: shared prefixes, float32 attention core")
    pan = Contender("default run: cll + ull (the default panel)")
    mkl = Contender("monitor: linears on F.linear (MKL), not oneDNN")
    mon.useful = old.useful = f32.useful = mkl.useful = sum(len(r) - 1 for r in requests)
    panel_planner = make_panel_planner("cll", backend)
    pan.useful = sum(
        len(r) - 1
        for r in dict.fromkeys(r for it in items for r in panel_planner.plan(it).requests)
    )
    lme.useful = sum(worker.info["token_counts"])
    lme.executed = lm_eval_positions(worker.info["token_counts"], args.batch_size)

    warm = items[:16]
    score_items(backend, warm, "cll", batch_size=args.batch_size, panel=False)
    score_items(unshared, warm, "cll", batch_size=args.batch_size, panel=False)
    score_items(narrow, warm, "cll", batch_size=args.batch_size, panel=False)
    score_items(aten, warm, "cll", batch_size=args.batch_size, panel=False)
    score_items(backend, warm, "cll", batch_size=args.batch_size, panel=True)
    worker.run(limit=2 * len(warm))

    peak_square = matmul_peak(2048, 2048, 2048)
    peak_model = matmul_peak(256, 576, 1536)
    peak_onednn = matmul_peak(256, 576, 1536, onednn=True)

    runs: dict[str, list[list[ScoreRow]]] = {
        "monitor": [],
        "unshared": [],
        "float32": [],
        "aten": [],
        "default": [],
    }
    lm_values: list[list[float]] = []

    def default_run() -> None:
        runs["default"].append(timed_monitor(backend, items, args.batch_size, pan, panel=True))

    def cll_alone() -> None:
        runs["monitor"].append(timed_monitor(backend, items, args.batch_size, mon))

    def lm_eval_run() -> None:
        seconds, cpu, values = worker.run()
        lme.seconds.append(seconds)
        lme.cpu.append(cpu)
        lm_values.append(values)

    # cll alone runs between the other sides of its two ratios (the default run, lm-eval),
    # and which of them goes first alternates: each ratio is read from adjacent runs, and a
    # trend in the machine's load favours neither side (until 2026-11-28 the default run
    # came fourth, after the padded and float32-core contenders).
    adjacent = (default_run, cll_alone, lm_eval_run)
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}, load average {load_average()}", flush=True)
        for step in adjacent if r % 2 == 0 else adjacent[::-1]:
            step()
        runs["unshared"].append(timed_monitor(unshared, items, args.batch_size, old))
        runs["float32"].append(timed_monitor(narrow, items, args.batch_size, f32))
        runs["aten"].append(timed_monitor(aten, items, args.batch_size, mkl))
        print(
            f"  monitor {mon.seconds[-1]:.1f} s ({mon.cpu[-1]:.1f} s CPU), lm-eval "
            f"{lme.seconds[-1]:.1f} s ({lme.cpu[-1]:.1f}), unshared {old.seconds[-1]:.1f} s "
            f"({old.cpu[-1]:.1f}), float32 core {f32.seconds[-1]:.1f} s ({f32.cpu[-1]:.1f}), "
            f"default run {pan.seconds[-1]:.1f} s ({pan.cpu[-1]:.1f}), MKL linears "
            f"{mkl.seconds[-1]:.1f} s ({mkl.cpu[-1]:.1f})",
            flush=True,
        )
    print(f"load average at end: {load_average()}")
    share = matmul_share(backend, items, args.batch_size)
    contenders = (mon, lme, old, f32, pan, mkl)
    print_rounds(contenders)

    print(
        f"\nfp32 matmul peak on {threads} threads: torch.mm (MKL) {peak_square:.0f} GFLOP/s "
        f"(2048^3), {peak_model:.0f} GFLOP/s (256x576 @ 576x1536, the model's MLP shape); "
        f"oneDNN {peak_onednn:.0f} GFLOP/s (the MLP shape)"
    )
    flop = 2 * params
    header = (
        f"{'':<52}{'wall s':>8}{'min':>7}{'CPU s':>7}{'positions':>11}{'GFLOP/s':>9}{'useful':>8}"
    )
    print(header + "  (medians over rounds)")
    for c in contenders:
        med = statistics.median(c.seconds)
        print(
            f"{c.name:<52}{med:>8.1f}{min(c.seconds):>7.1f}{statistics.median(c.cpu):>7.1f}"
            f"{c.executed:>11,}{flop * c.executed / med / 1e9:>9.0f}"
            f"{flop * c.useful / med / 1e9:>8.0f}"
        )
    ratio = statistics.median(lme.seconds) / statistics.median(mon.seconds)
    per_round = ", ".join(f"{b / a:.2f}" for a, b in zip(mon.seconds, lme.seconds, strict=True))
    cpu_ratio = statistics.median(lme.cpu) / statistics.median(mon.cpu)
    print(
        f"\nlm-eval / monitor: {ratio:.2f}x wall clock (median; per round {per_round}), "
        f"{cpu_ratio:.2f}x CPU time"
    )
    print(
        f"unshared / monitor: "
        f"{statistics.median(old.seconds) / statistics.median(mon.seconds):.2f}x wall clock, "
        f"{statistics.median(old.cpu) / statistics.median(mon.cpu):.2f}x CPU time"
    )
    print(
        f"float32 core / monitor: "
        f"{statistics.median(f32.seconds) / statistics.median(mon.seconds):.2f}x wall clock "
        f"(below 1: what the float64 attention core costs)"
    )
    panel_ratio = statistics.median(pan.seconds) / statistics.median(mon.seconds)
    panel_rounds = ", ".join(f"{b / a:.2f}" for a, b in zip(mon.seconds, pan.seconds, strict=True))
    print(
        f"default run (cll + ull) / monitor (cll alone): {panel_ratio:.2f}x wall clock "
        f"(median; per round {panel_rounds}), "
        f"{statistics.median(pan.cpu) / statistics.median(mon.cpu):.2f}x CPU time, "
        f"{pan.executed / mon.executed:.2f}x the positions fed; issue 43's bar (<= 1.15x): "
        f"{'met' if panel_ratio <= 1.15 else 'NOT met'}"
    )
    if caution := busy_caution():
        print(caution)
    print(
        f"aten linears (MKL) / monitor: "
        f"{statistics.median(mkl.seconds) / statistics.median(mon.seconds):.2f}x wall clock "
        f"(what oneDNN's kernel saves)"
    )
    peak = max(peak_model, peak_onednn)
    mon_rate = flop * mon.executed / statistics.median(mon.seconds) / 1e9
    print(
        f"matrix products: {share:.0%} of the monitor's wall time (one profiled run; "
        f"the rest is attention masks, softmax, norms, gathers, the normaliser, Python); "
        f"the monitor runs at {mon_rate / peak:.0%} of the machine's fp32 peak at the MLP "
        f"shape ({mon_rate:.0f} of {peak:.0f} GFLOP/s on the positions fed), so the limit "
        f"is {peak / mon_rate:.2f}x away"
    )
    print(
        f"GFLOP/s: positions fed and projected x 2 x {params / 1e6:.1f}M / median seconds; "
        f"'useful' counts the positions the task needs ({mon.useful:,} monitor, "
        f"{lme.useful:,} lm-eval) instead"
    )

    rows = runs["monitor"][0]
    agree = check_against_lm_eval(backend, items, rows, lm_values[0])
    vs = compare_rows(runs["unshared"][0], rows)
    print(
        f"monitor vs unshared path: max |diff| {vs.worst:.2e} nats per log-prob sum "
        f"({vs.over} of {vs.compared} over {TOLERANCE:g}; {vs.equal} of {vs.compared} the "
        f"same bits), {vs.worst_delta:.2e} per item delta; item outcomes that differ: "
        f"{vs.flips}"
    )
    f32vs = compare_rows(runs["unshared"][0], runs["float32"][0])
    print(
        f"float32 core (shared) vs unshared path: max |diff| {f32vs.worst:.2e} nats "
        f"({f32vs.over} over {TOLERANCE:g}; {f32vs.equal} of {f32vs.compared} the same "
        f"bits); outcomes that differ: {f32vs.flips}"
    )
    mklvs = compare_rows(runs["unshared"][0], runs["aten"][0])
    print(
        f"MKL linears vs unshared path: max |diff| {mklvs.worst:.2e} nats "
        f"({mklvs.over} over {TOLERANCE:g}); against the monitor: max |diff| "
        f"{compare_rows(rows, runs['aten'][0]).worst:.2e}; outcomes that differ from the "
        f"monitor's: {compare_rows(rows, runs['aten'][0]).flips}"
    )
    panel_ok = check_panels(backend, items, args.batch_size, rows, runs["default"][0])
    reruns = all(same_bits(rows, later) for later in runs["monitor"][1:])
    lm_reruns = all(v == lm_values[0] for v in lm_values[1:])
    print(
        f"reruns bit-identical: monitor {'yes' if reruns else 'NO'}, "
        f"lm-eval {'yes' if lm_reruns else 'no'}"
    )
    ok = agree and vs.over == 0 and vs.flips == 0 and reruns and panel_ok
    verdict = "met" if ok and ratio >= 1.5 else "NOT met"
    print(
        f"goal (>= 1.5x lm-eval, same log-probs as lm-eval and as the unshared path, "
        f"0 outcome flips): {verdict}"
    )
    worst_round = min(b / a for a, b in zip(mon.seconds, lme.seconds, strict=True))
    steady = max(spread(c.seconds) for c in contenders)
    issue_28 = ok and ratio >= 2.0 and worst_round >= 1.8 and steady <= 0.05
    print(
        f"issue 28's bar (>= 2.0x lm-eval, every round >= 1.8x, spread <= 5% for each "
        f"contender, default run <= 1.5x cll): "
        f"{'met' if issue_28 and panel_ratio <= 1.5 else 'NOT met'}"
        f" (worst round {worst_round:.2f}x, largest spread {steady:.1%}, default run "
        f"{panel_ratio:.2f}x)"
    )
    return 0 if ok else 1


def measure_panel(args, backend: HFCausalLM, items: list[Item]) -> int:
    """``--panel-only``: cll alone and the default run (cll + ull), interleaved round by
    round on one model, then the panel's agreement checks; the same rows and ratio as the
    full bench prints, in a fraction of its time."""
    print(
        f"{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__} on "
        f"{torch.get_num_threads()} threads; {len(items)} items"
    )
    mon = Contender("monitor: cll, sentences + priors, shared prefixes")
    pan = Contender("default run: cll + ull (the default panel)")
    warm = items[:16]
    score_items(backend, warm, "cll", batch_size=args.batch_size, panel=False)
    score_items(backend, warm, "cll", batch_size=args.batch_size, panel=True)
    alone: list[list[ScoreRow]] = []
    default: list[list[ScoreRow]] = []
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}, load average {load_average()}", flush=True)
        # Which goes first alternates, so a trend in the machine's load favours neither.
        order = [(mon, False, alone), (pan, True, default)]
        for c, panel, out in order if r % 2 == 0 else order[::-1]:
            out.append(timed_monitor(backend, items, args.batch_size, c, panel=panel))
        print(
            f"  cll alone {mon.seconds[-1]:.1f} s ({mon.cpu[-1]:.1f} s CPU), default run "
            f"{pan.seconds[-1]:.1f} s ({pan.cpu[-1]:.1f})",
            flush=True,
        )
    print(f"load average at end: {load_average()}")
    print_rounds((mon, pan))
    ratio = statistics.median(pan.seconds) / statistics.median(mon.seconds)
    per_round = ", ".join(f"{b / a:.2f}" for a, b in zip(mon.seconds, pan.seconds, strict=True))
    cpu_ratio = statistics.median(pan.cpu) / statistics.median(mon.cpu)
    print(
        f"default run (cll + ull) / monitor (cll alone): {ratio:.2f}x wall clock (median; "
        f"per round {per_round}), {cpu_ratio:.2f}x CPU time, "
        f"{pan.executed / mon.executed:.2f}x the positions fed; issue 43's bar (<= 1.15x): "
        f"{'met' if ratio <= 1.15 else 'NOT met'}"
    )
    if caution := busy_caution():
        print(caution)
    ok = check_panels(backend, items, args.batch_size, alone[0], default[0])
    reruns = all(same_bits(alone[0], later) for later in alone[1:] + default)
    same = "yes" if reruns else "NO"
    print(f"reruns bit-identical (cll alone and the default run's cll): {same}")
    return 0 if ok and reruns else 1


def check_panels(
    backend: HFCausalLM,
    items: list[Item],
    batch_size: int,
    alone: list[ScoreRow],
    default: list[ScoreRow],
) -> bool:
    """The metric panel's agreement checks (issue 43), printed.

    The default run (cll + ull) must give cll alone's bits (it asks for the same requests)
    and ull deltas that are exactly its cll rows' sentence log-probs subtracted (the same
    forward passes). The full panel (``run --metrics cll-reference``, one timed run) must
    agree with each of its metrics scored alone: cll with cll alone, cll-reference with
    cll-reference alone, within TOLERANCE and with no outcome flip (its extra requests
    change the chunks, so the last bits may move).
    """
    same = same_bits(alone, default)
    summed = [r for r in default if r.lp_stereo is not None and r.lp_anti is not None]
    ull_exact = sum(r.details["panel"]["ull"]["delta"] == r.lp_stereo - r.lp_anti for r in summed)
    print(
        f"default run (cll + ull) against cll alone: cll values the same bits "
        f"{'yes' if same else 'NO'}; ull deltas equal to the same log-probs subtracted: "
        f"{ull_exact} of {len(summed)}"
    )
    t = time.perf_counter()
    full = score_items(
        backend, items, "cll", batch_size=batch_size, panel_metrics=("cll-reference",)
    )
    seconds = time.perf_counter() - t
    ref_alone = score_items(backend, items, "cll-reference", batch_size=batch_size, panel=False)
    ref = [
        replace(r, metric="cll-reference", outcome=e.get("outcome"), delta=e.get("delta"))
        for r, e in ((r, r.details["panel"]["cll-reference"]) for r in full)
    ]
    ref_worst = max(
        (abs(a.delta - b.delta) for a, b in zip(ref, ref_alone, strict=True)
         if a.delta is not None and b.delta is not None),
        default=0.0,
    )  # fmt: skip
    ref_flips = sum(a.outcome != b.outcome for a, b in zip(ref, ref_alone, strict=True))
    cll_vs = compare_rows(alone, full)
    print(
        f"full panel (--metrics cll-reference, one run, {seconds:.1f} s): cll-reference "
        f"against cll-reference alone max |delta diff| {ref_worst:.2e}, outcome flips "
        f"{ref_flips} of {len(ref)}; cll against cll alone max |diff| {cll_vs.worst:.2e} "
        f"({cll_vs.over} over {TOLERANCE:g}), flips {cll_vs.flips}"
    )
    return (
        same
        and ull_exact == len(summed)
        and ref_worst <= TOLERANCE
        and ref_flips == 0
        and cll_vs.over == 0
        and cll_vs.flips == 0
    )


def spread(seconds: list[float]) -> float:
    """(slowest - fastest) / median of a contender's rounds."""
    return (max(seconds) - min(seconds)) / statistics.median(seconds)


def print_rounds(contenders) -> None:
    """Every round of every contender, its median and its spread."""
    rounds = len(contenders[0].seconds)
    print(
        f"\n{'wall s per round':<52}"
        + "".join(f"{r + 1:>7}" for r in range(rounds))
        + f"{'median':>8}{'spread':>8}"
    )
    for c in contenders:
        print(
            f"{c.name:<52}"
            + "".join(f"{x:>7.1f}" for x in c.seconds)
            + f"{statistics.median(c.seconds):>8.1f}{spread(c.seconds):>8.1%}"
        )
    print()


MATMUL_OPS = frozenset(
    {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "mkldnn::_linear_pointwise"}
)


def matmul_share(backend: HFCausalLM, items: list[Item], batch_size: int) -> float:
    """Share of one (untimed) CLL run's wall time spent in matrix products, by
    ``torch.profiler``'s self CPU time of the matrix-product operators."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t = time.perf_counter()
        score_items(backend, items, "cll", batch_size=batch_size, panel=False)
        wall = time.perf_counter() - t
    in_mm = sum(e.self_cpu_time_total for e in prof.key_averages() if e.key in MATMUL_OPS)
    return in_mm / 1e6 / wall


def check_against_lm_eval(
    backend: HFCausalLM, items: list[Item], rows: list[ScoreRow], lm: list[float]
) -> bool:
    """Per sentence, the monitor's log-prob against lm-eval's; where they differ by more
    than TOLERANCE, a float64 copy of the model (padded path) says which one is off.

    lm-eval normalises with a float32 ``log_softmax`` over the 49k vocabulary, whose
    normaliser is ~10x less accurate than a float32 ``logsumexp`` (1e-5 against 1e-6
    nats per token, measured against float64): over a sentence that adds up to a few
    1e-4 nats. The monitor agrees with lm-eval when ``|monitor - lm-eval|`` is within
    TOLERANCE plus lm-eval's own distance from the float64 value.
    """
    import copy

    bos = backend.bos_token_id
    ours = [v for row in rows for v in (row.lp_stereo, row.lp_anti)]
    gaps = [abs(a - b) for a, b in zip(ours, lm, strict=True)]
    far = [k for k, g in enumerate(gaps) if g > TOLERANCE]
    print(
        f"\nper-sentence log-prob, monitor vs lm-eval: max |diff| {max(gaps):.2e} nats, "
        f"{len(far)} of {len(gaps)} over {TOLERANCE:g}"
    )
    if not far:
        return True
    texts = [t for it in items for t in (it.text_stereo, it.text_anti)]
    seqs = [(bos, *backend.encode(texts[k], add_special_tokens=False)) for k in far]
    model64 = copy.deepcopy(backend.model).double()
    exact = HFCausalLM(model64, backend.tokenizer, name="float64", prefix_sharing=False)
    f64 = [float(v.sum()) for v in exact.token_logprobs(seqs)]
    ours_err = [abs(ours[k] - e) for k, e in zip(far, f64, strict=True)]
    lm_err = [abs(lm[k] - e) for k, e in zip(far, f64, strict=True)]
    unexplained = sum(gaps[k] > TOLERANCE + le for k, le in zip(far, lm_err, strict=True))
    closer = sum(o < le for o, le in zip(ours_err, lm_err, strict=True))
    print(
        f"  those {len(far)} against a float64 copy of the model: monitor max |error| "
        f"{max(ours_err):.2e} (mean {statistics.mean(ours_err):.2e}), lm-eval max "
        f"{max(lm_err):.2e} (mean {statistics.mean(lm_err):.2e}); the monitor is the closer "
        f"in {closer}; differences not explained by lm-eval's own error: {unexplained}"
    )
    return unexplained == 0


if __name__ == "__main__":
    raise SystemExit(main())
