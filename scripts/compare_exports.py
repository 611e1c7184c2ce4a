"""Compare the per-item scores of two exported runs (``bias-monitor export`` folders).

    python scripts/compare_exports.py EXPORT_A EXPORT_B

Used by scripts/container-smoke: the same job run in the container and on the host must
give identical scores item for item. Both folders are checked against their manifests
first (sha256 and row counts). Every column of ``scores`` except the run id and the time
of scoring is compared by item_id, floats bit for bit (NaN equals NaN). Prints one line per
differing item (ids and column names only: no benchmark sentence), then a summary.

Exit codes: 0 identical; 1 the scores differ; 2 bad input (not an export, damaged).
"""

from __future__ import annotations

import math
import struct
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from monitor.errors import MonitorError
from monitor.store.export import verify_export

IGNORED = frozenset({"run_id", "scored_at"})


def _key(value: Any) -> Any:
    """Bit-exact identity for floats (so -0.0 != 0.0 and NaN == NaN), else the value."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value)) if not math.isnan(value) else ("nan",)
    return value


def load_scores(folder: Path) -> dict[str, dict[str, Any]]:
    exported = verify_export(folder)
    rows = pq.read_table(exported.files["scores"]).to_pylist()
    by_item = {row["item_id"]: row for row in rows}
    if len(by_item) != len(rows):
        raise MonitorError(f"{folder}: scores repeat an item id")
    return by_item


def compare(a: Path, b: Path) -> list[str]:
    """Differences between the two runs' scores; empty when identical item for item."""
    left, right = load_scores(a), load_scores(b)
    problems = []
    only_a, only_b = sorted(left.keys() - right.keys()), sorted(right.keys() - left.keys())
    if only_a:
        problems.append(f"{len(only_a)} item(s) only in {a}: {', '.join(only_a[:5])}")
    if only_b:
        problems.append(f"{len(only_b)} item(s) only in {b}: {', '.join(only_b[:5])}")
    for item_id in sorted(left.keys() & right.keys()):
        ra, rb = left[item_id], right[item_id]
        columns = sorted((ra.keys() | rb.keys()) - IGNORED)
        differing = [c for c in columns if _key(ra.get(c)) != _key(rb.get(c))]
        if differing:
            problems.append(f"item {item_id}: {', '.join(differing)} differ")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    a, b = (Path(x) for x in argv)
    try:
        problems = compare(a, b)
        n = len(load_scores(a))
    except MonitorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code if exc.exit_code == 2 else 2
    for line in problems:
        print(line)
    if problems:
        print(f"scores differ: {len(problems)} problem(s) between {a.name} and {b.name}")
        return 1
    print(f"identical: {n} items, every score column equal bit for bit ({a.name} vs {b.name})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
