"""scripts/compare_exports.py: the container-vs-host check of scripts/container-smoke."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
from test_store_export_merge import _finished_run
from test_store_support import make_items

from monitor.store.db import Store
from monitor.store.export import export_run, sha256_file

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "compare_exports.py"


def compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True, timeout=120
    )


def _two_runs(tmp_path: Path, salt_b: float = 0.0) -> tuple[Path, Path]:
    """The same scores under two run ids (as a container and a host run of one job)."""
    store = Store(tmp_path / "s.duckdb")
    _finished_run(store, "run-container", make_items(6))
    _finished_run(store, "run-host", make_items(6), salt=salt_b)
    out = tmp_path / "exports"
    return export_run(store, "run-container", out), export_run(store, "run-host", out)


def test_identical_scores_under_different_run_ids_pass(tmp_path):
    a, b = _two_runs(tmp_path)
    proc = compare(a, b)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("identical: 6 items")


def test_one_differing_value_fails_and_names_the_item_and_column(tmp_path):
    a, b = _two_runs(tmp_path)
    scores = b / "scores.parquet"
    con = duckdb.connect()
    con.execute(
        "COPY (SELECT * REPLACE (CASE WHEN row_number() OVER () = 3 THEN lp_stereo + 1e-12 "
        "ELSE lp_stereo END AS lp_stereo) FROM read_parquet($src)) TO $dst (FORMAT parquet)",
        # Named: DuckDB 1.5.5 binds COPY's TO parameter before the query's, so two `?`
        # swapped the paths there (2.0.0 took them in order).
        {"src": str(scores), "dst": str(tmp_path / "changed.parquet")},
    )
    (tmp_path / "changed.parquet").replace(scores)
    # Keep the manifest true to the changed file, so only the scores can tell the runs apart.
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["tables"]["scores"]["sha256"] = sha256_file(scores)
    manifest["tables"]["scores"]["rows"] = pq.read_metadata(scores).num_rows
    (b / "manifest.json").write_text(json.dumps(manifest))
    proc = compare(a, b)
    assert proc.returncode == 1
    assert "lp_stereo differ" in proc.stdout and proc.stdout.count("item ") == 1


def test_different_items_or_a_damaged_export_are_reported(tmp_path):
    a, _ = _two_runs(tmp_path)
    store = Store(tmp_path / "other.duckdb")
    _finished_run(store, "run-other", make_items(4))
    other = export_run(store, "run-other", tmp_path / "exports-other")
    proc = compare(a, other)
    assert proc.returncode == 1 and "2 item(s) only in" in proc.stdout
    (other / "scores.parquet").write_bytes(b"damaged")
    proc = compare(a, other)
    assert proc.returncode == 2 and proc.stderr.startswith("error:")
