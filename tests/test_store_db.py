"""Store opening, migrations, writes and queries against real DuckDB files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from test_store_support import (
    make_exclusions,
    make_items,
    make_measures,
    make_run,
    make_score,
    snapshot_tables,
)

from monitor.errors import UserInputError
from monitor.records import ScoreRow
from monitor.store import migrate, schema
from monitor.store.db import Store


def _listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


# -- opening and migrations -----------------------------------------------------------


def test_open_creates_folders_and_records_every_migration(tmp_path):
    path = tmp_path / "deep" / "er" / "monitor.duckdb"
    store = Store.open(path)
    assert path.is_file()
    assert store.schema_version == migrate.latest_version() == schema.SCHEMA_VERSION
    con = duckdb.connect(str(path), read_only=True)
    recorded = con.execute(
        "SELECT version, description, applied_at IS NOT NULL FROM schema_migrations ORDER BY 1"
    ).fetchall()
    tables = set(migrate.user_tables(con))
    con.close()
    assert recorded == [(v, d, True) for v, d, _ in schema.MIGRATIONS]
    assert {"runs", "items", "scores", "exclusions", "axis_measures", "validations"} <= tables


def test_open_twice_is_idempotent_and_keeps_data(tmp_path):
    path = tmp_path / "m.duckdb"
    store = Store(path)
    store.upsert_items(make_items(3))
    store.begin_run(make_run("run-1"))
    before = snapshot_tables(path)
    again = Store.open(path)
    assert again.schema_version == store.schema_version
    assert snapshot_tables(path) == before  # no second migration row, no data change


def test_default_path_comes_from_monitor_db(tmp_path, monkeypatch):
    path = tmp_path / "env" / "store.duckdb"
    monkeypatch.setenv("MONITOR_DB", str(path))
    assert Store().path == path
    assert path.is_file()


def test_parent_that_is_a_file_is_refused_and_nothing_created(tmp_path):
    (tmp_path / "blocker").write_text("not a folder")
    before = _listing(tmp_path)
    with pytest.raises(UserInputError) as exc:
        Store(tmp_path / "blocker" / "sub" / "m.duckdb")
    assert "blocker" in _one_line(exc)
    assert _listing(tmp_path) == before


def test_directory_as_db_path_is_refused(tmp_path):
    with pytest.raises(UserInputError, match="is a directory"):
        Store(tmp_path)


_OPEN_IN_CHILD = """
import sys
from monitor.errors import UserInputError
from monitor.store.db import Store
try:
    Store(sys.argv[1])
except UserInputError as exc:
    print("refused:", exc)
else:
    print("opened")
"""


def _without_root_powers() -> list[str]:
    """Prefix that runs a child as if unprivileged: root ignores folder permissions."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a folder unwritable")
    dropped = "-dac_override,-dac_read_search"
    return [setpriv, f"--bounding-set={dropped}", f"--inh-caps={dropped}", "--"]


def test_read_only_folder_is_refused_and_nothing_created(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    repo = Path(__file__).resolve().parents[1]
    try:
        for target in (locked / "m.duckdb", locked / "new" / "m.duckdb"):
            child = subprocess.run(
                [*_without_root_powers(), sys.executable, "-c", _OPEN_IN_CHILD, str(target)],
                capture_output=True,
                text=True,
                timeout=120,
                env=dict(os.environ, PYTHONPATH=str(repo)),
                check=True,
            )
            assert child.stdout.startswith("refused:"), child.stdout + child.stderr
            assert "not writable" in child.stdout and child.stdout.count("\n") == 1
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


def test_file_that_is_not_duckdb_is_refused_untouched(tmp_path):
    path = tmp_path / "notes.duckdb"
    path.write_text("hello, I am a text file\n")
    with pytest.raises(UserInputError) as exc:
        Store(path)
    assert str(path) in _one_line(exc)
    assert path.read_text() == "hello, I am a text file\n"
    assert _listing(tmp_path) == ["notes.duckdb"]


def test_foreign_duckdb_file_is_refused(tmp_path):
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE something (x INTEGER)")
    con.close()
    with pytest.raises(UserInputError, match="not a bias-monitor store"):
        Store(path)


def test_newer_schema_is_refused_and_file_unchanged(tmp_path):
    path = tmp_path / "m.duckdb"
    Store(path).upsert_items(make_items(2))
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', now())")
    con.close()
    before = snapshot_tables(path)
    with pytest.raises(UserInputError) as exc:
        Store(path)
    assert "99" in _one_line(exc) and "newer" in str(exc.value)
    with pytest.raises(UserInputError, match="newer"):
        Store(path, read_only=True)
    assert snapshot_tables(path) == before


def test_older_schema_is_upgraded_in_place(tmp_path, monkeypatch):
    path = tmp_path / "m.duckdb"
    store = Store(path)
    store.upsert_items(make_items(2))
    store.begin_run(make_run("run-old"))
    nxt = len(schema.MIGRATIONS) + 1
    monkeypatch.setattr(
        schema,
        "MIGRATIONS",
        [
            *schema.MIGRATIONS,
            (nxt, "runs gain a label", "ALTER TABLE runs ADD COLUMN label VARCHAR DEFAULT 'none'"),
        ],
    )
    with pytest.raises(UserInputError, match="needs an upgrade"):
        Store(path, read_only=True)
    upgraded = Store(path)
    assert upgraded.schema_version == nxt
    assert upgraded.get_run("run-old")["label"] == "none"
    assert len(upgraded.items([i.item_id for i in make_items(2)])) == 2
    con = duckdb.connect(str(path), read_only=True)
    versions = con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
    con.close()
    assert versions == [(v,) for v in range(1, nxt + 1)]


def test_read_only_store_reads_but_never_writes(tmp_path):
    path = tmp_path / "m.duckdb"
    Store(path).begin_run(make_run("run-ro"))
    reader = Store(path, read_only=True)
    assert reader.get_run("run-ro")["run_id"] == "run-ro"
    with pytest.raises(UserInputError, match="read-only"):
        reader.upsert_items(make_items(1))
    with pytest.raises(UserInputError, match="does not exist"):
        Store(tmp_path / "missing.duckdb", read_only=True)


# -- writes ---------------------------------------------------------------------------


@pytest.fixture
def store(store_db) -> Store:
    """Each test below runs on a DuckDB file and on the lakes (``store_db``)."""
    return Store(store_db)


def test_items_are_inserted_once_and_read_back_whole(store):
    items = make_items(4)
    assert store.upsert_items(items) == 4
    assert store.upsert_items([*items, *make_items(6)[4:]]) == 2
    back = store.items([i.item_id for i in items] + ["0000000000000000"])
    assert back == {i.item_id: i for i in items}


def test_scores_are_idempotent_and_traceable(store):
    items = make_items(6)
    store.upsert_items(items)
    store.begin_run(make_run("run-s"))
    rows = [make_score(i) for i in items]
    assert store.add_scores("run-s", rows[:4]) == 4
    assert store.add_scores("run-s", rows[2:]) == 2  # two re-sent, two new
    assert store.scored_item_ids("run-s") == {i.item_id for i in items}
    stored = {r["item_id"]: r for r in store.scores("run-s")}
    for row in rows:
        got = stored[row.item_id]
        assert got["delta"] == row.delta and got["lp_stereo"] == row.lp_stereo
        assert got["details"] == row.details and got["outcome"] == row.outcome
        assert got["scored_at"].tzinfo is not None
    table = store.scores_table("run-s")
    assert table.num_rows == 6 and table.column_names[:2] == ["run_id", "item_id"]


def test_score_for_unknown_item_or_run_writes_nothing(store):
    items = make_items(3)
    store.upsert_items(items[:2])
    store.begin_run(make_run("run-x"))
    with pytest.raises(UserInputError, match="upsert_items"):
        store.add_scores("run-x", [make_score(i) for i in items])
    assert store.scored_item_ids("run-x") == set()
    with pytest.raises(UserInputError, match="no run"):
        store.add_scores("run-missing", [make_score(items[0])])
    with pytest.raises(ValueError, match="repeats"):
        store.add_scores("run-x", [make_score(items[0]), make_score(items[0], salt=1.0)])


def test_duplicate_run_id_is_refused(store):
    store.begin_run(make_run("run-d"))
    with pytest.raises(UserInputError, match="already exists"):
        store.begin_run(make_run("run-d"))


def test_run_record_round_trips_with_json_parsed(store):
    run = make_run("run-j", started_at=datetime(2025, 4, 1, 17, 30, tzinfo=UTC))
    store.begin_run(run)
    got = store.get_run("run-j")
    assert got["environment"] == run.environment
    assert got["snapshot_manifest"] == run.snapshot_manifest
    assert got["dataset_versions"] == run.dataset_versions
    assert got["benchmarks"] == run.benchmarks
    assert got["started_at"] == run.started_at
    assert got["status"] == "running" and got["finished_at"] is None
    with store._connect() as con:  # the store's own connection: a file or the lake
        (raw,) = con.execute("SELECT environment FROM runs").fetchall()[0]
    assert raw.index('"a"') < raw.index('"b"')  # sorted keys: equal dicts, equal text


def test_finish_run_replaces_measures_and_freezes_scores(store):
    items = make_items(4)
    store.upsert_items(items)
    store.begin_run(make_run("run-f"))
    store.add_scores("run-f", [make_score(i) for i in items[:2]])
    store.add_exclusions("run-f", make_exclusions(2))
    assert store.add_exclusions("run-f", make_exclusions(3)) == 1
    store.finish_run("run-f", "failed", make_measures(), n_scored=2, n_excluded=3, notes="oom")
    assert len(store.axis_measures("run-f")) == 2
    store.set_status("run-f", "running")  # resume
    assert store.get_run("run-f")["finished_at"] is None
    store.add_scores("run-f", [make_score(i) for i in items[2:]])
    store.finish_run("run-f", "complete", make_measures()[:1], n_scored=4, n_excluded=3)
    run = store.get_run("run-f")
    assert (run["status"], run["n_scored"], run["n_excluded"]) == ("complete", 4, 3)
    assert run["notes"] == "oom" and run["finished_at"] is not None
    assert [m["axis"] for m in store.axis_measures("run-f")] == ["caste"]
    with pytest.raises(UserInputError, match="append-only"):
        store.add_scores("run-f", [make_score(items[0], salt=3.0)])
    with pytest.raises(UserInputError, match="cannot be finished again"):
        store.finish_run("run-f", "complete", [], 4, 3)
    finished_at = run["finished_at"]
    store.set_status("run-f", "quarantined", notes="validation failed")
    run = store.get_run("run-f")
    assert run["status"] == "quarantined" and run["finished_at"] == finished_at
    with pytest.raises(UserInputError, match="cannot go from quarantined to running"):
        store.set_status("run-f", "running")
    with pytest.raises(UserInputError, match="unknown run status"):
        store.set_status("run-f", "done")  # type: ignore[arg-type]
    assert len(store.scores("run-f")) == 4
    assert [e["source_row"] for e in store.exclusions("run-f")] == [1000, 1001, 1002]


def test_validations_append(store):
    store.begin_run(make_run("run-v"))
    store.add_validation("run-v", "results", False, {"failed": ["delta_finite"], "n": 3})
    store.add_validation("run-v", "results", True, {"failed": [], "n": 3})
    got = store.validations("run-v")
    assert [v["success"] for v in got] == [False, True]
    assert got[0]["results"] == {"failed": ["delta_finite"], "n": 3}
    with pytest.raises(UserInputError, match="no run"):
        store.add_validation("run-nope", "results", True, {})


# -- queries --------------------------------------------------------------------------


def test_get_run_by_unique_prefix(store):
    for run_id in ("20250401-abc-1", "20250401-abc-2", "20250402-xyz"):
        store.begin_run(make_run(run_id))
    assert store.get_run("20250401-abc-1")["run_id"] == "20250401-abc-1"
    assert store.get_run("20250402")["run_id"] == "20250402-xyz"
    with pytest.raises(UserInputError) as exc:
        store.get_run("20250401-abc")
    assert "ambiguous" in _one_line(exc)
    assert "20250401-abc-1" in str(exc.value) and "20250401-abc-2" in str(exc.value)
    with pytest.raises(UserInputError, match="no run"):
        store.get_run("1999")
    with pytest.raises(UserInputError, match="no run"):
        store.get_run("%")  # LIKE wildcards are not wildcards here


def test_list_runs_filters_and_orders_newest_first(store):
    base = datetime(2025, 4, 1, tzinfo=UTC)
    for day, (run_id, snap) in enumerate([("r1", "a"), ("r2", "b"), ("r3", "a")]):
        store.begin_run(make_run(run_id, snapshot_id=snap, started_at=base + timedelta(days=day)))
    store.finish_run("r1", "complete", [], 0, 0)
    assert [r["run_id"] for r in store.list_runs()] == ["r3", "r2", "r1"]
    assert [r["run_id"] for r in store.list_runs(snapshot="a")] == ["r3", "r1"]
    assert [r["run_id"] for r in store.list_runs(status="complete")] == ["r1"]
    assert [r["run_id"] for r in store.list_runs(limit=1)] == ["r3"]
    assert store.list_runs(snapshot="zzz") == []


def test_find_resumable_takes_latest_unfinished(store):
    base = datetime(2025, 4, 1, tzinfo=UTC)
    store.begin_run(make_run("old", fingerprint="fp", started_at=base))
    store.begin_run(make_run("new", fingerprint="fp", started_at=base + timedelta(hours=1)))
    store.begin_run(make_run("other", fingerprint="fp2", started_at=base + timedelta(hours=2)))
    store.set_status("new", "interrupted")
    assert store.find_resumable("fp") == "new"
    store.finish_run("new", "complete", [], 0, 0)
    assert store.find_resumable("fp") == "old"
    store.finish_run("old", "complete", [], 0, 0)
    assert store.find_resumable("fp") is None


def test_mark_stale_runs_uses_last_score_time(store):
    items = make_items(2)
    store.upsert_items(items)
    long_ago = datetime(2025, 1, 1, tzinfo=UTC)
    store.begin_run(make_run("idle", started_at=long_ago))
    store.begin_run(make_run("busy", started_at=long_ago))
    store.add_scores("busy", [ScoreRow(items[0].item_id, "cll", "cll-1", "tie", 0.0)])
    marked = store.mark_stale_runs(timedelta(hours=1))
    assert marked == ["idle"]
    assert store.get_run("idle")["status"] == "interrupted"
    assert store.get_run("busy")["status"] == "running"
    assert store.mark_stale_runs(timedelta(hours=1), now=datetime.now(UTC) + timedelta(days=1)) == [
        "busy"
    ]


def test_measures_can_be_recorded_before_the_quality_gate_closes_the_run(store):
    items = make_items(3)
    store.upsert_items(items)
    store.begin_run(make_run("run-g"))
    store.add_scores("run-g", [make_score(i) for i in items])
    store.finish_run("run-g", "running", make_measures(), n_scored=3, n_excluded=0)
    run = store.get_run("run-g")
    assert (run["status"], run["finished_at"], run["n_scored"]) == ("running", None, 3)
    assert len(store.axis_measures("run-g")) == 2
    store.add_validation("run-g", "results", False, {"failed": ["coverage"]})
    store.set_status("run-g", "quarantined", "coverage", finished=True)
    run = store.get_run("run-g")
    assert run["status"] == "quarantined" and run["finished_at"] is not None
    store.set_status("run-g", "complete", "re-validated", finished=False)
    assert store.get_run("run-g")["finished_at"] == run["finished_at"]


def test_score_rows_round_trip_and_item_scores_hide_texts_by_default(store):
    items = make_items(4)
    store.upsert_items(items)
    store.begin_run(make_run("run-r"))
    rows = [make_score(i) for i in items]
    store.add_scores("run-r", rows)
    assert sorted(store.score_rows("run-r"), key=lambda r: r.item_id) == sorted(
        rows, key=lambda r: r.item_id
    )
    plain = store.item_scores("run-r")
    assert [r["source_row"] for r in plain] == [0, 1, 2, 3]
    assert all("text_stereo" not in r for r in plain)
    assert plain[1]["axis"] == "caste" and plain[1]["delta"] == rows[1].delta
    with_texts = store.item_scores("run-r", with_texts=True)
    assert with_texts[2]["text_anti"] == items[2].text_anti
