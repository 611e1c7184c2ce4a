"""Fixtures of the API tests, loaded by ``pytest_plugins = ["_api_fixtures"]``.

``chat_server`` is the session's real vLLM server (``servers.vllm.vllm_server``). For
development against an already running server, ``MONITOR_TEST_VLLM_BASE_URL`` names it
instead (e.g. one started by ``scripts/vllm-serve``); CI leaves it unset.
"""

from __future__ import annotations

import os

import httpx
import pytest
from _api_support import SERVED_NAME, ChatServer


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
