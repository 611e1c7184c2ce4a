"""The lake-against-file store benchmark (``bench/store_lake.py``, issue 47 item 7) runs
end to end at a tiny size: it generates a history, copies it into a SQLite-catalog lake
(checking every table's row count), and times reads and writes on both stores. The
timings themselves are the bench's business; this checks it still runs and prints its
table, so ``make bench-store`` does not break unseen. ``drift``/``report`` are left out
here (``--no-commands``: ~4 s of subprocesses each) and are tested on lakes elsewhere.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_lake_bench_runs_and_prints_both_stores(tmp_path: Path):
    work = tmp_path / "work"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "store_lake.py"),
            *("--snapshots", "2", "--nights", "2", "--rounds", "1", "--write-runs", "1"),
            *("--no-commands", "--work", str(work)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    # 2 snapshots x (2 nights, the first x3) = 8 runs of 2,740 items
    assert "8 runs, 21,920 score rows copied" in out
    assert "8 runs, 21,920 score rows; medians of 1 interleaved rounds" in out
    table = {line[:20].strip(): line[20:].split() for line in out.splitlines()}
    rates = {k: table[k] for k in ("read outcomes", "read one run", "write")}
    for cells in rates.values():
        file, lake, ratio, unit = (c.replace(",", "") for c in cells)
        assert unit == "rows/s"
        assert float(file) > 0 and float(lake) > 0 and ratio.endswith("x")
    assert not work.exists()  # removed without --keep
