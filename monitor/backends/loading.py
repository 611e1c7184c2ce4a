"""From a validated snapshot to a ready backend: verified weights, a loadable folder
(GGUF converted once), device and dtype.

Device and dtype are decided here, once, because they are provenance: the same weights
in bf16 on a GPU and in fp32 on a CPU give different scores, and a run records which it
used. Remote code is never trusted: a pinned snapshot must not execute code from a repo.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict, Unpack

from monitor import paths
from monitor.backends import gguf_cache
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.snapshots.model import Snapshot
from monitor.snapshots.resolve import (
    EventSink,
    ResolvedWeights,
    check_conversion,
    resolve_weights,
)

DTYPES = ("float32", "bfloat16", "float16")


class LoadOptions(TypedDict, total=False):
    """What a snapshot kind's backend loader is asked with beside the snapshot
    (``kinds.load_backend``), each left out for its default: ``device`` and ``dtype``
    ("auto": the best this machine has), ``cache_dir`` (where fetched and converted
    weights are kept; the default cache) and ``on_event`` (progress lines). One loader
    signature for every kind: a kind whose weights a server holds, or that has no dtype
    to choose, ignores what does not apply."""

    device: str
    dtype: str
    cache_dir: Path | None
    on_event: EventSink | None


@dataclass
class LoadedModel:
    """A model and tokenizer in eval mode, with the choices made while loading them."""

    model: Any
    tokenizer: Any
    weights: ResolvedWeights
    device: str
    dtype: str


def model_folder(
    snapshot: Snapshot, *, cache_dir: Path | None = None, on_event: EventSink | None = None
) -> ResolvedWeights:
    """The snapshot's verified weights as a folder ``from_pretrained`` (or vLLM) loads.

    A GGUF file is dequantised once to fp32 safetensors, cached by its sha256.
    """
    weights = resolve_weights(snapshot, cache_dir=cache_dir, on_event=on_event)
    if weights.gguf_file is None:
        return weights
    cache = Path(cache_dir) if cache_dir is not None else paths.cache_root()
    folder = gguf_cache.ensure_converted(
        weights.gguf_file, weights.weights_sha256 or "", cache / "models", on_event=on_event
    )
    check_conversion(weights, folder, leave_out=gguf_cache.MARKER)
    tools = gguf_cache.conversion_info(folder).get("converted_with", {})
    note = f"dequantised from GGUF {weights.gguf_file.name} to float32 with " + ", ".join(
        f"{k} {v}" for k, v in sorted(tools.items())
    )
    return replace(weights, folder=folder, notes=(note, *weights.notes))


def resolve_device(device: str = "auto") -> str:
    """``auto`` = ``cuda`` when a GPU is visible, else ``cpu``; explicit names are checked."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return device
    if device == "cuda" or device.startswith("cuda:"):
        if not torch.cuda.is_available():
            raise UserInputError(f"device {device!r} requested but no CUDA GPU is available")
        return device
    raise UserInputError(f"unknown device {device!r}; use auto, cpu, cuda or cuda:N")


def resolve_dtype(dtype: str, device: str) -> str:
    """``auto`` = float32 on CPU (bf16 matmuls are slow there), bfloat16 on CUDA."""
    if dtype == "auto":
        return "float32" if device == "cpu" else "bfloat16"
    if dtype not in DTYPES:
        raise UserInputError(f"unknown dtype {dtype!r}; use auto, {', '.join(DTYPES)}")
    return dtype


def ensure_pad_token(tokenizer) -> None:
    """Give the tokenizer a pad token from its existing specials (EOS first).

    Batching needs one; adding a new token would change the vocabulary and so the model.
    """
    if tokenizer.pad_token is not None:
        return
    for special in (tokenizer.eos_token, tokenizer.bos_token, tokenizer.unk_token):
        if special is not None:
            tokenizer.pad_token = special
            return
    raise UserInputError(
        f"tokenizer {tokenizer.name_or_path} has no pad, eos, bos or unk token to pad with"
    )


def load_model_and_tokenizer(
    snapshot: Snapshot, *, masked: bool = False, **options: Unpack[LoadOptions]
) -> LoadedModel:
    """Resolve the snapshot's weights and load them, without wrapping them in a backend.

    ``masked`` picks the masked-LM head (AUL) instead of the causal one.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    dev = resolve_device(options.get("device", "auto"))
    dt = resolve_dtype(options.get("dtype", "auto"), dev)
    on_event = options.get("on_event")
    weights = model_folder(snapshot, cache_dir=options.get("cache_dir"), on_event=on_event)
    if masked and weights.gguf_file is not None:
        raise UserInputError(
            f"snapshot {snapshot.id}: GGUF weights are converted for causal LMs only"
        )
    auto_cls = AutoModelForMaskedLM if masked else AutoModelForCausalLM
    if on_event:
        on_event(f"loading {snapshot.id} on {dev} as {dt}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(weights.folder, trust_remote_code=False)
        model = auto_cls.from_pretrained(
            weights.folder,
            dtype=getattr(torch, dt),
            trust_remote_code=False,
            use_safetensors=True,  # never unpickle: SECURITY.md
        )
    except (OSError, ValueError) as exc:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: the weights in {weights.folder} could not be loaded: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
        ) from exc
    ensure_pad_token(tokenizer)
    model.to(dev)
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, weights=weights, device=dev, dtype=dt)


def load_causal_lm(
    snapshot: Snapshot, *, prefix_sharing: bool = True, **options: Unpack[LoadOptions]
):
    """The backend of kind ``hf-causal``: an :class:`HFCausalLM` on verified weights.
    ``prefix_sharing`` (on by default) computes shared prefixes once (a prefix tree per
    pass, see ``HFCausalLM``); ``False`` keeps the padded path, whose values agree with
    it within 4.8e-5 nats for a float32 SmolLM2 (float64 attention core) and within
    1e-13 nats for a float64 model.

    Raises ``SnapshotUnavailable`` when the weights cannot be had here, so a run over
    several snapshots can skip this one and go on.
    """
    from monitor.backends.hf_causal import HFCausalLM, pass_sizes

    loaded = load_model_and_tokenizer(snapshot, **options)
    # Larger passes and calls on a GPU (``pass_sizes``), all in the run's scoring options.
    head = loaded.model.get_output_embeddings()
    vocab = head.weight.shape[0] if head is not None else len(loaded.tokenizer)
    sizes = pass_sizes(loaded.device, vocab, next(loaded.model.parameters()).element_size())
    backend = HFCausalLM(
        loaded.model,
        loaded.tokenizer,
        name=snapshot.id,
        device=loaded.device,
        dtype=loaded.dtype,
        prefix_sharing=prefix_sharing,
        batch_size=sizes.rows,
        max_batch_tokens=sizes.nodes,
        requests_per_call=sizes.requests_per_call,
    )
    backend.weights_files = loaded.weights.files  # the run's provenance (weights_facts)
    return backend


def load_masked_lm(snapshot: Snapshot, **options: Unpack[LoadOptions]):
    """The backend of kind ``hf-mlm``: an :class:`HFMaskedLM` on verified weights."""
    from monitor.backends.hf_mlm import HFMaskedLM

    loaded = load_model_and_tokenizer(snapshot, masked=True, **options)
    backend = HFMaskedLM(
        loaded.model, loaded.tokenizer, name=snapshot.id, device=loaded.device, dtype=loaded.dtype
    )
    backend.weights_files = loaded.weights.files  # the run's provenance (weights_facts)
    return backend
