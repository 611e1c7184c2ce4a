"""Several processes writing one lake at once (issue 47, item 2, first part): four
writers, started together, each store the same benchmark items and score their own run
in batches; every run ends with all its scores and the items are stored once each.

DuckLake commits two transactions that only insert both, so without the store's write
claim (``sql.claim_writes``: each write transaction rewrites one catalog row, so two
overlapping ones conflict and the loser is retried whole) two writers checking an item's
key at once each find it absent and store it twice (measured: 160 item rows for 40
items). On a PostgreSQL + S3 lake where the lake servers run (tests/_lake.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from _lake import new_location

from monitor.store.db import Store

WRITERS = 4
ITEMS = 20
BATCH = 10

WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[4])
    from test_store_support import make_items, make_run, make_score
    from monitor.store.db import Store
    db, run_id, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
    store = Store(db)
    items = make_items({items})
    while time.time() < start:
        time.sleep(0.005)
    store.upsert_items(items)
    store.begin_run(make_run(run_id))
    for i in range(0, len(items), {batch}):
        store.upsert_items(items[i : i + {batch}])
        store.add_scores(run_id, [make_score(item) for item in items[i : i + {batch}]])
    """
).format(items=ITEMS, batch=BATCH)


# Only on PostgreSQL: a SQLite catalog makes a writer that meets another's commit wait out
# SQLite's busy timeout (about 5 s) before it retries, 35 s for this test on 2 cores.
@pytest.mark.parametrize("kind", ["lake-postgres"])
def test_four_writers_at_once_store_every_row_once(kind, tmp_path, monkeypatch):
    db, env = new_location(kind, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    Store(db).close()  # the lake exists (and is migrated) before the writers start
    tests = os.path.dirname(__file__)
    start = time.time() + 3.0  # all four are connected by then, and begin together
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, db, f"run-{n}", str(start), tests],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(WRITERS)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
    store = Store(db, read_only=True)
    with store._connect() as con:
        items = con.execute("SELECT count(*), count(DISTINCT item_id) FROM items").fetchone()
        pairs = con.execute("SELECT count(*), count(DISTINCT item_id) FROM pair_items").fetchone()
        scores = con.execute(
            "SELECT run_id, count(*), count(DISTINCT item_id) FROM scores GROUP BY run_id "
            "ORDER BY run_id"
        ).fetchall()
    assert items == (ITEMS, ITEMS)
    assert pairs[0] == pairs[1]
    assert scores == [(f"run-{n}", ITEMS, ITEMS) for n in range(WRITERS)]
