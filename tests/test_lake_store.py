"""A store on DuckLake keeps the file store's schema and its keys (issue 47, item 2).

DuckLake has no PRIMARY KEY or UNIQUE: the same migrations make the same tables there
without the constraints, and every keyed insert checks its key inside its transaction.
A re-sent row is left out, as ``ON CONFLICT DO NOTHING`` leaves it on a file; a row whose
key is stored with other values stops the whole batch, so a duplicate cannot land
silently. On a SQLite-catalog lake (always) and a PostgreSQL + S3 one (tests/_lake.py).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from _lake import new_location
from test_store_support import make_items, make_run, make_score

from monitor.store.db import Store
from monitor.store.sql import DuplicateKeyError


@pytest.fixture(params=["lake-sqlite", "lake-postgres"])
def lake(request, tmp_path, monkeypatch) -> Store:
    db, env = new_location(request.param, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Store(db)


def _columns(store: Store) -> dict[str, list[tuple[str, str]]]:
    with store._connect() as con:
        rows = con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_catalog = current_database() AND table_schema = 'main' "
            "ORDER BY table_name, ordinal_position"
        ).fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in rows:
        out.setdefault(table, []).append((column, kind))
    return out


def test_the_lake_has_the_file_stores_tables_without_keys(lake, tmp_path):
    on_file = Store(tmp_path / "m.duckdb")
    assert _columns(lake) == _columns(on_file)
    assert {"runs", "items", "scores", "pair_items", "run_leases"} <= set(_columns(lake))
    with lake._connect() as con:
        constraints = con.execute(
            "SELECT count(*) FROM duckdb_constraints() WHERE database_name = 'lake' "
            "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')"
        ).fetchone()
    assert constraints == (0,)
    assert lake.schema_version == on_file.schema_version


def test_a_differing_duplicate_is_refused_and_nothing_of_its_batch_written(lake):
    items = make_items(3)
    lake.upsert_items(items)
    lake.begin_run(make_run("run-d"))
    first = [make_score(items[0]), make_score(items[1])]
    assert lake.add_scores("run-d", first) == 2
    changed = replace(first[1], delta=first[1].delta + 0.5)
    with pytest.raises(DuplicateKeyError) as caught:
        lake.add_scores("run-d", [make_score(items[2]), changed])
    message = str(caught.value)
    assert f"item_id={items[1].item_id!r}" in message and "nothing of this batch" in message
    assert caught.value.exit_code == 2
    assert lake.scored_item_ids("run-d") == {items[0].item_id, items[1].item_id}
    stored = {r["item_id"]: r["delta"] for r in lake.scores("run-d")}
    assert stored[items[1].item_id] == first[1].delta
    # The same rows re-sent (a commit its writer never saw) are left out, not refused.
    assert lake.add_scores("run-d", [*first, make_score(items[2])]) == 1
    assert len(lake.scores("run-d")) == 3
    assert lake.upsert_items(items) == 0
