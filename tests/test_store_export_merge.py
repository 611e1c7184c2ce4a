"""Parquet export of a run, and merging shards (exports and .duckdb stores) into a store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_store_support import (
    STORE_TABLES,
    make_api_request,
    make_exclusions,
    make_items,
    make_measures,
    make_run,
    make_score,
    snapshot_tables,
    table_rows,
)

from monitor.errors import DataIntegrityError, UserInputError
from monitor.store import schema
from monitor.store.db import Store
from monitor.store.export import export_run, sha256_file, verify_export
from monitor.store.merge import merge


def _finished_run(store: Store, run_id: str, items, salt: float = 0.0) -> None:
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run(run_id))
        store.add_scores(run_id, [make_score(i, salt) for i in items])
        store.add_exclusions(run_id, make_exclusions(2))
        store.finish_run(run_id, "complete", make_measures(), len(items), 2, notes="nightly")
        store.add_validation(run_id, "results", True, {"checks": 4, "failed": []})


def _run_rows(store: Store | Path, run_id: str) -> dict[str, list[tuple]]:
    """Every stored row that belongs to one run (items: the ones it scored), read through
    the store's own connection (a DuckDB file or a lake); a path is a file store, opened
    for reading (as the CI-script and rebuild tests pass theirs)."""
    if not isinstance(store, Store):
        store = Store.for_reading(store)
    with store._connect() as con:
        out = {}
        for table in STORE_TABLES:
            if table == "items":
                sql = (
                    "SELECT * FROM items WHERE item_id IN (SELECT item_id FROM scores WHERE "
                    "run_id = $1 UNION SELECT item_id FROM api_requests WHERE run_id = $1)"
                )
            else:
                sql = f"SELECT * FROM {table} WHERE run_id = ?"
            rows = con.sql(sql, params=[run_id]).to_arrow_table().to_pylist()
            out[table] = sorted(tuple(repr(v) for v in r.values()) for r in rows)
        return out


def _tables(store: Store) -> dict[str, list[tuple]]:
    """Every row of every table (``snapshot_tables`` through the store's connection)."""
    with store._connect() as con:
        return {
            table: sorted(
                tuple(repr(v) for v in row.values())
                for row in con.sql(f"SELECT * FROM {table}").to_arrow_table().to_pylist()
            )
            for table in (*STORE_TABLES, "schema_migrations")
        }


@pytest.fixture
def source(tmp_path) -> Store:
    store = Store(tmp_path / "source.duckdb")
    _finished_run(store, "run-a", make_items(8))
    _finished_run(store, "run-b", make_items(5), salt=0.5)  # shares 5 items with run-a
    return store


@pytest.fixture
def target(store_db) -> Store:
    """The store a merge writes into: a DuckDB file, and each lake (``store_db``)."""
    return Store(store_db)


def test_export_writes_parquet_per_table_and_a_checked_manifest(source, tmp_path):
    folder = export_run(source, "run-a", tmp_path / "out")
    assert folder == tmp_path / "out" / "run-a"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["run_id"] == "run-a" and manifest["schema_version"] == source.schema_version
    expected_rows = {
        "runs": 1,
        "items": 8,
        "scores": 8,
        "exclusions": 2,
        "axis_measures": 2,
        "validations": 1,
        "api_requests": 0,
        "api_batches": 0,
        "embeddings": 0,
    }
    assert {t: e["rows"] for t, e in manifest["tables"].items()} == expected_rows
    for entry in manifest["tables"].values():
        assert sha256_file(folder / entry["file"]) == entry["sha256"]
    assert verify_export(folder).files.keys() == expected_rows.keys()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run-a"]  # no temp left


def test_export_refuses_running_runs_and_existing_folders(source, tmp_path):
    source.begin_run(make_run("run-live"))
    with pytest.raises(UserInputError, match="still running"):
        export_run(source, "run-live", tmp_path / "out")
    export_run(source, "run-a", tmp_path / "out")
    with pytest.raises(UserInputError, match="already exists"):
        export_run(source, "run-a", tmp_path / "out")
    assert export_run(source, "run-a", tmp_path / "out", overwrite=True).is_dir()


def test_export_merge_round_trip_gives_identical_rows(source, target, tmp_path):
    folder = export_run(source, "run-a", tmp_path / "out")
    report = merge(target, [folder])
    assert report.runs_added == ["run-a"] and report.items_added == 8
    assert "1 run(s) added" in str(report)
    assert json.loads(json.dumps(report.to_json()))["sources"][0]["source"] == str(folder)
    assert _run_rows(target, "run-a") == _run_rows(source, "run-a")
    assert target.scores("run-a") == source.scores("run-a")
    assert target.get_run("run-a") == source.get_run("run-a")

    before = _tables(target)
    again = merge(target, [folder])
    assert again.runs_added == [] and again.runs_skipped == ["run-a"]
    assert again.sources[0].notes == []
    assert _tables(target) == before
    # Exported again from the store it was merged into (a lake too), the run is the same.
    back = Store(tmp_path / "back.duckdb")
    merge(back, [export_run(target, "run-a", tmp_path / "again")])
    assert _run_rows(back, "run-a") == _run_rows(source, "run-a")


def test_merge_of_a_duckdb_shard_and_a_folder_of_exports(source, tmp_path):
    target = Store(tmp_path / "target.duckdb")
    report = merge(target, [source.path])
    assert sorted(report.runs_added) == ["run-a", "run-b"]
    assert report.sources[0].kind == "duckdb" and report.items_added == 8
    for run_id in ("run-a", "run-b"):
        assert _run_rows(target, run_id) == _run_rows(source, run_id)
    export_run(source, "run-a", tmp_path / "shards")
    export_run(source, "run-b", tmp_path / "shards")
    report = merge(target, [tmp_path / "shards"])  # a CI artifact folder of shards
    assert sorted(report.runs_skipped) == ["run-a", "run-b"] and report.runs_added == []


def test_conflicting_run_id_is_refused_and_target_unchanged(source, target, tmp_path):
    merge(target, [source.path])
    before = _tables(target)

    impostor = Store(tmp_path / "impostor.duckdb")
    _finished_run(impostor, "run-a", make_items(8), salt=9.0)  # same id, other scores
    _finished_run(impostor, "run-new", make_items(3))
    folder = export_run(impostor, "run-new", tmp_path / "out")
    with pytest.raises(UserInputError) as exc:
        merge(target, [folder, impostor.path])  # the good shard first: still nothing written
    assert "run-a" in str(exc.value) and "scores" in str(exc.value)
    assert "\n" not in str(exc.value)
    assert _tables(target) == before


def test_two_shards_with_one_run_id_but_different_content_are_refused(source, tmp_path):
    other = Store(tmp_path / "other.duckdb")
    _finished_run(other, "run-a", make_items(8), salt=1.0)
    target = Store(tmp_path / "target.duckdb")
    before = snapshot_tables(target.path)
    with pytest.raises(UserInputError, match="run-a"):
        merge(target, [source.path, other.path])
    assert snapshot_tables(target.path) == before


def test_lifecycle_changes_after_a_merge_are_kept_and_reported(source, target, tmp_path):
    folder = export_run(source, "run-a", tmp_path / "out")
    merge(target, [folder])
    target.set_status("run-a", "quarantined", notes="failed results suite")
    report = merge(target, [folder])
    assert report.runs_skipped == ["run-a"]
    assert any("lifecycle" in note for note in report.sources[0].notes)
    assert target.get_run("run-a")["status"] == "quarantined"


def test_tampered_parquet_is_detected_before_reading(source, tmp_path):
    folder = export_run(source, "run-a", tmp_path / "out")
    target = Store(tmp_path / "target.duckdb")
    before = snapshot_tables(target.path)
    scores = folder / "scores.parquet"
    data = bytearray(scores.read_bytes())
    data[len(data) // 2] ^= 0xFF
    scores.write_bytes(bytes(data))
    with pytest.raises(DataIntegrityError) as exc:
        merge(target, [folder])
    assert "scores.parquet" in str(exc.value) and "sha256" in str(exc.value)
    assert snapshot_tables(target.path) == before


def test_row_count_mismatch_in_manifest_is_detected(source, tmp_path):
    folder = export_run(source, "run-a", tmp_path / "out")
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["tables"]["exclusions"]["rows"] = 1
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(DataIntegrityError, match=r"exclusions\.parquet has 2 rows"):
        merge(Store(tmp_path / "target.duckdb"), [folder])


def test_missing_or_odd_sources_are_refused(source, tmp_path):
    target = Store(tmp_path / "target.duckdb")
    with pytest.raises(UserInputError, match="does not exist"):
        merge(target, [tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserInputError, match="no export folder"):
        merge(target, [tmp_path / "empty"])
    with pytest.raises(UserInputError, match="into itself"):
        merge(target, [target.path])


def test_older_schema_shards_are_migrated_on_merge(source, tmp_path, monkeypatch):
    old = len(schema.MIGRATIONS)
    folder = export_run(source, "run-a", tmp_path / "out")  # written at the current schema
    monkeypatch.setattr(
        schema,
        "MIGRATIONS",
        [
            *schema.MIGRATIONS,
            (old + 1, "scores gain a flag", "ALTER TABLE scores ADD flagged BOOLEAN DEFAULT false"),
        ],
    )
    target = Store(tmp_path / "target.duckdb")
    assert target.schema_version == old + 1
    report = merge(target, [folder, source.path])  # an old export and an old .duckdb store
    assert report.runs_added == ["run-a", "run-b"] and report.runs_skipped == ["run-a"]
    assert [s.schema_version for s in report.sources] == [old, old]
    rows = target.scores("run-a")
    assert len(rows) == 8 and {r["flagged"] for r in rows} == {False}
    assert len(table_rows(target.path, "scores")) == 13


def test_export_from_a_newer_schema_is_refused(source, tmp_path):
    folder = export_run(source, "run-a", tmp_path / "out")
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["schema_version"] = 99
    manifest_path.write_text(json.dumps(manifest))
    target = Store(tmp_path / "target.duckdb")
    with pytest.raises(UserInputError, match="99, newer"):
        merge(target, [folder])
    assert target.list_runs() == []


def _api_run(store: Store, run_id: str, items, answer: str = "A") -> None:
    """A finished API run: requests in both option orders, one of them via a batch."""
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run(run_id, fingerprint="fp-api", snapshot_id="toy-api"))
        store.add_api_batch(
            run_id,
            "batch-1",
            endpoint="/v1/chat/completions",
            input_file_id="file-in",
            request_keys=[f"{i.item_id}/stereo-first/0" for i in items],
        )
        store.add_api_requests(
            run_id,
            [make_api_request(i, o, answer) for i in items for o in ("stereo-first", "anti-first")],
        )
        store.update_api_batch("batch-1", "ingested", output_file_id="file-out")
        store.add_scores(run_id, [make_score(i) for i in items[:-1]])  # one item undecided
        store.finish_run(run_id, "complete", make_measures(), len(items) - 1, 0)


def test_api_requests_and_batches_travel_with_a_shard(tmp_path):
    source = Store(tmp_path / "source.duckdb")
    items = make_items(4)
    _api_run(source, "run-api", items)
    folder = export_run(source, "run-api", tmp_path / "out")
    manifest = json.loads((folder / "manifest.json").read_text())
    rows = {t: e["rows"] for t, e in manifest["tables"].items()}
    # The undecided item has no score but its requests still need their item row.
    assert (rows["api_requests"], rows["api_batches"], rows["items"], rows["scores"]) == (
        8,
        1,
        4,
        3,
    )

    target = Store(tmp_path / "target.duckdb")
    merge(target, [folder])
    assert _run_rows(target, "run-api") == _run_rows(source, "run-api")
    assert target.api_requests("run-api") == source.api_requests("run-api")
    assert target.api_batches("run-api")[0]["status"] == "ingested"

    # The same run id with different answers is a different record: refused, target intact.
    other = Store(tmp_path / "other.duckdb")
    _api_run(other, "run-api", items, answer="B")
    before = snapshot_tables(target.path)
    with pytest.raises(UserInputError, match="api_requests"):
        merge(target, [other.path])
    assert snapshot_tables(target.path) == before


def test_exports_written_before_api_tables_still_merge(source, tmp_path):
    folder = export_run(source, "run-a", tmp_path / "out")
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["format_version"] = 1
    for table in ("api_requests", "api_batches", "embeddings"):
        (folder / manifest["tables"].pop(table)["file"]).unlink()
    manifest_path.write_text(json.dumps(manifest))
    target = Store(tmp_path / "target.duckdb")
    assert merge(target, [folder]).runs_added == ["run-a"]
    assert _run_rows(target, "run-a") == _run_rows(source, "run-a")

    manifest["format_version"] = 3  # a version 3 manifest must list the API tables
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(DataIntegrityError, match="exactly the tables"):
        verify_export(folder)
