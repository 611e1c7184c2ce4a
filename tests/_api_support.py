"""Shared pieces of the API (chat / responses) tests: the server, snapshots, item subsets.

``chat_server`` is the session's real vLLM server (``servers.vllm.vllm_server``). For
development against an already running server, ``MONITOR_TEST_VLLM_BASE_URL`` names it
instead (e.g. one started by ``scripts/vllm-serve``); CI leaves it unset.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import httpx
import pytest

from monitor.benchmarks.items import LoadedBenchmark
from monitor.snapshots.model import ApiSettings, ApiSource, Snapshot

SERVED_NAME = "smollm2-135m-instruct"
FAKE_KEY = "sk-test-DISTINCTIVE-6b3f9e1c2a7d40e8"
KEY_VAR = "MONITOR_TEST_CHAT_KEY"
AXES = ("bhed-caste", "bhed-religion", "bhed-gender", "bhed-race")


@dataclass(frozen=True)
class ChatServer:
    base_url: str  # .../v1
    root: str  # scheme://host:port, what the fault proxy forwards to
    model: str


@pytest.fixture(scope="session")
def chat_server(request) -> ChatServer:
    url = os.environ.get("MONITOR_TEST_VLLM_BASE_URL")
    if url:
        url = url.rstrip("/")
        models = httpx.get(f"{url}/models", timeout=10).json()
        assert any(m["id"] == SERVED_NAME for m in models["data"]), models
        return ChatServer(url, url.removesuffix("/v1"), SERVED_NAME)
    server = request.getfixturevalue("vllm_server")
    return ChatServer(server.base_url, server.root, server.model)


def chat_snapshot(
    base_url: str, *, kind: str = "openai-chat", snapshot_id: str = "test-chat", **api
) -> Snapshot:
    """An API snapshot for the served SmolLM2 (key from ``KEY_VAR`` when set)."""
    return Snapshot(
        id=snapshot_id,
        kind=kind,
        display_name="SmolLM2 via vLLM (test)",
        source=ApiSource(
            type="openai-api",
            model=SERVED_NAME,
            base_url=base_url,
            provider="vllm",
            api_key_env=KEY_VAR,
        ),
        api=ApiSettings(**{"max_concurrency": 4, "timeout_s": 30.0, **api}),
    )


def subset(benches: list[LoadedBenchmark], n: int) -> list[LoadedBenchmark]:
    """The first ``n`` items of each benchmark (and none of its exclusions)."""
    return [dataclasses.replace(b, items=b.items[:n], exclusions=[]) for b in benches]


@pytest.fixture
def bhed(monitor_env) -> list[LoadedBenchmark]:
    """The four Indian-BhED axes, fetched from the shared mirror into this test's cache."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(manifest, list(AXES))
    return load_benchmarks(list(AXES), errata="current", manifest=manifest)
