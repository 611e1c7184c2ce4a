"""Turn a verified GGUF file into a plain safetensors model folder, once, and cache it.

Loading a GGUF with transformers costs ~20 s (SmolLM2) to ~60 s (Gemma-270m) because
its metadata parser is pure Python, while a safetensors folder reloads in about a
second with the same logits. So the dequantised fp32 weights are written once under
``<models_dir>/<gguf sha256>/``: keyed by the verified file hash, the cache can never
serve weights from a different file.

A conversion is built in a temporary sibling folder, finished by a marker file written
last, and only then renamed into place, so a killed process leaves either nothing or a
folder without a valid marker, which the next run deletes and rebuilds.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

MARKER = "bias-monitor-conversion.json"
"""Written last; holds the GGUF sha256 and the size of every other file in the folder."""

PROBE_TEXT = "The weather was mild and the market in the old town was busy."
"""A neutral sentence the converted folder must score exactly as the GGUF does."""
PROBE_TOLERANCE = 1e-4

EventSink = Callable[[str], None]


def converted_folder(models_dir: Path, gguf_sha256: str) -> Path:
    return Path(models_dir) / gguf_sha256


def is_complete(folder: Path, gguf_sha256: str) -> bool:
    """True when ``folder`` is a finished conversion of the GGUF with this hash.

    Checks file sizes as well as the marker, so a cache restored with a truncated file
    (e.g. a CI cache cut short) is rebuilt instead of failing deep inside a load.
    """
    try:
        marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        if marker.get("gguf_sha256") != gguf_sha256:
            return False
        files = marker["files"]
        return bool(files) and all(
            (folder / name).stat().st_size == size for name, size in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def ensure_converted(
    gguf_path: Path,
    gguf_sha256: str,
    models_dir: Path,
    *,
    on_event: EventSink | None = None,
) -> Path:
    """The cached safetensors folder for an already *verified* GGUF, converting if needed.

    The caller must have checked ``gguf_path`` against ``gguf_sha256``: the hash names
    the cache entry, so an unverified file would poison it.
    """
    emit = on_event or (lambda _msg: None)
    models_dir = Path(models_dir)
    dest = converted_folder(models_dir, gguf_sha256)
    if is_complete(dest, gguf_sha256):
        emit(f"using cached conversion {dest}")
        return dest
    models_dir.mkdir(parents=True, exist_ok=True)
    # One converter per hash at a time; a second process waits, then finds it done.
    with FileLock(str(models_dir / f".{gguf_sha256}.lock")):
        if is_complete(dest, gguf_sha256):
            emit(f"using cached conversion {dest}")
            return dest
        for stale in models_dir.glob(f".tmp-{gguf_sha256[:16]}-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if dest.exists():
            emit(f"discarding incomplete conversion {dest}")
            shutil.rmtree(dest)
        emit(f"converting {gguf_path.name} to safetensors (one-off) into {dest}")
        started = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix=f".tmp-{gguf_sha256[:16]}-", dir=models_dir))
        work.chmod(0o755)  # mkdtemp makes it private; a CI cache may be shared between users
        try:
            probe_diff = convert_gguf(gguf_path, work)
            _write_marker(work, gguf_path, gguf_sha256, probe_diff)
            os.rename(work, dest)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        emit(f"converted {gguf_path.name} in {time.perf_counter() - started:.1f} s")
    return dest


def convert_gguf(gguf_path: Path, out_dir: Path) -> float:
    """Dequantise a GGUF causal LM to fp32 and save it as a from_pretrained folder.

    ``save_pretrained`` refuses a GGUF-loaded model (it carries a quantisation config),
    so the same model class is rebuilt from its config without ``quantization_config``
    and given the dequantised state dict; strict loading guarantees no tensor is lost.
    The saved folder is then reloaded and must reproduce the GGUF model's tokens and
    logits on a probe sentence: a config field lost in the round trip (rope scaling,
    sliding window) would change scores without failing any load, so it is caught here,
    once. Returns the probe's max absolute logit difference.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from monitor.errors import DataIntegrityError

    folder, name = str(gguf_path.parent), gguf_path.name
    gguf_model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, trust_remote_code=False
    ).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name, trust_remote_code=False)
    config_dict = gguf_model.config.to_dict()
    config_dict.pop("quantization_config", None)
    config = type(gguf_model.config).from_dict(config_dict)
    plain = type(gguf_model)(config)
    plain.load_state_dict(gguf_model.state_dict(), strict=True)
    plain.to(torch.float32).save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    del plain
    gc.collect()

    probe_ids = tokenizer.encode(PROBE_TEXT)
    reloaded_tok = AutoTokenizer.from_pretrained(out_dir, trust_remote_code=False)
    if reloaded_tok.encode(PROBE_TEXT) != probe_ids:
        raise DataIntegrityError(
            f"converting {gguf_path} changed the tokenizer: the probe sentence tokenises "
            "differently; the cache was not written"
        )
    reloaded = AutoModelForCausalLM.from_pretrained(
        out_dir, dtype=torch.float32, trust_remote_code=False
    ).eval()
    probe = torch.tensor([probe_ids])
    with torch.inference_mode():
        diff = (gguf_model(probe).logits - reloaded(probe).logits).abs().max().item()
    del gguf_model, reloaded
    gc.collect()
    if not diff <= PROBE_TOLERANCE:
        raise DataIntegrityError(
            f"converting {gguf_path} changed the model: logits differ by {diff:.3g} on a probe "
            f"sentence (tolerance {PROBE_TOLERANCE}); the cache was not written"
        )
    return diff


def _write_marker(folder: Path, gguf_path: Path, gguf_sha256: str, probe_diff: float) -> None:
    import gguf
    import torch
    import transformers

    files = {
        p.relative_to(folder).as_posix(): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MARKER
    }
    marker = {
        "gguf_sha256": gguf_sha256,
        "gguf_file": gguf_path.name,
        "dtype": "float32",
        "probe": {"text": PROBE_TEXT, "max_abs_logit_diff_vs_gguf": probe_diff},
        "converted_with": {
            "transformers": transformers.__version__,
            "torch": torch.__version__,
            "gguf": getattr(gguf, "__version__", None) or _dist_version("gguf"),
        },
        "files": files,
    }
    tmp = folder / (MARKER + ".part")
    tmp.write_text(json.dumps(marker, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, folder / MARKER)


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def conversion_info(folder: Path) -> dict:
    """The marker of a finished conversion (tool versions used), for provenance."""
    return json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
