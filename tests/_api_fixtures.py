"""Fixtures of the API tests, loaded by ``pytest_plugins = ["_api_fixtures"]``.

``chat_server`` is the session's real vLLM server (``servers.vllm.vllm_server``). For
development against an already running server, ``MONITOR_TEST_VLLM_BASE_URL`` names it
instead (e.g. one started by ``scripts/vllm-serve``); CI leaves it unset.
"""

from __future__ import annotations

import os

import httpx
import pytest
from _api_support import AXES, SERVED_NAME, ChatServer

from monitor.benchmarks.items import LoadedBenchmark


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


@pytest.fixture
def bhed(monitor_env) -> list[LoadedBenchmark]:
    """The four Indian-BhED axes, fetched from the shared mirror into this test's cache."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(manifest, list(AXES))
    return load_benchmarks(list(AXES), errata="current", manifest=manifest)
