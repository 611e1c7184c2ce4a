"""The resume fingerprint and the metric panel: a run scored without the panel stores rows
without ``details.panel``, and a default run (cll and ull) rows without cll-reference, so a
killed one must never be resumed by a run with another panel (or the other way round),
while the fingerprint of a full-panel run (``--metrics cll-reference``: the default before
cll-reference left it) stays what earlier versions stored (their killed runs still resume)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from monitor.benchmarks.load import load_benchmarks
from monitor.jobs.options import RunOptions
from monitor.jobs.run_record import fingerprint
from monitor.snapshots.registry import load_snapshots


def test_each_panel_is_another_measurement_and_the_full_one_is_unchanged(shared_datasets: Path):
    snapshot = load_snapshots()["smollm2-135m-instruct-q4"]
    benches = load_benchmarks(["bhed-caste"], data_dir=shared_datasets)  # pinned files

    def of(metric: str = "cll", **options) -> str:
        return fingerprint(snapshot, metric, "3", benches, RunOptions(**options))

    default, full, without = of(), of(panel_metrics=("cll-reference",)), of(panel=False)
    assert len({default, full, without}) == 3
    assert without == of(panel=False) and default == of(panel_metrics=("ull",))
    # cll-reference's own run holds the full panel whatever --metrics says.
    assert of("cll-reference") == of("cll-reference", panel_metrics=("cll-reference",))
    # The payload a default run hashed before --no-panel existed, and before cll-reference
    # left the default panel: the full panel's.
    before = {
        "snapshot": snapshot.revision_label,
        "kind": snapshot.kind,
        "metric": "cll",
        "metric_version": "3",
        "benchmarks": [benches[0].version.label],
        "seed": 0,
        "dtype": "auto",
        "device": "auto",
    }
    digest = hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()[:24]
    assert full == digest and default != digest


def test_a_sampled_benchmark_of_another_size_is_another_measurement(shared_datasets: Path):
    """``--size mini`` and ``--size default`` of one file share its version label: a killed
    mini run must not be resumed (and topped up) by a default-size run."""
    snapshot = load_snapshots()["smollm2-135m-instruct-q4"]

    def of(size: str, seed: int = 0) -> str:
        benches = load_benchmarks(
            ["bharatbbq-caste"], data_dir=shared_datasets, options={"size": size, "seed": seed}
        )
        return fingerprint(snapshot, "mc-loglik", "1", benches, RunOptions())

    mini = of("mini")
    assert mini == of("mini")
    assert len({mini, of("default"), of("full"), of("mini", seed=1)}) == 4
