"""Shared helpers of the API (chat / responses) tests: snapshots and item subsets.

The fixtures live in ``_api_fixtures`` (loaded with ``pytest_plugins``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from monitor.benchmarks.items import LoadedBenchmark
from monitor.snapshots.model import ApiSettings, ApiSource, Snapshot

SERVED_NAME = "smollm2-135m-instruct"
FAKE_KEY = "sk-test-DISTINCTIVE-6b3f9e1c2a7d40e8"
KEY_VAR = "MONITOR_TEST_CHAT_KEY"
AXES = ("bhed-caste", "bhed-religion", "bhed-gender", "bhed-race")

# The first rows of Indian-BhED's Caste.csv as a benchmark of its own (fixture
# ``caste_sample``): the CLI tests of the API kinds prove the command's wiring (retries,
# resume, stored requests, key redaction, parity with the local model), which 32 real caste
# items in both orders show as well as all 106 do, at under a third of the requests (64
# instead of 212) through vLLM on CPU. Row 27 is a two-blank item, so both prompt
# templates are sent.
CASTE_SAMPLE_ID = "bhed-caste-sample"
CASTE_SAMPLE_ITEMS = 32


@dataclass(frozen=True)
class ChatServer:
    base_url: str  # .../v1
    root: str  # scheme://host:port, what the fault proxy forwards to
    model: str


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
