"""Generic core records and the families' detail tables (issue 45 item 5), on real DuckDB
files: the pairs' columns live in ``pair_items``/``pair_scores``, rows of other kinds get
no detail row and read back as written, and a family's own migrations run on open."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest
from test_store_support import make_items, make_run, make_score

from monitor.benchmarks.items import Item
from monitor.contract import registry
from monitor.contract.detail import AddColumn, DetailColumn, DetailMigration
from monitor.errors import UserInputError
from monitor.families.pairs.records import PairItem
from monitor.records import ScoreRow
from monitor.store import details
from monitor.store.db import Store


def _columns(path, table: str) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as con:
        return details.table_columns(con, table)


def _rows(path, query: str) -> list[tuple]:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute(query).fetchall()


def _store_rows(store: Store, query: str) -> list[tuple]:
    """``query``'s rows through the store's own connection (a DuckDB file or a lake)."""
    with store._connect() as con:
        return con.execute(query).fetchall()


def test_core_tables_are_generic_and_the_pairs_columns_are_the_pair_familys(tmp_path):
    path = tmp_path / "m.duckdb"
    Store(path)
    assert _columns(path, "items") == list(details.CORE_COLUMNS["items"])
    assert _columns(path, "scores") == list(details.CORE_COLUMNS["scores"])
    assert _columns(path, "pair_scores")[:2] == ["run_id", "item_id"]
    assert "lp_stereo" in _columns(path, "pair_scores")
    assert "text_stereo" in _columns(path, "pair_items")
    assert _rows(path, "SELECT name, family, extends, version FROM detail_tables ORDER BY 1") == [
        ("pair_items", "pair-outcome", "items", 1),
        ("pair_scores", "pair-outcome", "scores", 1),
    ]


def test_every_kind_of_row_reads_back_as_it_was_written(store_db):
    """A pair (a detail row, read back as the pair's record), a word-set term and a choice
    question (core records: no detail row, read back as the core record). On a DuckDB file
    and on each lake (``store_db``)."""
    store = Store(store_db)
    pair = make_items(1)[0]
    term = Item("term-1", "weat", "weat-1", "us", "v1", 0, kind="word-set-term",
                payload={"role": "X"})  # fmt: skip
    question = Item("q-1", "bbq", "age", "us", "v1", 1, template="7", kind="choice-question",
                    payload={"options": ["a", "b", "c"]})  # fmt: skip
    run = make_run("r1")
    rows = [
        make_score(pair),
        ScoreRow(term.item_id, "weat", "1", "other", 0.25, details={"role": "X"}),
        ScoreRow(question.item_id, "mc-loglik", "1", "target", None, details={"ll": [-1.0]}),
    ]
    store.record_run(run, items=[pair, term, question], scores=rows, exclusions=[])
    assert store.items([pair.item_id, term.item_id, question.item_id]) == {
        i.item_id: i for i in (pair, term, question)
    }
    assert store.score_rows("r1") == sorted(rows, key=lambda r: r.item_id)
    pairs = _store_rows(store, "SELECT item_id, direction, text_stereo FROM pair_items ORDER BY 1")
    assert pairs == [(pair.item_id, "stereo", pair.text_stereo)]
    back = store.items([pair.item_id, term.item_id])
    assert type(back[pair.item_id]) is PairItem and type(back[term.item_id]) is Item
    assert _store_rows(store, "SELECT item_id FROM pair_scores") == [(pair.item_id,)]
    assert store.add_scores("r1", rows) == 0  # a resent batch: nothing new, nowhere


def _pairs_with(monkeypatch, *tables):
    pairs = registry.get_family("pair-outcome")
    changed = dataclasses.replace(pairs, detail_tables=tables)
    families = {f.name: (changed if f.name == "pair-outcome" else f) for f in registry.families()}
    monkeypatch.setattr(registry, "_families", lambda: families)


def test_a_familys_own_migration_runs_on_open_and_a_newer_table_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "m.duckdb"
    store = Store(path)
    pair = make_items(1)[0]
    store.record_run(make_run("r1"), items=[pair], scores=[make_score(pair)], exclusions=[])
    pair_items, pair_scores = registry.get_family("pair-outcome").detail_tables
    flag = DetailColumn("checked", "BOOLEAN", False)
    newer = dataclasses.replace(
        pair_scores,
        columns=(*pair_scores.columns, flag),
        migrations=(DetailMigration(2, "a flag", (AddColumn(flag),)),),
    )
    _pairs_with(monkeypatch, pair_items, newer)
    reopened = Store(path)  # migrates the family's table, keeps its rows
    assert "checked" in _columns(path, "pair_scores")
    assert _rows(path, "SELECT version FROM detail_tables WHERE name = 'pair_scores'") == [(2,)]
    assert _rows(path, "SELECT count(*), bool_and(NOT checked) FROM pair_scores") == [(1, True)]
    assert [r.lp_stereo for r in reopened.score_rows("r1")] == [make_score(pair).lp_stereo]
    monkeypatch.undo()
    with pytest.raises(UserInputError, match="pair_scores has version 2, newer than"):
        Store(path)


def test_another_familys_numbers_stay_in_its_own_rows(tmp_path, monitor_env):
    """SeeGULL scored by the real SmolLM2 on four items of the real Hindi mini set: its
    items and scores get no row in the pairs' detail tables (rows follow the item's
    family, not attribute names), and its numbers read back unchanged from its own
    ``details``. On the store before issue 45 item 5's records, its log-likelihoods
    landed in ``pair_scores``."""
    from _models import one_thread, smollm2

    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest
    from monitor.families.seegull.frames import METRIC
    from monitor.families.seegull.scoring import score_local

    fetch(load_manifest(), ["seegull-hi"])  # from the shared mirror, verified
    (bench,) = load_benchmarks(["seegull-hi"], options={"size": "mini"})
    items = bench.items[:4]
    with one_thread():
        rows = score_local(smollm2(), items, METRIC)
    assert len(rows) == 4 and all(r.details["lp_stereo"] < 0 for r in rows)
    path = tmp_path / "m.duckdb"
    store = Store(path)
    store.record_run(make_run("s1"), items=items, scores=rows, exclusions=[])
    assert _rows(path, "SELECT count(*) FROM pair_scores") == [(0,)]
    assert _rows(path, "SELECT count(*) FROM pair_items") == [(0,)]
    back = store.score_rows("s1")
    assert back == sorted(rows, key=lambda r: r.item_id)
    assert [type(r) for r in back] == [ScoreRow] * 4
    stored = store.items([it.item_id for it in items])
    assert [stored[it.item_id].payload for it in items] == [it.payload for it in items]
