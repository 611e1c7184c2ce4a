"""Per-token log-probabilities from a Hugging Face causal LM, batched and padding-correct.

Why it looks the way it does:

* Identical token sequences are computed once per call (metrics ask for the same target
  word prior many times), and ``stats`` counts what was really computed so that saving
  is measurable.
* Without prefix sharing, sequences are sorted by length before batching, so a batch
  pads little; padding is on the right with an attention mask and explicit position
  ids, which for a causal model leaves every real position's logits exactly what they
  are at batch size 1 (up to float summation order).
* A log-prob is ``logit[target] - logsumexp(logits)`` computed in fp32 per position: the
  full-vocabulary log-softmax tensor is never kept, and bf16/fp16 models still get an
  fp32 normaliser. A float64 model (the reference copy benchmarks and tests compare
  against) keeps float64 throughout, so its values carry no fp32 rounding.
* Shared prefixes are computed once (``prefix_sharing``, on by default, for
  architectures that take a custom mask): the sequences of a forward pass are laid out
  as one prefix tree (``monitor.backends.prefix_tree``) in a single row with a tree
  attention mask, so a pair's common prefix and every sequence's BOS are computed once
  and their keys and values are read by every continuation. The row has no padding and
  holds only nodes with a child: a sequence's last token is a target, never an input.
  Backends or architectures that cannot take such a mask keep the padded path.
* The LM head (SmolLM2: a 49k-wide row per position, about a quarter of a position's
  FLOPs) runs only at the tree rows whose log-probs are read: a caller that reads only
  each sequence's last values says so (``token_logprobs_tail``; a choice question reads
  its options' tokens, not the shared prompt's ~90%), and the model is given those rows
  as ``logits_to_keep``, so its own head runs there, with whatever its forward applies
  after the projection (Granite's ``logits_scaling``, Cohere's ``logit_scale``, Gemma's
  soft-capping); rebuilding the head from the output embeddings would miss those. On
  24 BharatBBQ mini items SmolLM2 projected 208 rows instead of 1,403 and every option's
  log-likelihood had the same bits as with the full head. ``token_logprobs`` reads every
  row, so it runs the full head as before; so does a model whose forward lacks
  ``logits_to_keep``, and the padded path.
* A float32 model's linear layers on a CPU run on oneDNN's kernel, 2.2x MKL's throughput
  on this project's AMD CPUs; those of its first three decoder layers run in float64,
  whose rounding the later layers magnify, the next nine layers' ``o_proj`` and
  ``down_proj`` compute BOS's and the first token's rows in float64, and the LM head
  sums each logit in four parts (``monitor.backends.onednn_linear``; the run records
  the choice). The figures below were measured with MKL's kernel.
* A float32 model's attention core runs in float64 (``monitor.backends.wide_attention``).
  With a float32 core the tree and the padded path differed by rounding, up to 7.9e-4
  nats on a log-prob sum (SmolLM2, cll v3, the four Indian-BhED axes): name tokens right
  after BOS, where SmolLM2's 12th layer lifts the activations at position 1 to ~1e3 and
  magnifies any rounding ~300-fold. With the wide core, given all 1,898 unique
  sequences of those axes in one call, the two paths agreed bit for bit; through
  ``score_plans`` (chunks of 128 requests, so more part-filled passes) 2,810 of 3,084
  log-prob sums had the same bits and the rest were within 4.8e-5 nats (0 over 1e-4,
  0 outcome flips; make bench). What remains is the projections' matrix products
  rounding differently when a pass has few rows, as batch size does: up to 8.2e-4
  nats between batch 1 and 16. In float64 the paths agree to 1e-13 nats; on tiny
  models bit for bit in float32 and to 1e-12 in float64 (tests/test_prefix_sharing.py).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Required, TypedDict, Unpack

import numpy as np
import torch

from monitor.backends.base import DedupedCausalLM, SequenceCounts, UniqueSequences
from monitor.backends.onednn_linear import (
    float64_layers,
    float64_row_layers,
    linear_kernel,
    route_linears,
)
from monitor.backends.prefix_tree import PrefixTree, tree_batches
from monitor.backends.wide_attention import WIDE_SDPA, widen_attention

Progress = Callable[[int], None]
# Reads a launched forward pass's log-probs, per sequence (waiting for the device).
Finish = Callable[[], list[np.ndarray]]

DEFAULT_BATCH_SIZE = 16

# Architectures whose forward pass takes a custom 4D attention mask and explicit position
# ids as given, so a prefix-tree row computes what separate rows would. Each one is
# checked against the padded path in tests/test_prefix_sharing.py; others are padded.
PREFIX_SHARING_MODEL_TYPES = frozenset({"llama", "mistral", "gemma3_text", "gpt2"})
# Attention implementations that add a float mask to the scores (flash-attention kernels
# take no arbitrary mask).
PREFIX_SHARING_ATTENTION = frozenset({"sdpa", "eager", WIDE_SDPA})
# Rows of logits normalised at a time (see ``log_normalisers``): small blocks on a CPU,
# whose caches they fit; on a GPU a block is a kernel launch, so a block there holds as
# many rows as keep its fp32 temporary within GPU_LOGIT_BYTES (5,461 rows of a 49k
# vocabulary, 1,048 of 256k).
NORMALISER_ROWS = 32
# Tree nodes per forward pass when no ``max_batch_tokens`` is set. One row attends over
# all its nodes (masked or not), so attention grows with the square of the row: 7% of a
# pass at 264 nodes (16 Indian-BhED sentences), 13% at 512 on SmolLM2. Long sequences
# thus get fewer per pass; a sequence longer than this gets a pass of its own.
TREE_MAX_TOKENS = 512
# On a GPU, passes that size leave the device idle: with a 7B-shaped bf16 model on an
# H200 (bench/bench_gpu.py, 2026-11-26), passes of at most 32 rows and 512 nodes kept it
# 40% busy (kernel launches are the bottleneck) and ran at 0.90x lm-evaluation-harness
# at the same batch size; 128 rows of up to 8,192 nodes ran at 2.08x (lm-eval at batch
# 128) and 41% of the card's bf16 matmul peak on the positions the task needs. 256 rows
# gained nothing on cll (a call of 128 requests is one pass either way) and 12% on
# choice questions, for 10 GiB more at peak (2026-11-27), so 128 stays. A pass's logits
# (nodes x vocabulary, model dtype) are held at once, so the node budget halves from
# 8,192 until they fit in GPU_LOGIT_BYTES.
GPU_BATCH_SIZE = 128
GPU_TREE_MAX_TOKENS = 8192
GPU_LOGIT_BYTES = 2**30
# Passes per call of ``token_logprobs`` that a GPU is given (``score_plans`` cuts its
# requests into calls of ``PassSizes.requests_per_call``): within a call the host builds
# pass k+1 while the device computes pass k (``HFCausalLM._answer``); one pass per call
# left an H200 idle between calls. Calls of 1,024 requests instead of 128 took the cll
# round of bench/bench_gpu.py from 0.67 s to 0.57 s (2.28x to 2.68x lm-eval, same run,
# interleaved; 2026-11-27).
GPU_PASSES_PER_CALL = 8


class PassSizes(NamedTuple):
    """How a model on one device is fed: ``rows`` sequences and at most ``nodes`` prefix-
    tree nodes per forward pass (None: ``TREE_MAX_TOKENS``), and ``requests_per_call``
    requests per backend call (None: ``score_plans``' default)."""

    rows: int
    nodes: int | None
    requests_per_call: int | None


def pass_sizes(device: str, vocab_size: int, element_bytes: int) -> PassSizes:
    """How a model on ``device`` is fed: the CPU defaults, or on a GPU 128 rows, as many
    nodes (up to 8,192) as keep one pass's logits within ``GPU_LOGIT_BYTES`` (8,192 for a
    49k vocabulary in bf16, 2,048 for 256k), and calls of ``GPU_PASSES_PER_CALL`` passes."""
    if not device.startswith("cuda"):
        return PassSizes(DEFAULT_BATCH_SIZE, None, None)
    fit = GPU_LOGIT_BYTES // max(1, vocab_size * element_bytes)
    nodes = TREE_MAX_TOKENS
    while nodes * 2 <= min(fit, GPU_TREE_MAX_TOKENS):
        nodes *= 2
    return PassSizes(GPU_BATCH_SIZE, nodes, GPU_PASSES_PER_CALL * GPU_BATCH_SIZE)


@dataclass
class BackendStats(SequenceCounts):
    """What a local backend really computed, for tests and benchmarks of the
    dedupe/batching: the shared counts, and what its forward passes cost."""

    padded_tokens: int = 0  # batch rows x batch length, padding included
    forward_passes: int = 0
    logit_rows: int = 0  # positions projected onto the vocabulary


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, max_batch_tokens: int | None = None
) -> list[list[int]]:
    """Indices grouped into batches, longest first, each at most ``batch_size`` rows and
    (when given) at most ``max_batch_tokens`` padded tokens.

    Longest first makes the most memory-hungry batch the first one, so an out-of-memory
    error shows up at once rather than at the end of a long run.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # The first index of a batch is its longest, so it fixes the padded width.
        width = lengths[current[0]] if current else lengths[i]
        too_many = len(current) >= batch_size
        too_wide = max_batch_tokens is not None and (len(current) + 1) * width > max_batch_tokens
        if current and (too_many or too_wide):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class HFOptions(TypedDict, total=False):
    """The keywords every transformers backend takes (``HFBackend``'s), passed through
    by the causal and the masked one."""

    name: Required[str]
    device: str
    dtype: str
    batch_size: int


class HFBackend:
    """What every backend over a loaded transformers model + tokenizer holds.

    The loader decides device and dtype and moves/casts the model; a backend only feeds
    it tensors on ``device`` and records ``dtype`` for provenance.
    """

    weights_files: tuple[str, ...] = ()  # set by the loader (device_facts.weights_facts)

    def __init__(
        self,
        model,
        tokenizer,
        *,
        name: str,
        device: str = "cpu",
        dtype: str = "float32",
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.stats = BackendStats()


class HFCausalLM(HFBackend, DedupedCausalLM):
    """``monitor.backends.base.CausalLM`` over a loaded transformers model + tokenizer."""

    stats: BackendStats

    def __init__(
        self,
        model,
        tokenizer,
        *,
        max_batch_tokens: int | None = None,
        # Requests per call that ``score_plans`` gives this backend (None: its default);
        # the loader sets it from ``pass_sizes``.
        requests_per_call: int | None = None,
        # On where the architecture takes a tree mask: with the float64 attention core
        # (float32 models) the tree path gives the padded path's values, mostly to the
        # bit and otherwise within 4.8e-5 nats on SmolLM2 (module docstring).
        prefix_sharing: bool = True,
        # False leaves the model's attention implementation as it is given (benchmarks and
        # tests set a copy to plain "sdpa" to compare the float32 core); the model's
        # config says which one a run used (``scoring_options``).
        wide_attention: bool = True,
        # True routes a float32 CPU model's linear layers through oneDNN, 2.2x MKL's
        # throughput on AMD CPUs (``monitor.backends.onednn_linear``); False leaves them
        # on ``F.linear`` (benchmarks compare the two). Recorded as ``linear_kernel``.
        onednn_linears: bool = True,
        **options: Unpack[HFOptions],
    ) -> None:
        super().__init__(model, tokenizer, **options)
        # Before the sharing check: the wide core is one of the implementations it takes.
        if wide_attention:
            widen_attention(self.model)
        if onednn_linears:
            route_linears(self.model)
        self.linear_kernel = linear_kernel(self.model)
        self.float64_layers = float64_layers(self.model)
        self.float64_row_layers = float64_row_layers(self.model)
        self.max_batch_tokens = max_batch_tokens
        self.requests_per_call = requests_per_call
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        # Any id works on the right of a causal sequence (it is masked and never read),
        # but a real one keeps embedding lookups in range.
        self._pad_id = int(pad)
        self.prefix_sharing = prefix_sharing and supports_prefix_sharing(model)
        # A custom mask replaces the model's own, sliding window included: sequences
        # longer than the window go through the padded path.
        self._window = getattr(model.config, "sliding_window", None)
        # Whether the tree path asks the model to run its LM head only at the positions
        # whose log-probs are read (transformers' ``logits_to_keep``): the model's own
        # head, with whatever scaling or soft-capping its forward applies. A model whose
        # forward lacks the argument gets the full head; tests turn it off to compare.
        self.head_at_read_positions = accepts_logits_to_keep(model)

    def scoring_options(self) -> dict[str, object]:
        """The choices that decide which float operations compute a score, for the run's
        provenance: two runs that differ in any of them may differ in the last bits."""
        return {
            "backend": "hf-causal",
            "prefix_sharing": self.prefix_sharing,
            "batch_size": self.batch_size,
            "max_batch_tokens": self.max_batch_tokens
            or (TREE_MAX_TOKENS if self.prefix_sharing else None),
            "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
            "linear_kernel": self.linear_kernel,
            "float64_linear_layers": self.float64_layers,
            "float64_first_row_layers": self.float64_row_layers,
        }

    @property
    def bos_token_id(self) -> int | None:
        """The BOS id, falling back to EOS as lm-evaluation-harness does (GPT-2 has
        only ``<|endoftext|>``), so a first real token always has a context to score."""
        tok = self.tokenizer
        for candidate in (
            tok.bos_token_id,
            getattr(self.model.config, "bos_token_id", None),
            tok.eos_token_id,
        ):
            if isinstance(candidate, int):
                return candidate
        return None

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=add_special_tokens))

    def decode_token(self, token_id: int) -> str:
        return self.tokenizer.decode([int(token_id)])

    def token_logprobs_tail(
        self,
        sequences: Sequence[Sequence[int]],
        tails: Sequence[int],
        *,
        batch_size: int | None = None,
        progress: Progress | None = None,
    ) -> list[np.ndarray]:
        """The last ``tails[i]`` values of ``token_logprobs`` of each sequence
        (``monitor.backends.base.TailLogprobs``), in the same forward passes.

        On the tree path only the positions those values are read from are projected
        onto the vocabulary (``head_at_read_positions``): for a choice question its
        options' few tokens, not the shared prompt.
        """
        if len(tails) != len(sequences):
            raise ValueError(f"{len(sequences)} sequences need as many tails, got {len(tails)}")
        for seq, tail in zip(sequences, tails, strict=True):
            if not 0 <= tail <= max(len(seq) - 1, 0):
                raise ValueError(f"a tail of {tail} on a sequence of {len(seq)} ids")
        req = self._requests(sequences, progress)
        self._answer(req, batch_size, progress, tails)
        answers = req.answers()
        return [v[len(v) - t :].copy() for v, t in zip(answers, tails, strict=True)]

    def _answer(
        self,
        req: UniqueSequences,
        batch_size: int | None,
        progress: Progress | None,
        tails: Sequence[int] | None = None,
    ) -> None:
        """``token_logprobs`` of every sequence ``req`` has to compute, or (with
        ``tails``) its last values only, in ``req.results``."""
        unique, results, todo = req.unique, req.results, req.todo
        # A sequence asked for twice with different tails is computed once, for the longer.
        wanted = np.zeros(len(unique), dtype=np.int64)
        if tails is None:
            wanted[:] = [len(seq) - 1 for seq in unique]
        else:
            np.maximum.at(wanted, np.asarray(req.where, dtype=np.int64), np.asarray(tails))
        size = batch_size or self.batch_size
        if self.prefix_sharing:
            budget = self.max_batch_tokens or TREE_MAX_TOKENS
            batches = tree_batches([unique[u] for u in todo], size, budget)
        else:
            lengths = [len(unique[u]) for u in todo]
            batches = length_sorted_batches(lengths, size, self.max_batch_tokens)

        def collect(members: list[int], finish: Finish) -> None:
            for u, v in zip(members, finish(), strict=True):
                results[u] = v
            if progress is not None:
                progress(int(req.copies[members].sum()))

        # A pass's values are read (a device sync) only once the next pass is launched:
        # a GPU computes pass k while the host builds pass k+1's tree. A CPU computes
        # each pass as it is launched, so there the order changes nothing.
        in_flight: tuple[list[int], Finish] | None = None
        for batch in batches:
            members = [todo[b] for b in batch]
            seqs = [unique[u] for u in members]
            want = [int(wanted[u]) for u in members]
            if self._tree_fits(seqs):
                finish = self._forward_tree(seqs, want)
            else:
                finish = _last_values(self._forward(seqs), want)
            if in_flight is not None:
                collect(*in_flight)
            in_flight = (members, finish)
        if in_flight is not None:
            collect(*in_flight)

    def _tree_fits(self, batch: list[tuple[int, ...]]) -> bool:
        return self.prefix_sharing and (
            not isinstance(self._window, int) or max(map(len, batch)) <= self._window
        )

    @torch.inference_mode()
    def _forward_tree(
        self, batch: list[tuple[int, ...]], tails: Sequence[int] | None = None
    ) -> Finish:
        """Launch one forward pass over the batch's prefix tree; the ``Finish`` it returns
        reads each sequence's last ``tails[i]`` log-probs (all n-1 without ``tails``).

        The LM head runs only at the fed nodes some asked-for log-prob is read from (a
        node's value is read from its parent's row): with every log-prob asked for that
        is every fed node, and the full head runs as before. The tree mask is built on
        the model's device from one ``[n]`` vector (``PrefixTree.subtree_ends``,
        ``tree_mask``), without an ``n x n`` host tensor to fill and copy.
        """
        tree = PrefixTree.of(batch)
        fed = tree.fed_nodes()
        if tails is None:
            tails = [len(seq) - 1 for seq in batch]
        child = tree.tail_nodes(tails)
        row = np.searchsorted(fed, tree.parent[child])  # a fed index per asked-for value
        kept = np.unique(row)
        keep_some = self.head_at_read_positions and len(kept) < len(fed)
        if keep_some:
            row = np.searchsorted(kept, row)  # the kept rows come back in ``kept``'s order
        dtype = next(self.model.parameters()).dtype
        ids, positions, ends, kept_t, row_t, target = to_device(
            [
                tree.tokens[fed],
                tree.depth[fed],
                tree.subtree_ends(fed),
                kept,
                row,
                tree.tokens[child],
            ],
            self.device,
        )
        extra = {}
        if keep_some:
            # A 1-D tensor keeps these positions of every batch row, in this order.
            extra["logits_to_keep"] = kept_t
        logits = self.model(
            input_ids=ids.unsqueeze(0),
            attention_mask=tree_mask(ends, dtype),
            position_ids=positions.unsqueeze(0),
            use_cache=False,
            **extra,
        ).logits[0]
        picked = logits[row_t, target].to(score_dtype(logits)) - log_normalisers(logits)[row_t]
        self.stats.forward_passes += 1
        self.stats.sequences_computed += len(batch)
        self.stats.tokens_computed += len(fed)
        self.stats.padded_tokens += len(fed)
        self.stats.logit_rows += logits.shape[0]

        def finish() -> list[np.ndarray]:
            node_values = np.full(len(tree), np.nan, dtype=np.float64)
            node_values[child] = picked.double().cpu().numpy()
            values = tree.sequence_values(node_values)
            return [v[len(v) - t :] for v, t in zip(values, tails, strict=True)]

        return finish

    @torch.inference_mode()
    def _forward(self, batch: list[tuple[int, ...]]) -> Finish:
        """Launch one padded forward pass; the ``Finish`` it returns reads each row's n-1
        log-probs."""
        lengths = [len(s) for s in batch]
        width = max(lengths)
        ids = torch.full((len(batch), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for r, seq in enumerate(batch):
            ids[r, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            mask[r, : len(seq)] = 1
        positions = torch.arange(width, dtype=torch.long).unsqueeze(0).expand(len(batch), -1)
        ids, mask, positions = (t.to(self.device) for t in (ids, mask, positions))
        logits = self.model(
            input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False
        ).logits
        targets = ids[:, 1:].unsqueeze(-1)
        picked = logits[:, :-1].gather(-1, targets).squeeze(-1).to(score_dtype(logits))
        # Real positions only: padding is never normalised.
        rows = [
            picked[r, : n - 1] - log_normalisers(logits[r, : n - 1]) for r, n in enumerate(lengths)
        ]
        self.stats.forward_passes += 1
        self.stats.sequences_computed += len(batch)
        self.stats.tokens_computed += sum(lengths)
        self.stats.padded_tokens += len(batch) * width
        self.stats.logit_rows += len(batch) * width
        return lambda: [values.double().cpu().numpy() for values in rows]


def _last_values(finish: Finish, wanted: Sequence[int]) -> Finish:
    """``finish`` reading only each row's last ``wanted[i]`` values."""
    return lambda: [v[len(v) - w :] for v, w in zip(finish(), wanted, strict=True)]


def to_device(arrays: Sequence[np.ndarray], device: str) -> list[torch.Tensor]:
    """int64 ``arrays`` as tensors on ``device``, in one copy that does not wait.

    Why: a plain ``.to("cuda")`` of a host array waits for the GPU's queue to drain
    (six such copies a pass kept an H200 idle while the host built the next pass); one
    copy from pinned memory with ``non_blocking`` is queued behind the running pass.
    """
    flat = torch.from_numpy(np.concatenate([np.asarray(a, dtype=np.int64) for a in arrays]))
    if device.startswith("cuda"):
        flat = flat.pin_memory().to(device, non_blocking=True)
    elif device != "cpu":
        flat = flat.to(device)
    return list(torch.split(flat, [len(a) for a in arrays]))


def tree_mask(ends: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive ``[1, 1, n, n]`` attention mask of a prefix tree's fed nodes, built
    on ``ends``' device: 0 where key ``j`` is query ``i`` or one of its ancestors
    (``j <= i < ends[j]``, ``PrefixTree.subtree_ends``), the dtype's lowest value
    elsewhere."""
    i = torch.arange(len(ends), device=ends.device)
    allowed = (i[None, :] <= i[:, None]) & (i[:, None] < ends[None, :])
    mask = torch.zeros((1, 1, len(ends), len(ends)), dtype=dtype, device=ends.device)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)


def score_dtype(logits: torch.Tensor) -> torch.dtype:
    """The dtype log-probs are computed in: fp32, or float64 for a float64 model."""
    return torch.float64 if logits.dtype == torch.float64 else torch.float32


def log_normalisers(logits: torch.Tensor) -> torch.Tensor:
    """``logsumexp`` over the vocabulary of each row of a ``[rows, vocab]`` tensor, in fp32
    (float64 for float64 logits).

    Computed in blocks of ``NORMALISER_ROWS`` rows on a CPU: ``torch.logsumexp``
    allocates a temporary as large as its input, and over a whole forward pass (a few
    hundred rows of a 49k vocabulary, ~50 MB) it ran 2.4x slower than in 6 MB blocks on
    this project's CPUs. Each row's value is the same bits either way (a row is reduced
    on its own). On a GPU each block is a kernel launch, so blocks are as large as keep
    the fp32 temporary within ``GPU_LOGIT_BYTES``.
    """
    dtype = score_dtype(logits)
    out = torch.empty(logits.shape[0], dtype=dtype, device=logits.device)
    block = NORMALISER_ROWS
    if logits.device.type != "cpu":
        block = max(NORMALISER_ROWS, GPU_LOGIT_BYTES // (4 * max(1, logits.shape[-1])))
    for i in range(0, logits.shape[0], block):
        out[i : i + block] = torch.logsumexp(logits[i : i + block].to(dtype), dim=-1)
    return out


def accepts_logits_to_keep(model) -> bool:
    """Whether ``model``'s forward takes ``logits_to_keep`` (transformers' causal LMs
    since 4.50; a 1-D tensor of positions keeps those for every batch row)."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # a forward without a signature to read
        return False
    return "logits_to_keep" in parameters


def supports_prefix_sharing(model) -> bool:
    """Whether ``model`` computes a prefix-tree row exactly as separate padded rows."""
    config = model.config
    return (
        getattr(config, "model_type", None) in PREFIX_SHARING_MODEL_TYPES
        and getattr(config, "_attn_implementation", None) in PREFIX_SHARING_ATTENTION
    )
