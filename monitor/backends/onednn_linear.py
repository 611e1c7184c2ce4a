"""A float32 model's linear layers on a CPU, through oneDNN's matrix kernel (the first
decoder layers' through float64).

Why: torch's CPU ``F.linear`` calls MKL's sgemm, and MKL runs its AVX2 code on AMD
processors even where they have AVX-512. On this project's development and CI machine
(AMD EPYC, Zen 5, 2 cores, AVX-512), float32 at SmolLM2's shapes (rows x 576 x 1,536 and
back, 64 to 4,096 rows; ``bench/bench_vs_lm_eval.py`` prints the peak it measures):

* ``F.linear`` (MKL): 173-220 GFLOP/s; the 49k-wide LM head 152-160;
* oneDNN (``torch.ops.mkldnn._linear_pointwise``, the op torch's own compiler emits for
  linear layers on a CPU): 401-488 GFLOP/s; the LM head 299-302.

Matrix products were about four fifths of a scoring pass on a CPU, so this is most of
the time there was to save. The kernel computes in float32, as MKL does, and a row's
result does not depend on the other rows of the call (from 16 rows up), so a sequence's
values do not depend on which sequences share its pass.

Exactness. oneDNN's float32 rounding is larger than MKL's (against a float64 product,
4.3e-6 where MKL gave 2.1e-6 on unit-scale 1,024 x 576 x 1,536), and SmolLM2 magnifies
what an early layer rounds (its 12th layer lifts the activations right after BOS to
~1e3). Per-sentence log-prob sums of all 1,542 sentences of the four Indian-BhED axes,
against a float64 copy of the model (2026-11-28):

* MKL everywhere (before): max 4.4e-4 nats, mean 1.8e-5, 9 sentences over 1e-4;
* oneDNN everywhere: max 6.2e-4, mean 2.6e-5, 27 over, and 3 of 320 sentences further
  from lm-evaluation-harness than its own error explains (``make bench``'s check);
* oneDNN, the first ``FLOAT64_LAYERS`` = 3 decoder layers' linears in float64: max
  2.0e-4, mean 2.5e-5, 7 over; 15% more time than oneDNN everywhere;
* and each LM-head logit summed from ``HEAD_PARTS`` = 4 partial products over slices of
  the hidden size: max 1.9e-4, mean 1.9e-5, 3 over, at no measured cost (1.79 s
  against 1.80 s for 160 items): the head's time is its 49k-wide output;
* and the rows of a sequence's first ``FLOAT64_POSITIONS`` = 2 positions in float64 in
  ``o_proj`` and ``down_proj`` of layers 3 to 11 (below ``FLOAT64_ROW_LAYERS`` = 12;
  what runs): max 8.2e-5, mean 1.6e-5, **0 over**; 3.9% more time (the cll bench's
  sentences, three interleaved rounds), since only 6.6 of a pass's 106 rows are first
  rows (``FirstRowsLinear``).

Why the first layers: what they round, every later layer magnifies. Putting one layer at
a time in float64 (the 80 worst sentences) cut the error most for layers 0 and 2 and not
at all past layer 3; two layers left 21 sentences over 1e-4. Measured and not taken:
every linear summed in 4 partial products (max 5.2e-4, mean 1.4e-5, 7 over, 29% more
time: the layers' products are small and lose efficiency when cut); the head in float64
(the first 400 items' sentences: 0 over 1e-4 where the partial sums leave 2, but 39% more
time); float64 only for rows whose input exceeds a magnitude (no smaller maximum,
slower). Only every decoder layer in float64 brought all of the 40 worst sentences within
1e-4 (max 7.1e-5; not timed: float64 products run on MKL).

Why the first rows (2026-11-28, the 24 worst sentences and 24 at random): what was left
came not from the head (its logits from the same hidden state in float64 left the worst
at 2.0e-4), nor from the length of the float32 sums (``down_proj`` in 2 to 6 partial
sums: no better), but from the rows of positions 0 and 1, BOS and the token after it,
whose activations SmolLM2 grows to ~1e3 and every later row attends to. Only the
products that write into the residual stream (``RESIDUAL_WRITERS``) need them: every
linear's first rows did no better than these two's. Measured and not taken: those rows
in every layer from 3 on (all 1,542 sentences: max 8.7e-5, 0 over, but 11% more time:
the float64 weights stream from memory every pass); layers 3 to 5 or 3 to 8 only (2 and
3 of the 24 worst over 1e-4); position 1 alone or BOS alone (3 over); the first rows
without the three float64 layers (worst 6.9e-4). Remembering the rows' products across
passes would not pay: BOS's row is the same in every pass, but the four axes' 1,898
requests start with 359 different tokens, so most passes meet a new one. The float64
product runs in calls of a multiple of ``ROW_BLOCK`` rows, so a row's value does not
depend on the others in its call.

oneDNN's values differ from MKL's in the last bits, so the run records the choice
(``HFCausalLM.scoring_options``: ``linear_kernel``, ``float64_linear_layers``,
``float64_first_row_layers``).

Only float32 on a CPU is routed: bf16 and fp16 linears already go to oneDNN in torch, a
float64 model (the reference copy) has no oneDNN kernel, and a GPU has its own. The
layer's module object, its parameters (a tied LM head stays tied) and hooks are kept;
only its ``forward`` changes, and an input it was not routed for (another dtype or
device) takes ``F.linear`` as before.
"""

from __future__ import annotations

import platform

import torch
import torch.nn.functional as F

ONEDNN = "onednn"
ATEN = "aten"
_X86 = {"x86_64", "amd64", "i386", "i686", "x86"}


def onednn_available() -> bool:
    """Whether this torch build has oneDNN's linear kernel for this (x86) CPU."""
    return (
        platform.machine().lower() in _X86
        and torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    )


# Decoder layers, from the first, whose linear layers compute in float64 (module
# docstring: exactness).
FLOAT64_LAYERS = 3
# Partial products each LM-head logit is summed from (module docstring: exactness).
HEAD_PARTS = 4
# The rows of a sequence's first FLOAT64_POSITIONS positions (BOS and the token after it)
# compute in float64 in the products that write into the residual stream
# (RESIDUAL_WRITERS) of the decoder layers from FLOAT64_LAYERS up to, not including,
# FLOAT64_ROW_LAYERS (module docstring: exactness).
FLOAT64_POSITIONS = 2
FLOAT64_ROW_LAYERS = 12
RESIDUAL_WRITERS = ("o_proj", "down_proj")  # Llama, Mistral, Qwen, Gemma, SmolLM2
# MKL's float64 product gives a row the same bits whatever the other rows of the call
# when the call has a multiple of 8 rows (not otherwise: 2e-12 apart), so a first row's
# value does not depend on which rows share its pass.
ROW_BLOCK = 8


def _routable(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """A float32 CPU input to a float32 layer, outside autograd."""
    return (
        x.dtype == torch.float32
        and x.device.type == "cpu"
        and weight.dtype == x.dtype
        and not (torch.is_grad_enabled() and weight.requires_grad)
    )


def _float64_weights(layer: torch.nn.Linear) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``layer``'s weight and bias in float64, converted once, on first use, and kept."""
    wide = getattr(layer, "_float64", None)
    if wide is None:
        bias = None if layer.bias is None else layer.bias.detach().double()
        wide = layer._float64 = (layer.weight.detach().double(), bias)
    return wide


class OneDnnLinear(torch.nn.Linear):
    """``nn.Linear`` whose float32 CPU forward is oneDNN's kernel (module docstring)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _routable(x, self.weight):
            return F.linear(x, self.weight, self.bias)
        # Arguments: no fused activation ("none"), its scalars, its algorithm.
        return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")


class SummedHeadLinear(OneDnnLinear):
    """The LM head on oneDNN, each logit summed from ``HEAD_PARTS`` partial products over
    slices of the hidden size: less rounding at no measured cost, since the head's time
    goes to its 49k-wide output, not to the sums (module docstring: exactness)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _routable(x, self.weight):
            return F.linear(x, self.weight, self.bias)
        parts = getattr(self, "_parts", None)
        if parts is None:  # contiguous slices, cut once on first use
            step = -(-self.in_features // HEAD_PARTS)
            parts = self._parts = [
                (a, self.weight.detach()[:, a : a + step].contiguous())
                for a in range(0, self.in_features, step)
            ]
        y = None
        for a, weight in parts:
            piece = x[..., a : a + weight.shape[1]].contiguous()
            part = torch.ops.mkldnn._linear_pointwise(piece, weight, None, "none", [], "")
            y = part if y is None else y.add_(part)
        assert y is not None
        return y if self.bias is None else y.add_(self.bias)


class Float64Linear(torch.nn.Linear):
    """``nn.Linear`` whose float32 CPU forward computes in float64 and rounds the result
    to float32 once: for the first decoder layers, whose rounding the rest magnify."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _routable(x, self.weight):
            return F.linear(x, self.weight, self.bias)
        wide = _float64_weights(self)
        return F.linear(x.double(), *wide).float()


class FirstRows:
    """Which rows of the forward pass under way hold a sequence's first positions.

    A pre-hook on the model (``note``) reads the pass's ``position_ids`` (from
    ``input_ids``' shape where none are given: positions 0, 1, ... in every row), so
    the layers that compute those rows in float64 need no argument of their own.
    """

    def __init__(self) -> None:
        self.index: torch.Tensor | None = None
        self.rows = 0  # rows in the pass (batch x length)

    def note(self, _module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        ids = kwargs.get("input_ids", args[0] if args else None)
        if ids is None:
            embeds = kwargs.get("inputs_embeds")
            ids = None if embeds is None else embeds[..., 0]
        if ids is None or ids.dim() != 2:
            self.index, self.rows = None, 0
            return
        positions = kwargs.get("position_ids")
        if positions is None:
            positions = torch.arange(ids.shape[1], device=ids.device)
        positions = positions.expand(ids.shape)
        self.index = torch.nonzero(positions.reshape(-1) < FLOAT64_POSITIONS).squeeze(1)
        self.rows = ids.numel()

    def of(self, x: torch.Tensor) -> torch.Tensor | None:
        """The first positions' row indices into ``x`` flattened to rows; None when ``x``
        is not this pass's hidden state (another caller) or holds none of them."""
        if self.index is None or not len(self.index) or x.numel() != self.rows * x.shape[-1]:
            return None
        return self.index


class FirstRowsLinear(OneDnnLinear):
    """``OneDnnLinear`` whose rows at a sequence's first positions compute in float64: for
    the products that write into the residual stream, where SmolLM2's BOS and first
    token hold activations of ~1e3 that every later row attends to (module docstring)."""

    first_rows: FirstRows  # set by ``route_linears``, shared by the model's layers

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        rows = self.first_rows.of(x) if _routable(x, self.weight) else None
        if rows is None:
            return y
        wide = _float64_weights(self)
        padded = -(-len(rows) // ROW_BLOCK) * ROW_BLOCK
        block = x.new_zeros((padded, self.in_features), dtype=torch.float64)
        block[: len(rows)] = x.reshape(-1, self.in_features)[rows]
        y.view(-1, self.out_features)[rows] = F.linear(block, *wide)[: len(rows)].float()
        return y


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The model's decoder layers, first to last: its ``ModuleList`` of as many blocks as
    ``config.num_hidden_layers`` says (Llama, Mistral, Gemma: ``model.layers``)."""
    count = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            return list(module)
    return []


def _float32_on_cpu(model: torch.nn.Module) -> bool:
    first = next(model.parameters(), None)
    return first is not None and first.dtype == torch.float32 and first.device.type == "cpu"


def route_linears(
    model: torch.nn.Module,
    float64_layers: int = FLOAT64_LAYERS,
    float64_row_layers: int = FLOAT64_ROW_LAYERS,
) -> None:
    """Route ``model``'s linear layers through oneDNN where it is float32 on an x86 CPU,
    those of its first ``float64_layers`` decoder layers through float64, the products
    that write into the residual stream of the layers after them, up to
    ``float64_row_layers``, with their first positions' rows in float64, and its LM head
    through oneDNN in ``HEAD_PARTS`` partial sums.

    The layers' class is switched in place (the classes add only ``forward``), so the
    model keeps every module, parameter and tie it had.
    """
    if not (_float32_on_cpu(model) and onednn_available()):
        return
    layers = decoder_layers(model)
    wide = {id(m) for layer in layers[:float64_layers] for m in layer.modules()}
    first = {
        id(module)
        for layer in layers[float64_layers:float64_row_layers]
        for name, module in layer.named_modules()
        if name.rsplit(".", 1)[-1] in RESIDUAL_WRITERS
    }
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    first_rows = FirstRows()
    for module in model.modules():
        if type(module) is not torch.nn.Linear:
            continue
        if id(module) in wide:
            module.__class__ = Float64Linear
        elif id(module) in first:
            module.__class__ = FirstRowsLinear
            module.first_rows = first_rows
        elif module is head:
            module.__class__ = SummedHeadLinear
        else:
            module.__class__ = OneDnnLinear
    if first:
        model.register_forward_pre_hook(first_rows.note, with_kwargs=True)


def linear_kernel(model: torch.nn.Module) -> str:
    """The kernel ``model``'s linear layers run on now (``onednn`` or ``aten``), for the
    run's provenance: the two differ in the last bits."""
    routed = any(isinstance(m, OneDnnLinear) for m in model.modules())
    return ONEDNN if routed and _float32_on_cpu(model) else ATEN


def _layers_with(model: torch.nn.Module, kind: type[torch.nn.Linear]) -> int:
    """How many of a float32 CPU ``model``'s decoder layers hold a linear layer of ``kind``."""
    if not _float32_on_cpu(model):
        return 0
    return sum(any(isinstance(m, kind) for m in layer.modules()) for layer in decoder_layers(model))


def float64_layers(model: torch.nn.Module) -> int:
    """How many of ``model``'s decoder layers run their linear layers in float64."""
    return _layers_with(model, Float64Linear)


def float64_row_layers(model: torch.nn.Module) -> int:
    """How many of ``model``'s decoder layers compute their first positions' rows in
    float64 where they write into the residual stream."""
    return _layers_with(model, FirstRowsLinear)
