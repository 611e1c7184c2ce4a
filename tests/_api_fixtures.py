"""Fixtures of the API tests, loaded by ``pytest_plugins = ["_api_fixtures"]``.

``chat_server`` is the session's real vLLM server (``servers.vllm.vllm_server``). For
development against an already running server, ``MONITOR_TEST_VLLM_BASE_URL`` names it
instead (e.g. one started by ``scripts/vllm-serve``); CI leaves it unset.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import httpx
import pytest
from _api_support import CASTE_SAMPLE_ID, CASTE_SAMPLE_ITEMS, SERVED_NAME, ChatServer

REPO = Path(__file__).resolve().parents[1]


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


_SAMPLE_ENTRY = """
[benchmarks.{id}]
source = "indian-llms-bias"
format = "indian-bhed"
axis = "caste"
region = "india"
path = "indian-bhed-sample/Caste-first-{n}.csv"
url = "https://example.invalid/Caste-first-{n}.csv"
sha256 = "{sha}"
rows = {n}
"""


@pytest.fixture
def caste_sample(monitor_env, monkeypatch, shared_datasets) -> str:
    """A ``MONITOR_HOME`` whose manifest adds ``bhed-caste-sample`` (the header and first
    ``CASTE_SAMPLE_ITEMS`` rows of the pinned Caste.csv, byte for byte), added the way a
    user adds a benchmark, and a mirror folder the run imports it from; returns its id.

    Shipped snapshots stay where they are (copied into the home, so either reading of
    ``MONITOR_SNAPSHOTS_DIR`` finds them)."""
    lines = (shared_datasets / "indian-bhed" / "Caste.csv").read_bytes().splitlines(True)
    sample = b"".join(lines[: 1 + CASTE_SAMPLE_ITEMS])
    mirror = monitor_env / "sample-mirror"
    target = mirror / "indian-bhed-sample" / f"Caste-first-{CASTE_SAMPLE_ITEMS}.csv"
    target.parent.mkdir(parents=True)
    target.write_bytes(sample)
    home = monitor_env / "home"
    shutil.copytree(REPO / "data", home / "data")
    shutil.copytree(REPO / "snapshots", home / "snapshots")
    entry = _SAMPLE_ENTRY.format(
        id=CASTE_SAMPLE_ID, n=CASTE_SAMPLE_ITEMS, sha=hashlib.sha256(sample).hexdigest()
    )
    with (home / "data" / "benchmarks.toml").open("a", encoding="utf-8") as fh:
        fh.write(entry)
    monkeypatch.setenv("MONITOR_HOME", str(home))
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(mirror))
    return CASTE_SAMPLE_ID
