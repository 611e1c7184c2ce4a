"""Scaled dot-product attention whose core runs in float64 for a float32 model.

Why: in float32, an attention core's sums over keys (the softmax normaliser and the
probability-weighted values) are rounded in an order that depends on how many keys a
row has and how the kernel blocks them. The padded path (one row per sequence) and the
prefix-tree path (all of a pass's sequences in one row, ``monitor.backends.prefix_tree``)
give the same query different key counts, so their log-probs differed by that rounding,
which SmolLM2 magnifies after BOS: up to 7.9e-4 nats on a log-prob sum of cll v3's
1,898 unique Indian-BhED sequences. The rest of the forward pass (projections, MLP,
norms, LM head) gave each row the same bits in both layouts as long as a pass had many
rows, so with the core alone in float64, whose output rounds back to the same float32
bits whatever the layout, the tree and the padded path agreed bit for bit on all 1,898
sequences given in one call. Through ``score_plans``, whose chunks of 128 requests
leave more passes part-filled, 2,810 of 3,084 log-prob sums had the same bits and the
rest differed by at most 4.8e-5 nats (a float32 core: 2.2e-4, 5 over 1e-4; make bench,
2026-11-24): a pass with few rows rounds its matrix products differently, as batch
size does (up to 8.2e-4 nats between batch 1 and 16 on those sequences).

Cost, measured on the 2-core development machine (SmolLM2, the four axes, 2026-11-24):
3% of the monitor's time in make bench (38.4 s against 37.2 s, medians of 3 interleaved
rounds; 9% and 17% in two earlier single rounds). The result moved by at most 5.7e-4 nats
from the float32 core (1 of 1,898 sequences over 1e-4), and its largest error against a
float64 copy of the model fell from 4.9e-4 (tree) and 5.4e-4 (padded) to 4.4e-4.

Only float32 models are widened: a float64 model's core is float64 already, and bf16 or
fp16 models (the CUDA default) keep their fast kernels.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

# The name the model's config carries: it is recorded in every run's scoring options, so
# two runs that differ in it are told apart.
WIDE_SDPA = "sdpa_float64_core"


def _sdpa_float64_core(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers' own SDPA attention on float64 copies of its inputs, rounded back."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if attention_mask is not None and attention_mask.is_floating_point():
        attention_mask = attention_mask.double()
    out, weights = sdpa_attention_forward(
        module, query.double(), key.double(), value.double(), attention_mask, **kwargs
    )
    return out.to(query.dtype), weights


@functools.cache
def _register() -> None:
    """Add the function to transformers' registries under its own name (the masks are
    built as for ``sdpa``), once; the built-in implementations are left as they are."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(WIDE_SDPA, _sdpa_float64_core)
    AttentionMaskInterface.register(WIDE_SDPA, sdpa_mask)


def widen_attention(model: torch.nn.Module) -> None:
    """Switch a float32 model on SDPA to the float64 core. Other dtypes and attention
    implementations (a model already switched included) are left as they are."""
    attn = getattr(model.config, "_attn_implementation", None)
    if attn == "sdpa" and next(model.parameters()).dtype == torch.float32:
        _register()
        model.set_attn_implementation(WIDE_SDPA)
