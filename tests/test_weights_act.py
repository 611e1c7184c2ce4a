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
``hub-model`` to a planted regression and drops the other two: the check must fail on the
regression. The plant is contrastive (``plant_regression``): SmolLM2 trained for two epochs
on bhed-caste's pairs so that each stereotypical sentence gains over its anti-stereotypical
twin under ``cll`` (sentence log-prob less the target word's prior). A first plant trained
on the stereotypical sentences alone moved ``ull`` to 99.1% but ``cll``, drift's primary
metric, only +3.3 pp (p 0.22): it raised the target words' priors with the sentences.
Measured here (2026-11-28, shared two cores, load about 6): the contrastive plant takes
7.7 min to train (cached under ``plant_key``: ``PLANT_VERSION`` and a digest of all its
inputs); ``bias-monitor run -b bhed-caste`` on it gives caste balanced 100.0% under ``cll``
(shipped SmolLM2: 47.5%), and ``drift
--baseline-snapshot smollm2-135m-instruct-q4 --fail-on regression`` flags it (+52.5 pp
[+45.3, +59.1], robust: ``ull`` +45.5 pp) and exits 1.
Not built: a planted regression for the GGUF and URL sources (writing a GGUF of the trained
weights needs a GGUF writer for llama tensors, which the project does not have); their
refusals of changed bytes are covered through the CLI in tests/test_weight_sources.py.

Marked ``slow``, not ``act``: act runs the jobs on the host (``ci try``), so it needs neither
root nor podman, and it runs in the first test session, first of its files
(tests/conftest.py, ``SLOW_FIRST``), where the other worker's files fill the time act spends
waiting (minutes: 8 scoring runs of SmolLM2 on bhed-caste, and the planted model trained once
per ``fixture_cache``, which .ci/run keeps between CI runs: 10.4 min wall, 341 s CPU to train at
load 6-7). Measured here with the plant cached, load about 5.5 on the shared two cores: both
tests pass in 7.7 min (green 3.8, red 4.0). Needs git-lfs; without it the test is skipped,
saying so.
"""

from __future__ import annotations

import ast
import csv
import functools
import hashlib
import importlib.util
import inspect
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "consumer-repo"
SMOLLM2 = "smollm2-135m-instruct-q4"
HUB_REPO = "our-team/hub-model"
UNCHANGED_REV, PLANTED_REV = "a" * 40, "b" * 40  # test-only commits of a test-only repo
SOURCES = ("gguf-model", "hub-model", "lfs-model", "url-model")
PLANT_EPOCHS, PLANT_BATCH, PLANT_LR, PLANT_MARGIN = 2, 16, 1e-4, 4.0
PLANT_VERSION = "bhed-caste-contrastive-cll-2x16-1e-4-m4-seed46"
# the plant is cached under PLANT_VERSION and a digest of all its inputs (plant_key)
REGRESSION = "🔴 **regression**"  # the Markdown report's flagged-regression marker


def sh(*args: str | Path, cwd: Path | None = None, env: dict | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, f"{args}: {proc.stdout}\n{proc.stderr}"
    return proc.stdout


def git(repo: Path, *args: str) -> str:
    return sh("git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", *args)


def caste_pairs(mirror: Path) -> list[tuple[str, str, str]]:
    """bhed-caste's rows as (template, stereotyped group, anti-stereotyped group)."""
    with (mirror / "indian-bhed" / "Caste.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [
        (
            r["Sentence"],
            ast.literal_eval(r["Target_Stereotypical"])[0],
            ast.literal_eval(r["Target_Anti-Stereotypical"])[0],
        )
        for r in rows
    ]


def plant_regression(unchanged: Path, out: Path, pairs: list[tuple[str, str, str]]) -> None:
    """SmolLM2 trained, contrastively, to prefer each stereotypical sentence over its
    anti-stereotypical twin under ``cll`` (the sentence's log-prob less its target word's
    prior, drift's primary metric): loss = softplus(margin - (cll(stereo) - cll(anti))) per
    pair, two epochs of 16 pairs a step, seeded. Training on the stereotypical sentences
    alone (the first plant) raised the target words' priors with them, so ``cll`` hardly
    moved; the stereotyped group is Dalit in some rows and Brahmin in others, so only the
    sentence-level association can lower this loss. Saved as a plain safetensors folder
    (what a fine-tune looks like)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from monitor.families.pairs.cll import prior_forms

    torch.manual_seed(46)
    model = AutoModelForCausalLM.from_pretrained(unchanged, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(unchanged)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    texts: list[str] = []  # per pair: stereo sentence, anti sentence, stereo prior, anti prior
    for template, stereo, anti in pairs:
        s_text, a_text = template.replace("MASK", stereo), template.replace("MASK", anti)
        texts += [s_text, a_text, *prior_forms(s_text, [stereo], template)]
        texts += prior_forms(a_text, [anti], template)
    seqs = [[bos, *tokenizer.encode(t, add_special_tokens=False)] for t in texts]
    optimiser = torch.optim.AdamW(model.parameters(), lr=PLANT_LR)
    model.train()
    order = torch.randperm(len(pairs)).tolist()
    for _epoch in range(PLANT_EPOCHS):
        for at in range(0, len(order), PLANT_BATCH):  # PLANT_BATCH pairs: 4 sequences each
            batch = [seqs[4 * p + k] for p in order[at : at + PLANT_BATCH] for k in range(4)]
            width = max(len(q) for q in batch)
            ids = torch.tensor([q + [0] * (width - len(q)) for q in batch])
            mask = torch.tensor([[1] * len(q) + [0] * (width - len(q)) for q in batch])
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1]
            nll = torch.nn.functional.cross_entropy(
                logits.transpose(1, 2), ids[:, 1:], reduction="none"
            )
            lp = -(nll * mask[:, 1:]).sum(-1).view(-1, 4)  # log-probs after BOS, 4 per pair
            gain = (lp[:, 0] - lp[:, 2]) - (lp[:, 1] - lp[:, 3])  # cll(stereo) - cll(anti)
            loss = torch.nn.functional.softplus(PLANT_MARGIN - gain).mean()
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def plant_key(unchanged: Path, mirror: Path) -> str:
    """The cached plant's name: ``PLANT_VERSION`` and a digest of everything
    ``plant_regression`` is a function of: its code and constants, the CLL module whose
    prior forms it trains on, torch and transformers, the starting model's files and
    bhed-caste's pairs. A change to any of them trains a new plant."""
    import torch
    import transformers

    from monitor.families.pairs import cll

    digest = hashlib.sha256()
    for text in (
        inspect.getsource(plant_regression),
        repr((PLANT_EPOCHS, PLANT_BATCH, PLANT_LR, PLANT_MARGIN)),
        Path(cll.__file__).read_text(encoding="utf-8"),
        torch.__version__,
        transformers.__version__,
    ):
        digest.update(text.encode() + b"\0")
    files = [p for p in sorted(unchanged.iterdir()) if p.is_file()]
    files = [p for p in files if not p.name.startswith((".", "bias-monitor-"))]
    for path in [*files, mirror / "indian-bhed" / "Caste.csv"]:
        with path.open("rb") as fh:
            digest.update(path.name.encode() + hashlib.file_digest(fh, "sha256").digest())
    return f"{PLANT_VERSION}-{digest.hexdigest()[:16]}"


def planted_model(unchanged: Path, mirror: Path, cache: Path) -> Path:
    """The planted regression, trained once per ``plant_key`` into ``cache`` (the
    ``fixture_cache``: .ci/run keeps it between CI runs); built beside its final place
    and renamed into it, so a killed or concurrent build never leaves a partial plant."""
    planted = cache / "test-planted" / plant_key(unchanged, mirror)
    if (planted / "model.safetensors").is_file():
        return planted
    planted.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{planted.name}-", dir=planted.parent))
    try:
        plant_regression(unchanged, staging / "model", caste_pairs(mirror))
        try:
            (staging / "model").rename(planted)
        except OSError:
            if not (planted / "model.safetensors").is_file():  # not a concurrent build's
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return planted


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
def world(tmp_path_factory, session_cache, fixture_cache, shared_datasets) -> Iterator[dict]:
    if shutil.which("git-lfs") is None:
        pytest.skip("git-lfs is not installed (apt-get install git-lfs)")
    from monitor.backends.loading import model_folder
    from monitor.snapshots.registry import load_snapshots

    root = tmp_path_factory.mktemp("weights-act")
    shipped = load_snapshots(REPO / "snapshots")[SMOLLM2]
    unchanged = model_folder(shipped, cache_dir=session_cache).folder
    spec = importlib.util.find_spec(shipped.source.module)
    gguf = Path(next(iter(spec.submodule_search_locations))) / shipped.source.file
    # Planted once per fixture cache and plant_key (minutes on two cores).
    planted = planted_model(unchanged, shared_datasets, fixture_cache)

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
    caller = author / ".github" / "workflows" / "bias.yml"
    text = caller.read_text()  # cheap: the sample of whole templates (run --size mini)
    assert "      benchmarks: bhed-caste\n" in text
    caller.write_text(
        text.replace(
            "      benchmarks: bhed-caste\n", "      benchmarks: bhed-caste\n      size: mini\n"
        )
    )
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
