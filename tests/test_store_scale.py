"""A generated history (bench/store_scale.py's generator, at a small size) read the way a
year-long store is read: the cached, batched ``StoreView`` reads must equal run-by-run
reads, a view over a writable connection must not cache, and ``drift``/``report``
through the CLI must find the regression and the configuration break the generator puts
in (so the benchmark measures commands that work on what it generates).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from monitor.families.pairs.records import PairScoreRow
from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import store_scale  # noqa: E402

from monitor.drift.baselines import Tracks, family_of  # noqa: E402

SNAPSHOTS, NIGHTS = 3, 6  # snapshot 1 regresses on the last night, 2 changes revision


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("scale") / "history.duckdb"
    events = {"drift_night": NIGHTS - 1, "break_night": NIGHTS - 2}
    # in two parts, as the benchmark writes its early and full stores
    runs, rows = store_scale.generate(db, SNAPSHOTS, range(2), **events)
    more, more_rows = store_scale.generate(db, SNAPSHOTS, range(2, NIGHTS), **events)
    n_runs = SNAPSHOTS * (NIGHTS + store_scale.REPEATS_FIRST_NIGHT - 1)
    assert runs + more == n_runs
    assert rows + more_rows == n_runs * store_scale.ITEMS_PER_RUN
    return db


def test_cached_batched_reads_equal_run_by_run_reads(history: Path):
    store = Store.open(history)
    with store.read() as view:
        everything = view.runs_since(None)
        assert len(everything) == SNAPSHOTS * (NIGHTS + 2)
        for snap in range(SNAPSHOTS):
            sid = f"synthetic-model-{snap:02d}"
            groups = view.configuration_groups(sid)
            assert view.configuration_groups(sid) is groups  # remembered
            with store.read() as fresh:
                # a fresh view's first walk is one snapshot's query; ``view`` walks every
                # snapshot from the runs it read at once
                assert fresh.configuration_groups(sid) == groups
                one_by_one = [fresh.run(r) for g in groups for r in g.run_ids]
            assert [view.run(r.run_id) for r in one_by_one] == one_by_one
            # the break: snapshot 2 has two configuration groups, the others one
            assert len(groups) == (2 if snap == 2 else 1)
        by_id = view.runs([r.run_id for r in everything[:5]])
        assert list(by_id.values()) == sorted(everything[:5], key=lambda r: r.run_id)
        with pytest.raises(Exception, match="not in the store"):
            view.runs(["no-such-run"])


def test_a_view_over_a_writable_connection_does_not_cache(history: Path, tmp_path: Path):
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(history.read_bytes())
    store = Store.open(copy)
    latest = "s00-n005-r0"
    with store.session(), store.read() as view:
        assert view.run(latest).status == "complete"
        before = view.configuration_groups("synthetic-model-00")
        store.set_status(latest, "quarantined", "test: a write inside the session")
        assert view.run(latest).status == "quarantined"
        after = view.configuration_groups("synthetic-model-00")
        assert latest in before[0].run_ids and latest not in after[0].run_ids
    assert store.get_run(latest)["status"] == "quarantined"
    with store.read() as view:  # from every run read at once: the quarantined one left out
        view.runs_since(None)
        groups = view.configuration_groups("synthetic-model-00")
        assert latest not in groups[0].run_ids and groups == after


def _cli(*args: str, db: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "MONITOR_DB": str(db)},
    )


def test_drift_and_report_find_what_the_generator_put_in(history: Path, tmp_path: Path):
    proc = _cli("drift", "--format", "json", "--fail-on", "regression", db=history)
    assert proc.returncode == 1, proc.stderr  # snapshot 1's regression is flagged
    out = json.loads(proc.stdout)
    flagged = {
        (c["new_run_id"], c["benchmark"], c["axis"])
        for c in out["comparisons"]
        if c["verdict"] == "regression"
    }
    assert flagged and {rid for rid, _, _ in flagged} == {f"s01-n{NIGHTS - 1:03d}-r0"}
    roles = {(c["new_run_id"], c["role"]) for c in out["comparison_details"]}
    # snapshot 2 changed revision: its latest run is also compared with the old revision
    assert (f"s02-n{NIGHTS - 1:03d}-r0", "configuration change") in roles

    report = tmp_path / "report"
    proc = _cli("report", "--out", str(report), db=history)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((report / "report.json").read_text())
    regressions = [c for c in data["comparisons"] if c["verdict"] == "regression"]
    assert {c["new_run_id"] for c in regressions} == {f"s01-n{NIGHTS - 1:03d}-r0"}
    assert "synthetic sentence" not in (report / "report.html").read_text()


def _baseline_rule(runs, new):
    """The default baseline's rule, written out over the runs (the oracle for drift's
    ``Tracks``): an earlier complete run of the snapshot and of the same kind of result,
    outside the run's repeat group, the same metric and version first, then the latest."""
    candidates = [
        r
        for r in runs
        if r.snapshot_id == new.snapshot_id
        and family_of(r.metric) == family_of(new.metric)
        and r.status == "complete"
        and r.started_at < new.started_at
        and r.run_id != new.run_id
        and (new.repeat_group is None or r.repeat_group != new.repeat_group)
    ]
    same = lambda r: (r.metric, r.metric_version) == (new.metric, new.metric_version)  # noqa: E731
    best = max(candidates, key=lambda r: (same(r), r.started_at, r.run_id), default=None)
    return best.run_id if best else None


def test_baselines_and_latest_runs_follow_the_rules(history: Path):
    store = Store.open(history)
    with store.read() as view:
        runs = view.runs_since(None)
        snapshots = sorted({r.snapshot_id for r in runs})
        tracks = Tracks.of(view, snapshots)
        # every run: the repeats of the first night (no baseline but each other), the
        # nights after them, the revision change of snapshot 2
        expected = {r.run_id: _baseline_rule(runs, r) for r in runs}
        assert {r.run_id: tracks.baseline(r) for r in runs} == expected
        assert any(v is None for v in expected.values())
        assert sum(v is not None for v in expected.values()) >= SNAPSHOTS * (NIGHTS - 1)
        latest = {
            s: max((r for r in runs if r.snapshot_id == s), key=lambda r: (r.started_at, r.run_id))
            for s in snapshots
        }
        assert {s: tracks.latest(s) for s in [*snapshots, "no-such-snapshot"]} == {
            **{s: [r.run_id] for s, r in latest.items()},
            "no-such-snapshot": [],
        }


def test_measures_read_at_once_equal_measures_read_run_by_run(history: Path):
    store = Store.open(history)
    ids = [r["run_id"] for r in store.list_runs()][:7]
    with store.read() as view:
        view.prefetch_measures([*ids, "no-such-run"])
        batched = {r: view.measures(r) for r in ids}
        assert view.measures("no-such-run") == []
    with store.read() as fresh:
        assert {r: fresh.measures(r) for r in ids} == batched
    assert all(batched.values())


def test_a_command_collects_garbage_in_large_steps():
    """``main`` raises the collector's young-generation threshold (a year's report spent
    0.58 s of 6 s re-walking its own long-lived objects at CPython's default of 700)."""
    from monitor.cli.app import GC_YOUNG_THRESHOLD

    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('threshold', gc.get_threshold()[0]))\n"
        "from monitor.cli.app import main\n"
        "sys.argv = ['bias-monitor', 'runs', '--help']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert f"threshold {GC_YOUNG_THRESHOLD}" in proc.stdout
    assert GC_YOUNG_THRESHOLD > 700


def _tables(db: Path) -> dict[str, list[tuple]]:
    """Every table's rows, sorted, without the columns that hold the time of writing."""
    import duckdb

    skip = {"finished_at", "applied_at", "updated_at", "created_at"}
    out = {}
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("SHOW TABLES").fetchall()]
        for t in tables:
            cols = [c for (c, *_) in con.execute(f"DESCRIBE {t}").fetchall() if c not in skip]
            picks = ", ".join(f'"{c}"' for c in cols)
            out[t] = sorted(con.execute(f"SELECT {picks} FROM {t}").fetchall(), key=repr)
    return out


def test_the_bulk_generator_writes_what_the_store_api_writes(tmp_path: Path):
    """The generator's batches (``store_bulk``) against the same runs written one by one
    through ``Store.record_run`` + ``finish_run`` with full ``ScoreRow`` records: every
    table equal, row for row (the runs' finishing times aside)."""
    from monitor.metrics.registry import get_metric, run_measures

    events = {"drift_night": 2, "break_night": 1}
    bulk = tmp_path / "bulk.duckdb"
    runs, _ = store_scale.generate(bulk, 3, range(3), **events)

    api = Store.open(tmp_path / "api.duckdb")
    items = store_scale.make_items()
    ids = [it.item_id for it in items]
    spec = get_metric(store_scale.METRIC)
    written = 0
    for night in range(3):
        for snap in range(3):
            changed = snap % 5 == 2 and night >= events["break_night"]
            revision = (f"{snap:02d}" + ("b" if changed else "a") * 38)[:40]
            base = np.random.default_rng([0, snap, int(changed)])
            stereo = base.random(len(ids)) < base.beta(2, 2, size=len(ids))
            magnitude = base.gamma(2.0, 0.5, size=len(ids))
            if snap % 4 == 1 and night >= events["drift_night"]:
                stereo = stereo | (base.random(len(ids)) < store_scale.DRIFT_SHARE)
            for r in range(store_scale.REPEATS_FIRST_NIGHT if night == 0 else 1):
                delta = store_scale.night_deltas(
                    stereo, magnitude, np.random.default_rng([0, snap, night, r])
                )
                rows = [
                    PairScoreRow(
                        item_id=i,
                        metric=spec.name,
                        metric_version=spec.version,
                        outcome="stereo" if d > 0 else "anti",
                        delta=d,
                        score_stereo=-20.0 + d,
                        score_anti=-20.0,
                        lp_stereo=-40.0 + d,
                        lp_anti=-40.0,
                        prior_stereo=-20.0,
                        prior_anti=-20.0,
                        n_tokens_stereo=12,
                        n_tokens_anti=12,
                    )
                    for i, d in zip(ids, delta.tolist(), strict=True)
                ]
                record = store_scale.run_record(snap, night, r, revision)
                api.record_run(record, items=items, scores=rows, exclusions=[])
                api.finish_run(
                    record.run_id, "complete", run_measures(spec, rows, items), len(rows), 0
                )
                written += 1
    assert written == runs
    bulk_tables, api_tables = _tables(bulk), _tables(tmp_path / "api.duckdb")
    assert bulk_tables.keys() == api_tables.keys()
    for table, rows in api_tables.items():
        assert bulk_tables[table] == rows, table
    assert len(api_tables["scores"]) == runs * store_scale.ITEMS_PER_RUN
    assert len(api_tables["pair_scores"]) == len(api_tables["scores"])
    assert api_tables["axis_measures"]


def test_a_frozen_view_reads_each_item_once(history: Path, monkeypatch):
    """Drift asks for an axis's items once per comparison (340 times on a year's store);
    a read-only view reads each id from the store once and answers the rest from memory,
    with what the store gives (ids not stored absent, in id order)."""
    from monitor.store import queries

    calls: list[list[str]] = []
    real = queries.items

    def counted(con, item_ids):
        ids = list(item_ids)
        calls.append(ids)
        return real(con, ids)

    monkeypatch.setattr(queries, "items", counted)
    store = Store.open(history)
    some = [f"bhed-caste:{i:05d}" for i in (7, 3, 5)]
    with store.read() as fresh:
        expected = fresh.items([*some, "no-such-item"])
    assert list(expected) == sorted(some)
    calls.clear()
    with store.read() as view:
        assert view.items([*some, "no-such-item"]) == expected
        assert view.items(reversed([*some, "no-such-item"])) == expected
        assert list(view.items(["bhed-caste:00001", *some])) == ["bhed-caste:00001", *sorted(some)]
    assert calls == [[*sorted(some), "no-such-item"], ["bhed-caste:00001"]]
    calls.clear()
    with store.session(), store.read() as live:  # a writable connection: read every time
        live.items(some)
        live.items(some)
    assert len(calls) == 2
