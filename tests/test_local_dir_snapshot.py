"""A model folder the user brings, pinned by its digest, through the CLI a user types.

The end-to-end test saves a perturbed copy of SmolLM2's weights as a plain safetensors
folder (what a fine-tune looks like), pins it with ``snapshots add``, scores it, scores
SmolLM2, compares the two with ``drift`` and then changes one byte of the folder, which
must refuse the next run. The other tests are quick checks of ``snapshots add``, the
folder search order and the error messages, on small files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = ["-b", "bhed-caste", "-b", "bhed-religion"]
SMOLLM2 = "smollm2-135m-instruct-q4"


def cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory, session_cache: Path, shared_datasets: Path) -> Iterator[dict]:
    """A user's snapshot folder, store and a fine-tuned SmolLM2 folder, built once.

    Removed after the module (about 530 MB of weights), so a session's disk stays small.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from monitor.backends.loading import model_folder
    from monitor.snapshots.registry import load_snapshots

    root = tmp_path_factory.mktemp("local-dir")
    snaps = root / "repo" / "snapshots"
    snaps.mkdir(parents=True)
    env = {
        **os.environ,
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_DIR": str(root / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "MONITOR_DB": str(root / "monitor.duckdb"),
        "MONITOR_SNAPSHOTS_DIR": str(snaps),
        "NO_COLOR": "1",
    }
    env.pop("MONITOR_HOME", None)
    # SmolLM2 through the project's own loader and conversion cache, then perturbed:
    # a small deterministic change to the MLP weights of the last two layers.
    weights = model_folder(load_snapshots(REPO / "snapshots")[SMOLLM2], cache_dir=session_cache)
    model = AutoModelForCausalLM.from_pretrained(weights.folder, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(weights.folder)
    gen = torch.Generator().manual_seed(25)
    last = model.config.num_hidden_layers - 2
    with torch.no_grad():
        for name, p in model.named_parameters():
            if ".mlp." in name and any(f"layers.{i}." in name for i in (last, last + 1)):
                p.add_(torch.randn(p.shape, generator=gen) * 0.5 * p.std())
    folder = root / "repo" / "models" / "My Finetune"
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    del model
    yield {"env": env, "snaps": snaps, "folder": folder, "db": root / "monitor.duckdb"}
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
def test_pinned_folder_is_scored_compared_and_refused_when_changed(world):
    env, snaps, folder, db = world["env"], world["snaps"], world["folder"], world["db"]

    added = cli(env, "snapshots", "add", str(folder), "--id", "my-finetune")
    assert added.returncode == 0, added.stderr
    toml = (snaps / "my-finetune.toml").read_text(encoding="utf-8")
    assert 'kind = "hf-causal"' in toml and 'type = "local-dir"' in toml
    assert 'path = "../models/My Finetune"' in toml  # relative to the snapshot file
    assert f"wrote {snaps / 'my-finetune.toml'}" in added.stdout
    assert "bias-monitor run -s my-finetune -b bhed-caste -b bhed-religion" in added.stdout

    mine = cli(env, "run", "-s", "my-finetune", *BENCH, "--format", "json")
    assert mine.returncode == 0, mine.stderr
    [scored] = json.loads(mine.stdout)
    assert scored["status"] == "complete" and scored["n_scored"] > 0
    base = cli(env, "run", "-s", SMOLLM2, *BENCH, "--format", "json")
    assert base.returncode == 0, base.stderr

    drift = cli(
        env, "drift", "--snapshot", "my-finetune", "--baseline-snapshot", SMOLLM2,
        "--fail-on", "regression", "--format", "json",
    )  # fmt: skip
    assert drift.returncode in (0, 1), drift.stderr
    result = json.loads(drift.stdout)
    pairs = {(c["benchmark"], c["new_run_id"]) for c in result["comparisons"]}
    assert {b for b, rid in pairs if rid == scored["run_id"]} >= {"bhed-caste", "bhed-religion"}
    regressions = [c for c in result["comparisons"] if c["verdict"] == "regression"]
    assert (drift.returncode == 1) == bool(regressions)
    pinned = toml.split('digest = "sha256:')[1][:64]
    changes = [f for c in result["comparisons"] for f in c["provenance_diff"]]
    assert any(pinned in str(f["new"]) and "local-dir:" in str(f["new"]) for f in changes)

    typo = cli(env, "drift", "--snapshot", "my-finetune", "--baseline-snapshot", "smollm2")
    assert typo.returncode == 2
    assert f"unknown snapshot 'smollm2' (did you mean {SMOLLM2}?)" in typo.stderr
    assert "no complete run" not in typo.stderr

    # One changed byte in a weight file refuses the run: one line, exit 2, store as it was.
    weights = folder / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-1] ^= 0x01
    weights.write_bytes(bytes(raw))
    before = digest(db)
    refused = cli(env, "run", "-s", "my-finetune", *BENCH)
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert lines[0].startswith("error: snapshot my-finetune: folder ../models/My Finetune changed")
    # The re-pin command as it runs from here: this folder is outside the working
    # directory, so its absolute path, quoted for the shell (tests/test_local_dir_digest.py
    # runs such a command).
    again = f"bias-monitor snapshots add {shlex.quote(str(folder))} --id my-finetune --force"
    assert lines[0].endswith(f"pin it again with {again}"), lines[0]
    assert digest(db) == before


def _config_folder(folder: Path, config: dict, *extra: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"not read by snapshots add")
    for name in extra:
        (folder / name).write_text("[]", encoding="utf-8")
    return folder


def _quick_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "snaps").mkdir(exist_ok=True)
    env = {**os.environ, "MONITOR_SNAPSHOTS_DIR": str(tmp_path / "snaps"), "NO_COLOR": "1"}
    env.pop("MONITOR_HOME", None)
    return env


def test_add_detects_the_kind_and_refuses_to_overwrite(tmp_path):
    env = _quick_env(tmp_path)
    cases = {
        "Gpt Causal": ({"architectures": ["LlamaForCausalLM"]}, (), "hf-causal"),
        "bert.mlm": ({"architectures": ["BertForMaskedLM"]}, (), "hf-mlm"),
        "encoder": ({"architectures": ["BertModel"]}, ("modules.json",), "sentence-transformers"),
    }
    for name, (config, extra, kind) in cases.items():
        folder = _config_folder(tmp_path / "models" / name, config, *extra)
        proc = cli(env, "snapshots", "add", str(folder))
        assert proc.returncode == 0, proc.stderr
        sid = {"Gpt Causal": "gpt-causal", "bert.mlm": "bert.mlm", "encoder": "encoder"}[name]
        text = (tmp_path / "snaps" / f"{sid}.toml").read_text(encoding="utf-8")
        assert f'kind = "{kind}"' in text and 'digest = "sha256:' in text

    listed = json.loads(cli(env, "snapshots", "list", "--format", "json").stdout)
    assert {s["id"]: s["kind"] for s in listed if s["source"]["type"] == "local-dir"} == {
        "gpt-causal": "hf-causal", "bert.mlm": "hf-mlm", "encoder": "sentence-transformers"
    }  # fmt: skip

    again = cli(env, "snapshots", "add", str(tmp_path / "models" / "Gpt Causal"))
    assert again.returncode == 2 and "exists; pass --force" in again.stderr
    forced = cli(env, "snapshots", "add", str(tmp_path / "models" / "Gpt Causal"), "--force")
    assert forced.returncode == 0, forced.stderr

    unknown = _config_folder(tmp_path / "models" / "vision", {"architectures": ["ViTModel"]})
    proc = cli(env, "snapshots", "add", str(unknown))
    assert proc.returncode == 2 and "give --kind" in proc.stderr
    assert not (tmp_path / "snaps" / "vision.toml").exists()
    assert not [p for p in (tmp_path / "snaps").iterdir() if p.name.startswith(".")]


def test_user_folder_is_searched_before_the_shipped_one(tmp_path):
    env = {**_quick_env(tmp_path), "MONITOR_SNAPSHOTS_DIR": str(tmp_path / "elsewhere")}
    mine = tmp_path / "mine"
    mine.mkdir()
    shipped = (REPO / "snapshots" / "gpt2.toml").read_text(encoding="utf-8")
    (mine / "my-gpt2.toml").write_text(
        shipped.replace('id = "gpt2"', 'id = "my-gpt2"').replace(
            'display_name = "', 'display_name = "mine: ', 1
        ),
        encoding="utf-8",
    )
    proc = cli(env, "snapshots", "list", "--format", "json", "--snapshots-dir", str(mine))
    assert proc.returncode == 0, proc.stderr
    listed = {s["id"]: s for s in json.loads(proc.stdout)}
    assert listed["my-gpt2"]["display_name"].startswith("mine: ")
    assert Path(listed["my-gpt2"]["folder"]) == mine
    assert Path(listed["gpt2"]["folder"]) == REPO / "snapshots"
    assert Path(listed[SMOLLM2]["folder"]) == REPO / "snapshots"  # shipped stay usable
    assert not any(s["default"] for s in listed.values())  # defaults: the user's only


def test_unknown_snapshot_and_revision_messages(tmp_path):
    env = _quick_env(tmp_path)
    proc = cli(env, "run", "-s", "smollm2", "-b", "bhed-caste", "--db", str(tmp_path / "m.db"))
    assert proc.returncode == 2 and not (tmp_path / "m.db").exists()
    assert (
        f"unknown snapshot 'smollm2' (did you mean {SMOLLM2}?); add one with "
        "bias-monitor snapshots add PATH" in proc.stderr
    )

    proc = cli(env, "snapshots", "add", "org/model", "--revision", "main", "--kind", "hf-causal")
    assert proc.returncode == 2 and "revision must be a 40-hex commit id" in proc.stderr
    assert "[0-9a-f]" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1

    (tmp_path / "snaps" / "bad.toml").write_text(
        'id = "bad"\nkind = "hf-causal"\ndisplay_name = "bad"\n[source]\ntype = "hf-hub"\n'
        'repo = "org/model"\nrevision = "12fd25f"\n',
        encoding="utf-8",
    )
    proc = cli(env, "snapshots", "list")
    assert proc.returncode == 2 and "revision must be a 40-hex commit id" in proc.stderr
    assert "[0-9a-f]" not in proc.stderr and "pattern" not in proc.stderr


def test_a_hub_cache_blob_that_does_not_match_its_name_is_refused(monitor_env, tmp_path):
    """In a Hugging Face cache a weight file links to blobs/<its sha256>; bytes that do
    not hash to that name are refused before loading."""
    revision = "5" * 40  # a test-only repo, not a claim about a real one
    repo = tmp_path / "hub" / "models--bias-monitor-test--tiny"
    snap = repo / "snapshots" / revision
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    config = json.dumps({"architectures": ["LlamaForCausalLM"]}).encode()
    for name, data, blob in (
        ("config.json", config, "c" * 40),  # a git object id: not checked
        ("model.safetensors", b"tampered", hashlib.sha256(b"original").hexdigest()),
    ):
        (repo / "blobs" / blob).write_bytes(data)
        (snap / name).symlink_to(Path("..", "..", "blobs", blob))
    env = {
        **_quick_env(tmp_path),
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HF_HUB_OFFLINE": "1",
    }
    added = cli(env, "snapshots", "add", "bias-monitor-test/tiny")  # revision from the cache
    assert added.returncode == 0, added.stderr
    assert f'revision = "{revision}"' in (tmp_path / "snaps" / "tiny.toml").read_text()

    db = tmp_path / "m.duckdb"
    proc = cli(env, "run", "-s", "tiny", "-b", "bhed-caste", "--no-controls", "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == errors[0]
    lines = errors
    assert "cached model.safetensors of bias-monitor-test/tiny@555555555555" in lines[0]
    assert "the hub recorded" in lines[0]


def test_library_progress_bars_write_no_carriage_returns_into_a_log(tmp_path):
    """transformers' GGUF dequantisation draws a bare tqdm bar; with stderr not a terminal
    the CLI turns such bars off before any backend imports tqdm."""
    code = (
        "import sys\n"
        "sys.argv = ['bias-monitor', 'snapshots', 'list']\n"
        "from monitor.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from tqdm.auto import tqdm\n"
        "for _ in tqdm(range(3), desc='Converting and de-quantizing GGUF tensors...'):\n"
        "    pass\n"
    )
    env = {**_quick_env(tmp_path), "TQDM_DISABLE": ""}
    del env["TQDM_DISABLE"]
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "de-quantizing" not in proc.stderr
