"""The lm-evaluation-harness side of ``bench_vs_lm_eval.py``, run in lm-eval's own venv.

It loads the model once with lm-eval's ``HFLM`` and then answers commands on stdin, one
JSON object per line, so that the benchmark can interleave it with the monitor without
timing a process start or a model load:

* ``{"cmd": "run", "limit": N}``: ``loglikelihood_rolling`` over the first N texts (all
  when N is null); replies ``{"seconds": ..., "cpu_seconds": ..., "logprobs": [...]}``
  (wall clock, and CPU time of the process's threads);
* ``{"cmd": "loglik", "limit": N}`` (with ``--pairs``): ``loglikelihood`` over the first
  N (context, continuation) pairs (all when N is null), the requests of lm-eval's
  ``multiple_choice`` tasks; replies ``{"seconds": ..., "cpu_seconds": ...,
  "logprobs": [...]}``;
* ``{"cmd": "quit"}``.

With ``--pairs`` the ready line also holds ``pair_tokens``: per pair, the token ids lm-eval
feeds (its ``_encode_pair``: context tokens, then the continuation's), so the benchmark
can check that both sides score the same sequences.

The texts come from a JSON file the benchmark writes (benchmark sentences: never printed
here). Replies go to stdout; lm-eval's own progress bars go to stderr. Imports nothing
from the monitor: it runs in a different virtualenv.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pretrained", required=True, help="model folder (safetensors)")
    parser.add_argument("--texts", help="JSON list of strings (loglikelihood_rolling)")
    parser.add_argument("--pairs", help="JSON list of [context, continuation] (loglikelihood)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    texts: list[str] = []
    pairs: list[list[str]] = []
    if args.texts:
        with open(args.texts, encoding="utf-8") as fh:
            texts = json.load(fh)
    if args.pairs:
        with open(args.pairs, encoding="utf-8") as fh:
            pairs = json.load(fh)
    t0 = time.perf_counter()
    lm = HFLM(pretrained=args.pretrained, device="cpu", dtype="float32", batch_size=args.batch_size)
    requests = [
        Instance(request_type="loglikelihood_rolling", doc={}, arguments=(t,), idx=i)
        for i, t in enumerate(texts)
    ]
    reply = {
        "ready": True,
        "load_seconds": time.perf_counter() - t0,
        "prefix_token_id": lm.prefix_token_id,
        "max_length": lm.max_length,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "token_counts": [len(lm.tok_encode(t)) for t in texts],
        "pair_tokens": [[*ctx, *cont] for ctx, cont in (lm._encode_pair(*p) for p in pairs)],
    }
    pair_requests = [
        Instance(request_type="loglikelihood", doc={}, arguments=(c, x), idx=i)
        for i, (c, x) in enumerate(pairs)
    ]
    print(json.dumps(reply), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        t, cpu = time.perf_counter(), time.process_time()
        if cmd["cmd"] == "loglik":
            todo = pair_requests[: cmd.get("limit")]
            values = [ll for ll, _greedy in lm.loglikelihood(todo, disable_tqdm=True)]
        else:
            values = lm.loglikelihood_rolling(requests[: cmd.get("limit")], disable_tqdm=True)
        reply = {
            "seconds": time.perf_counter() - t,
            "cpu_seconds": time.process_time() - cpu,
            "logprobs": [float(v) for v in values],
        }
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
