"""A float32 CPU model's linear layers on oneDNN (``monitor.backends.onednn_linear``).

What must hold: the backend routes every linear layer of a float32 CPU model, and only
those: the first ``FLOAT64_LAYERS`` decoder layers' to float64, the rest to oneDNN's
kernel, the head in partial sums (the profiler sees oneDNN's op, and torch's own float32
product nowhere), the products that write into the residual stream of the next layers
with their first positions' rows in float64 (the pass's ``position_ids`` say which); the
model
keeps its modules and its tied head; the values are those of the same model within
float32's rounding (against a float64 copy); the choice is in the run's scoring options;
and a forward autograd records, or a dtype the layer was not routed for, takes
``F.linear`` as before.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from _models import CORPUS, one_thread, tiny_bpe_tokenizer, tiny_causal_lm
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig, LlamaForCausalLM

from monitor.backends.hf_causal import HFCausalLM
from monitor.backends.onednn_linear import (
    ATEN,
    FLOAT64_LAYERS,
    FLOAT64_POSITIONS,
    FLOAT64_ROW_LAYERS,
    HEAD_PARTS,
    ONEDNN,
    RESIDUAL_WRITERS,
    FirstRows,
    FirstRowsLinear,
    Float64Linear,
    OneDnnLinear,
    SummedHeadLinear,
    linear_kernel,
    onednn_available,
    route_linears,
)

pytestmark = pytest.mark.skipif(not onednn_available(), reason="torch has no oneDNN here")


@pytest.fixture(autouse=True)
def _single_thread():
    with one_thread():
        yield


def _tied_llama():
    tok = tiny_bpe_tokenizer(None)
    model = tiny_causal_lm(
        LlamaConfig,
        LlamaForCausalLM,
        len(tok),
        tie_word_embeddings=True,
        num_hidden_layers=FLOAT64_LAYERS + 2,
    )
    return model, tok


def _ids(backend: HFCausalLM) -> list[list[int]]:
    return [[backend.bos_token_id, *backend.encode(t, add_special_tokens=False)] for t in CORPUS]


def _ops(backend: HFCausalLM, seqs) -> dict[tuple[str, str], int]:
    """Calls per (operator, dtype of its first input) over one call of the backend."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        backend.token_logprobs(seqs)
    calls: dict[tuple[str, str], int] = {}
    for event in prof.events():
        dtypes = getattr(event, "input_dtypes", None) or [""]
        dtype = dtypes[0]
        calls[(event.name, dtype)] = calls.get((event.name, dtype), 0) + 1
    return calls


def test_a_float32_cpu_backend_runs_every_linear_on_onednn_and_keeps_the_tied_head() -> None:
    model, tok = _tied_llama()
    plain = copy.deepcopy(model)
    exact = copy.deepcopy(model).double()
    backend = HFCausalLM(model, tok, name="tiny")
    options = backend.scoring_options()
    assert options["linear_kernel"] == ONEDNN
    assert options["float64_linear_layers"] == FLOAT64_LAYERS
    assert options["float64_first_row_layers"] == 2  # the two after those, under FLOAT64_ROW_LAYERS
    for number, layer in enumerate(model.model.layers):
        linears = {
            name.rsplit(".", 1)[-1]: m
            for name, m in layer.named_modules()
            if isinstance(m, torch.nn.Linear)
        }
        assert len(linears) == 7, number
        for name, m in linears.items():
            if number < FLOAT64_LAYERS:
                kind = Float64Linear
            elif name in RESIDUAL_WRITERS:
                kind = FirstRowsLinear
            else:
                kind = OneDnnLinear
            assert type(m) is kind, (number, name)
    assert type(model.lm_head) is SummedHeadLinear
    assert model.lm_head.weight is model.model.embed_tokens.weight  # the tie is kept

    seqs = _ids(backend)
    ops = _ops(backend, seqs)
    passes = backend.stats.forward_passes
    # oneDNN: the two last layers' seven linears and the head's partial sums, every pass.
    assert ops[("mkldnn::_linear_pointwise", "float")] == passes * (2 * 7 + HEAD_PARTS)
    # torch's own products: float64 only (the first layers; the float64 attention core).
    products = {"aten::addmm", "aten::mm", "aten::matmul", "aten::linear", "aten::bmm"}
    assert {dtype for (name, dtype) in ops if name in products} == {"double"}, ops

    aten = HFCausalLM(plain, tok, name="tiny", onednn_linears=False)
    assert aten.scoring_options()["linear_kernel"] == ATEN
    assert aten.scoring_options()["float64_linear_layers"] == 0
    assert aten.scoring_options()["float64_first_row_layers"] == 0
    assert ("aten::linear", "float") in _ops(aten, seqs)
    want = HFCausalLM(exact, tok, name="tiny-f64").token_logprobs(seqs)
    got, before = backend.token_logprobs(seqs), aten.token_logprobs(seqs)
    for g, b, w in zip(got, before, want, strict=True):
        np.testing.assert_allclose(g, w, atol=1e-4, rtol=0)  # float32's rounding only
        np.testing.assert_allclose(g, b, atol=1e-4, rtol=0)
    # Reruns give the same bits.
    for g, again in zip(got, backend.token_logprobs(seqs), strict=True):
        np.testing.assert_array_equal(g, again)


def test_a_layer_with_a_bias_adds_it() -> None:
    torch.manual_seed(1)
    layer = torch.nn.Linear(576, 40)
    wide = copy.deepcopy(layer).double()
    route_linears(torch.nn.Sequential(layer))
    assert type(layer) is OneDnnLinear  # a lone layer belongs to no decoder layer
    x = torch.randn(3, 37, 576)
    with torch.inference_mode():
        got = layer(x)
        want = wide(x.double())
    assert got.dtype == torch.float32 and got.shape == (3, 37, 40)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=0)


def test_the_first_positions_rows_are_the_float64_product_and_the_rest_onednn() -> None:
    torch.manual_seed(4)
    layer = torch.nn.Linear(1536, 576, bias=True)
    wide = copy.deepcopy(layer).double()
    layer.__class__ = FirstRowsLinear
    layer.first_rows = rows = FirstRows()
    # Two rows of a padded pass: positions 0..5 each; and one row of a tree pass, where
    # positions repeat (two first tokens under one BOS).
    for positions in (torch.arange(6).expand(2, 6), torch.tensor([[0, 1, 2, 1, 2, 3]])):
        ids = torch.zeros(positions.shape, dtype=torch.long)
        rows.note(layer, (), {"input_ids": ids, "position_ids": positions})
        first = positions.reshape(-1) < FLOAT64_POSITIONS
        assert torch.equal(rows.index, torch.nonzero(first).squeeze(1))
        x = torch.randn(*positions.shape, 1536) * 30  # large, as at SmolLM2's first positions
        with torch.inference_mode():
            got = layer(x).reshape(-1, 576)
            exact = wide(x.double()).reshape(-1, 576)
            onednn = torch.ops.mkldnn._linear_pointwise(x, layer.weight, layer.bias, "none", [], "")
        onednn = onednn.reshape(-1, 576)
        # The first positions: the float64 product rounded once, not oneDNN's.
        torch.testing.assert_close(got[first].double(), exact[first], atol=1e-5, rtol=0)
        assert not torch.equal(got[first], onednn[first])
        assert (got[first].double() - exact[first]).abs().max() < (
            (onednn[first].double() - exact[first]).abs().max()
        )
        assert torch.equal(got[~first], onednn[~first])  # the rest: oneDNN, bit for bit
    # An input that is not this pass's hidden state (another row count): oneDNN only.
    x = torch.randn(5, 1536)
    with torch.inference_mode():
        assert torch.equal(
            layer(x),
            torch.ops.mkldnn._linear_pointwise(x, layer.weight, layer.bias, "none", [], ""),
        )


def test_the_model_tells_its_residual_writers_which_rows_are_first() -> None:
    model, tok = _tied_llama()
    HFCausalLM(model, tok, name="tiny")
    writer = model.model.layers[FLOAT64_LAYERS].self_attn.o_proj
    assert type(writer) is FirstRowsLinear and FLOAT64_LAYERS + 2 <= FLOAT64_ROW_LAYERS
    ids = torch.randint(3, len(tok), (3, 4))
    with torch.inference_mode():
        model(input_ids=ids, use_cache=False)  # no position_ids: 0, 1, 2, 3 in every row
        assert writer.first_rows.index.tolist() == [0, 1, 4, 5, 8, 9]
        tree = torch.tensor([[0, 1, 1, 2]])
        model(input_ids=ids[:1], position_ids=tree, use_cache=False)
        assert writer.first_rows.index.tolist() == [0, 1, 2]


def test_a_summed_head_equals_the_float64_product_within_float32_rounding() -> None:
    torch.manual_seed(3)
    head = torch.nn.Linear(576, 300, bias=True)
    wide = copy.deepcopy(head).double()
    head.__class__ = SummedHeadLinear
    x = torch.randn(2, 50, 576) * 30  # large activations, as after a massive one
    with torch.inference_mode():
        got, whole = head(x), torch.nn.functional.linear(x, head.weight, head.bias)
        want = wide(x.double())
    assert len(head._parts) == HEAD_PARTS
    torch.testing.assert_close(got.double(), want, atol=1e-3, rtol=0)
    torch.testing.assert_close(got, whole, atol=1e-3, rtol=0)


def test_autograd_and_other_dtypes_take_f_linear() -> None:
    torch.manual_seed(2)
    layer = torch.nn.Linear(64, 8)
    route_linears(torch.nn.Sequential(layer))
    x = torch.randn(5, 64, requires_grad=True)
    y = layer(x)  # autograd records this one: F.linear, bit for bit
    assert torch.equal(y, torch.nn.functional.linear(x, layer.weight, layer.bias))
    y.sum().backward()
    assert x.grad is not None
    double = copy.deepcopy(layer).double()  # still an OneDnnLinear, now float64
    assert type(double) is OneDnnLinear
    with torch.inference_mode():
        x64 = torch.randn(5, 64, dtype=torch.float64)
        want = torch.nn.functional.linear(x64, double.weight, double.bias)
        assert torch.equal(double(x64), want)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_only_float32_models_are_routed(dtype: torch.dtype) -> None:
    model, tok = _tied_llama()
    model = model.to(dtype)
    backend = HFCausalLM(model, tok, name="tiny")
    assert backend.scoring_options()["linear_kernel"] == ATEN == linear_kernel(model)
    assert not any(isinstance(m, OneDnnLinear) for m in model.modules())
