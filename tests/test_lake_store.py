"""A store on DuckLake keeps the file store's schema and its keys (issue 47, item 2).

DuckLake has no PRIMARY KEY or UNIQUE: the same migrations make the same tables there
without the constraints, and every keyed insert checks its key inside its transaction.
A re-sent row is left out, as ``ON CONFLICT DO NOTHING`` leaves it on a file; a row whose
key is stored with other values stops the whole batch, so a duplicate cannot land
silently. On a SQLite-catalog lake (always) and a PostgreSQL + S3 one (tests/_lake.py).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from _lake import new_location
from test_store_support import make_items, make_run, make_score

from monitor.store import details, migrate
from monitor.store.db import Store
from monitor.store.lake import connect
from monitor.store.leases import Owner
from monitor.store.location import parse
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


def test_leases_on_the_lake(lake):
    """A run's lease as on a file (tests/test_run_leases.py): a live owner's run is passed
    over, a stale one's taken; a heartbeat says whether the lease is still held (a lake's
    UPDATE has no RETURNING); release gives it up."""
    me, remote = Owner(), Owner(host="elsewhere.invalid")
    lake.begin_run(make_run("remote", fingerprint="fp"), owner=remote)
    run_id, busy = lake.claim_resumable("fp", me, stale_after=timedelta(seconds=60))
    assert run_id is None and [b.run_id for b in busy] == ["remote"]
    with lake._connect(read_only=False) as con:
        con.execute(
            "UPDATE run_leases SET heartbeat_at = heartbeat_at - INTERVAL 120 SECOND "
            "WHERE run_id = 'remote'"
        )
    assert lake.claim_resumable("fp", me, stale_after=timedelta(seconds=60))[0] == "remote"
    assert lake.heartbeat("remote", me) and not lake.heartbeat("remote", remote)
    lake.release("remote", me)
    assert lake.claim_resumable("fp", remote)[0] == "remote"
    with lake._connect() as con:
        assert con.execute("SELECT count(*) FROM run_leases").fetchone() == (1,)


@pytest.mark.parametrize("kind", ["lake-sqlite", "lake-postgres"])
def test_an_older_lake_is_migrated_in_place(kind, tmp_path, monkeypatch):
    """A lake at schema 6 with rows in it: opened, it is moved to 7 (the pair columns
    leave items and scores for the pair family's tables, each core table rebuilt) and
    every row reads back as written."""
    db, env = new_location(kind, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    location = parse(db)
    con = connect(location, read_only=False, create=True)
    migrate.apply_migrations(con, "lake", upto=6)
    assert migrate.installed_version(con, "lake") == 6
    items = make_items(3)
    con.execute(
        "INSERT INTO items (item_id, benchmark, benchmark_version, axis, region, source_row, "
        "direction, text_stereo, text_anti, targets_stereo, targets_anti, errata, kind) "
        "VALUES (?, 'b', 'v', 'caste', 'IN', ?, 'stereo', 'S', 'A', ['s'], ['a'], [], 'pair')",
        [items[0].item_id, 1],
    )
    con.close()
    store = Store(db)
    assert store.schema_version == migrate.latest_version()
    (item,) = store.items([items[0].item_id]).values()
    assert item.item_id == items[0].item_id
    with store._connect() as con:
        moved = con.execute("SELECT text_stereo, text_anti FROM pair_items").fetchall()
        assert "text_stereo" not in details.table_columns(con, "items")
    assert moved == [("S", "A")]
