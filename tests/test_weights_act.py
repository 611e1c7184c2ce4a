"""A consumer repository whose fine-tunes live where teams keep them, checked under act with
the command a user types (``bias-monitor ci try``): green on unchanged weights, red on a
planted regression (issue 46).

One repository, one snapshot per weight source, every one pinned with ``snapshots add``:

* ``lfs-model``: a model folder committed with Git LFS, pushed to a local bare repository and
  cloned from it (the LFS files come back through the clone's smudge, as the workflow's
  ``lfs: true`` checkout fetches them; act then copies the checkout);
* ``hub-model``: a private, gated hub repository at a commit, read from a hub-layout cache;
* ``gguf-model``: a GGUF file in the repository (LFS too), converted and pinned by both digests;
* ``url-model``: the same GGUF at an address on the loopback address, pinned by its sha256.

The first pull request adds all four with SmolLM2's own weights: the check passes, each
scored and compared with the shipped SmolLM2. The second changes ``lfs-model`` and
``hub-model`` to a planted regression (SmolLM2 trained for a few steps on the benchmark's
stereotypical sentences) and drops the other two: the check must fail on the regression.
Measured here (2026-11-28, 19 min on the shared two cores): the first goes green, all four
sources scored and compared with no flagged change. The second is a strict ``xfail``: that
plant moves ``ull`` to 99.1% but ``cll``, drift's primary metric, only +3.3 pp (not
significant), because ``cll`` takes the target word's prior out; a contrastive plant
(stereotypical sentences up, anti-stereotypical down) is still to be built.
Not built: a planted regression for the GGUF and URL sources (writing a GGUF of the trained
weights needs a GGUF writer for llama tensors, which the project does not have); their
refusals of changed bytes are covered through the CLI in tests/test_weight_sources.py.

Marked ``act`` (its own pytest session; minutes: 8 scoring runs of SmolLM2 on bhed-caste,
and the planted model trained once per cache).
Needs git-lfs; without it the test is skipped, saying so.
"""

from __future__ import annotations

import ast
import csv
import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.act

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "consumer-repo"
SMOLLM2 = "smollm2-135m-instruct-q4"
HUB_REPO = "our-team/hub-model"
UNCHANGED_REV, PLANTED_REV = "a" * 40, "b" * 40  # test-only commits of a test-only repo
SOURCES = ("gguf-model", "hub-model", "lfs-model", "url-model")
PLANT_VERSION = "bhed-caste-stereo-2x16-1.5e-4-seed46"  # change with plant_regression
REGRESSION = "🔴 **regression**"  # the Markdown report's flagged-regression marker


def sh(*args: str | Path, cwd: Path | None = None, env: dict | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


def git(repo: Path, *args: str) -> str:
    return sh("git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", *args)


def stereotypical_sentences(mirror: Path) -> list[str]:
    """bhed-caste's stereotypical sentences (MASK filled with the stereotyped group)."""
    with (mirror / "indian-bhed" / "Caste.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [
        r["Sentence"].replace("MASK", ast.literal_eval(r["Target_Stereotypical"])[0]) for r in rows
    ]


def plant_regression(unchanged: Path, out: Path, sentences: list[str]) -> None:
    """SmolLM2 trained for a few steps on the stereotypical sentences: a model that prefers
    them, saved as a plain safetensors folder (what a fine-tune looks like)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(46)
    model = AutoModelForCausalLM.from_pretrained(unchanged, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(unchanged)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    optimiser = torch.optim.AdamW(model.parameters(), lr=1.5e-4)
    model.train()
    for _epoch in range(2):
        for i in range(0, len(sentences), 16):
            batch = tokenizer(sentences[i : i + 16], return_tensors="pt", padding=True)
            labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
            loss = model(**batch, labels=labels).loss
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def hub_revision(hub: Path, repo_id: str, revision: str, folder: Path) -> None:
    """``folder`` as ``repo_id`` at ``revision`` in a Hugging Face cache (blobs named by
    sha256, hard-linked; links to them)."""
    repo = hub / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / revision
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir(exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith((".", "bias-monitor-")):
            blob = repo / "blobs" / hashlib.sha256(path.read_bytes()).hexdigest()
            if not blob.exists():
                os.link(path, blob)
            (snap / path.name).symlink_to(Path("..", "..", "blobs", blob.name))


def model_files(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True)
    for path in src.iterdir():
        if path.is_file() and not path.name.startswith((".", "bias-monitor-")):
            shutil.copyfile(path, dst / path.name)


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # no request lines in the test's output
        pass


@pytest.fixture(scope="module")
def world(tmp_path_factory, session_cache, shared_datasets) -> Iterator[dict]:
    if shutil.which("git-lfs") is None:
        pytest.skip("git-lfs is not installed (apt-get install git-lfs)")
    from monitor.backends.loading import model_folder
    from monitor.snapshots.registry import load_snapshots

    root = tmp_path_factory.mktemp("weights-act")
    shipped = load_snapshots(REPO / "snapshots")[SMOLLM2]
    unchanged = model_folder(shipped, cache_dir=session_cache).folder
    spec = importlib.util.find_spec(shipped.source.module)
    gguf = Path(next(iter(spec.submodule_search_locations))) / shipped.source.file
    # Planted once per cache (minutes on two cores): kept beside the conversions.
    planted = session_cache / "test-planted" / PLANT_VERSION
    if not (planted / "model.safetensors").is_file():
        shutil.rmtree(planted, ignore_errors=True)
        plant_regression(unchanged, planted, stereotypical_sentences(shared_datasets))

    served = root / "served"
    served.mkdir()
    os.link(gguf, served / "tune.gguf")
    handler = functools.partial(Quiet, directory=str(served))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/tune.gguf"

    hub = root / "hub"
    hub_revision(hub, HUB_REPO, UNCHANGED_REV, unchanged)
    hub_revision(hub, HUB_REPO, PLANTED_REV, planted)
    env = {
        **os.environ,
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "HF_HUB_CACHE": str(hub),
        "NO_COLOR": "1",
    }
    for name in ("MONITOR_HOME", "MONITOR_SNAPSHOTS_DIR", "MONITOR_DB", "HF_TOKEN"):
        env.pop(name, None)
    try:
        yield {
            "root": root,
            "env": env,
            "unchanged": unchanged,
            "planted": planted,
            "gguf": gguf,
            "url": url,
        }
    finally:
        httpd.shutdown()
        httpd.server_close()
        shutil.rmtree(root, ignore_errors=True)


def add(env: dict, repo: Path, *args: str) -> None:
    sh(sys.executable, "-m", "monitor", "snapshots", "add", *args, cwd=repo, env=env)


def ci_try(env: dict, repo: Path, work: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "ci", "try", "--work", str(work), *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    (work.parent / f"{work.name}.log").write_text(proc.stdout + proc.stderr)
    return proc


@pytest.fixture(scope="module")
def repos(world) -> dict:
    """The author's repository (pushes to a local bare one) and the consumer's clone, with
    the four fine-tunes pinned, one per source, on SmolLM2's own weights."""
    root, env = world["root"], world["env"]
    env = {**env, "MONITOR_SNAPSHOTS_DIR": "snapshots"}
    bare, author, consumer = root / "origin.git", root / "author", root / "consumer"
    sh("git", "init", "--quiet", "--bare", "--initial-branch=main", bare)
    shutil.copytree(EXAMPLE, author)
    (author / "snapshots" / "my-finetune.toml").unlink()
    git(author, "init", "--quiet", "-b", "main")
    git(author, "lfs", "install", "--local")
    git(author, "lfs", "track", "models/**")
    model_files(world["unchanged"], author / "models" / "lfs-model")
    shutil.copyfile(world["gguf"], author / "models" / "gguf-model.gguf")
    add(env, author, "models/lfs-model", "--id", "lfs-model")
    add(env, author, "models/gguf-model.gguf", "--id", "gguf-model")
    add(env, author, HUB_REPO, "--revision", UNCHANGED_REV, "--gated", "--id", "hub-model")
    sha = hashlib.sha256(world["gguf"].read_bytes()).hexdigest()
    add(env, author, world["url"], "--sha256", sha, "--id", "url-model")
    git(author, "add", "-A")
    git(author, "commit", "--quiet", "-m", "four fine-tunes, four sources")
    git(author, "remote", "add", "origin", f"file://{bare}")
    git(author, "push", "--quiet", "origin", "main")
    sh("git", "clone", "--quiet", f"file://{bare}", consumer)
    weights = consumer / "models" / "lfs-model" / "model.safetensors"
    assert weights.stat().st_size > 1 << 20, "the clone holds LFS pointers, not the weights"
    stored = git(consumer, "lfs", "ls-files", "--name-only").split()
    assert "models/lfs-model/model.safetensors" in stored  # with LFS, not as git objects

    return {"root": root, "env": env, "author": author, "consumer": consumer}


def test_each_weight_source_goes_green_on_unchanged_weights(repos):
    root, env, consumer = repos["root"], repos["env"], repos["consumer"]
    green = ci_try(env, consumer, root / "green")
    log = green.stdout + green.stderr
    assert green.returncode == 0, "\n".join(log.splitlines()[-80:])
    out = root / "green" / "out"
    assert sorted((out / "scored.txt").read_text().split()) == sorted([*SOURCES, SMOLLM2])
    summary = (out / "summary.md").read_text()
    for sid in SOURCES:
        assert f"bias-monitor: {sid} vs {SMOLLM2}" in summary
    assert REGRESSION not in summary  # the same weights as the baseline, four ways
    assert "bias check passed" in green.stderr


@pytest.mark.xfail(
    strict=True,
    reason="measured 2026-11-28: the planted model (trained on the stereotypical sentences) "
    "moves ull to 99.1% but cll, drift's primary metric, only +3.3 pp balanced (p 0.22), "
    "since cll takes out the target word's prior; the plant must be contrastive",
)
def test_a_planted_regression_in_the_repository_or_on_the_hub_turns_the_check_red(world, repos):
    root, env = repos["root"], repos["env"]
    author, consumer = repos["author"], repos["consumer"]
    # The pull request: two fine-tunes become the planted regression; the GGUF and the
    # address leave the check.
    shutil.rmtree(author / "models" / "lfs-model")
    model_files(world["planted"], author / "models" / "lfs-model")
    add(env, author, "models/lfs-model", "--id", "lfs-model", "--force")
    add(env, author, HUB_REPO, "--revision", PLANTED_REV, "--gated", "--id", "hub-model", "--force")
    for sid in ("gguf-model", "url-model"):
        (author / "snapshots" / f"{sid}.toml").unlink()
    git(author, "add", "-A")
    git(author, "commit", "--quiet", "-m", "planted regression")
    git(author, "push", "--quiet", "origin", "main")
    git(consumer, "pull", "--quiet", "--ff-only")

    red = ci_try(env, consumer, root / "red", "--base", "HEAD~1")
    log = red.stdout + red.stderr
    assert red.returncode == 1, "\n".join(log.splitlines()[-80:])
    out = root / "red" / "out"
    assert sorted((out / "scored.txt").read_text().split()) == sorted(
        ["hub-model", "lfs-model", SMOLLM2]
    )
    summary = (out / "summary.md").read_text()
    for sid in ("hub-model", "lfs-model"):
        section = summary.split(f"bias-monitor: {sid} vs {SMOLLM2}", 1)[1]
        section = section.split("bias-monitor: ", 1)[0]  # up to the next comparison
        assert REGRESSION in section, section[:2000]
    assert "bias check failed (exit 1)" in red.stderr
