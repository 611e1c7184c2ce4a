"""The local driver's score writes (``jobs.local.TimedWrites``) against a real DuckDB store:
rows that arrive faster than ``seconds`` go in one transaction, slow ones one by one, and
nothing is lost or reordered; ``flush`` writes the rest (the driver calls it at the end
and before an error or Ctrl-C ends the run)."""

from __future__ import annotations

from pathlib import Path

from test_store_support import make_items, make_run, make_score

from monitor.jobs.local import TimedWrites
from monitor.store.db import Store


def _store(tmp_path: Path, n: int):
    store = Store.open(tmp_path / "w.duckdb")
    items = make_items(n)
    store.begin_run(make_run("r1"))
    store.upsert_items(items)
    return store, items


def test_fast_chunks_share_one_transaction_and_flush_writes_the_rest(tmp_path):
    store, items = _store(tmp_path, 12)
    writes = TimedWrites(lambda rows: store.add_scores("r1", rows), seconds=3600)
    for k in range(0, 12, 3):  # four chunks, all within the hour
        writes([make_score(it) for it in items[k : k + 3]])
    assert writes.writes == 0 and store.scored_item_ids("r1") == set()
    writes.flush()
    assert writes.writes == 1
    assert store.scored_item_ids("r1") == {it.item_id for it in items}
    writes.flush()  # nothing left: no empty transaction
    assert writes.writes == 1


def test_slow_chunks_are_written_as_they_come(tmp_path):
    store, items = _store(tmp_path, 6)
    writes = TimedWrites(lambda rows: store.add_scores("r1", rows), seconds=0)
    writes([make_score(it) for it in items[:2]])
    assert store.scored_item_ids("r1") == {it.item_id for it in items[:2]}
    writes([make_score(it) for it in items[2:]])
    assert writes.writes == 2 and len(store.scored_item_ids("r1")) == 6
