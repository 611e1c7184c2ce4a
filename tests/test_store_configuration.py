"""The measurement configuration: derived from stored provenance, one key per configuration,
and the store's configuration groups (complete runs only, ``--repeat`` groups kept whole)."""

from __future__ import annotations

from datetime import UTC, datetime

from monitor.benchmarks.items import Item
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.readmodel.configuration import (
    changed_fields,
    configuration_key,
    describe_changes,
    measurement_configuration,
)
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store

VERSION = "synthetic@000000000000:000000000000:errata-none"
APRIL_API = {
    "provider": "openai",
    "endpoint": "chat.completions",
    "model_requested": "gpt-4",
    "max_tokens": 10,
    "seed": 1,
    "temperature": 0,
    "top_logprobs": 20,
    "reported_model": "unknown",
}


def _run(**kw) -> dict:
    base = {
        "snapshot_kind": "openai-api",
        "snapshot_revision": "gpt-4",
        "metric": "forced-choice-top20-imported",
        "metric_version": "study-1",
        "origin": "imported",
        "fingerprint": "file-hash",
        "seed": 0,
        "dataset_versions": {"bhed-caste": {"benchmark_version": ["v1"]}},
        "environment": {"api": dict(APRIL_API), "prompt_template": "P1", "option_order": "random"},
    }
    base.update(kw)
    return base


def test_imported_runs_of_one_configuration_share_a_key_whatever_their_files():
    a, b = _run(fingerprint="one-file"), _run(fingerprint="another-file")
    assert configuration_key(measurement_configuration(a)) == configuration_key(
        measurement_configuration(b)
    )
    # What the server reported or the importer's own facts are not configuration.
    c = _run(environment={**a["environment"], "import": {"source_commit": "x"}})
    assert measurement_configuration(c) == measurement_configuration(a)


def test_model_api_and_prompt_changes_are_named():
    april = measurement_configuration(_run())
    env = {
        "api": {**APRIL_API, "endpoint": "responses", "model_requested": "gpt-4o"},
        "prompt_template": "P2",
        "option_order": "random",
    }
    july = measurement_configuration(_run(snapshot_revision="gpt-4o", environment=env))
    assert configuration_key(april) != configuration_key(july)
    assert changed_fields(april, july) == ["model", "API", "prompt"]
    assert describe_changes(april, july) == [
        ("model", "gpt-4", "gpt-4o"),
        ("API", "chat.completions", "responses"),
        ("prompt", None, None),
    ]


def test_local_and_api_runs():
    local = _run(
        snapshot_kind="hf-causal",
        origin="local",
        environment={"packages": {"torch": "2.13.0"}},
        dtype="float32",
        device="cpu",
    )
    cfg = measurement_configuration(local)
    assert cfg["parameters"] == {"seed": 0, "dtype": "float32", "device": "cpu"}
    assert cfg["scorer"] is None
    newer_torch = {**local, "environment": {"packages": {"torch": "2.14.0"}}}
    assert measurement_configuration(newer_torch) == cfg  # environment is not configuration
    # A run the monitor scored through an API records its prompts only in its fingerprint.
    api = _run(origin="api", fingerprint="fp-1")
    assert measurement_configuration(api)["scorer"] == "fp-1"
    assert configuration_key(measurement_configuration(api)) != configuration_key(
        measurement_configuration(_run(origin="api", fingerprint="fp-2"))
    )


def _items() -> list[Item]:
    out = []
    for i in range(20):
        s, a = f"person {i} picked red.", f"person {i} picked blue."
        out.append(
            PairItem(
                item_id=make_item_id(VERSION, s, a),
                benchmark="synthetic-caste",
                axis="caste",
                region="india",
                benchmark_version=VERSION,
                source_row=i,
                text_stereo=s,
                text_anti=a,
                targets_stereo=("red",),
                targets_anti=("blue",),
                template=f"person {i} picked MASK.",
            )
        )
    return out


def _write(store: Store, run_id: str, day: int, **kw) -> None:
    items = _items()
    fields = {
        "snapshot_id": "s",
        "snapshot_kind": "hf-causal",
        "snapshot_revision": "rev",
        "snapshot_manifest": {"id": "s"},
        "metric": "cll",
        "metric_version": "2",
        "benchmarks": ["synthetic-caste"],
        "dataset_versions": {"synthetic-caste": {"label": VERSION}},
        "fingerprint": f"fp-{run_id}",
        "trigger": "manual",
        "started_at": datetime(2025, 1, day, tzinfo=UTC),
        "environment": {"packages": {}},
        "status": "complete",
        **kw,
    }
    run = RunRecord(run_id=run_id, **fields)
    scores = [ScoreRow(it.item_id, "cll", "2", "stereo", 1.0) for it in items]
    store.record_run(run, items=items, scores=scores, exclusions=[])


def test_configuration_groups_in_the_store(store_db):
    """On a DuckDB file and on each lake (``store_db``)."""
    store = Store(store_db)
    _write(store, "a1", 1)
    _write(store, "a2", 2)
    _write(store, "bad", 3, status="quarantined")
    _write(store, "b1", 4, dtype="bfloat16")
    # A --repeat group whose recorded configuration differs still stays one group.
    _write(store, "r1", 5, dtype="float16", repeat_group="g", repeat_index=0)
    _write(store, "r2", 5, dtype="float16", device="cuda", repeat_group="g", repeat_index=1)
    with store.read() as view:
        groups = view.configuration_groups("s")
        run = view.run("a1")
    assert [g.run_ids for g in groups] == [("a1", "a2"), ("b1",), ("r1", "r2")]
    assert [g.is_repeat_group for g in groups] == [True, False, True]
    assert groups[0].key == run.configuration_key and groups[0].latest == "a2"
