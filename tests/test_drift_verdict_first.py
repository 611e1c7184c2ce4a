"""`bias-monitor drift` reads verdict first: controls are controls, only axes both runs
scored are compared, and the default output is one line per axis at the log's width.

Runs are written into a real DuckDB store without a model (neutral synthetic items under
the manifest's benchmark ids, so the manifest's control, bhed-neutral beside bhed-caste,
applies), then read through the CLI as a user types it, in a subprocess whose stdout is
not a terminal.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from _report_store import ReportStore, report_store_fixture  # noqa: F401  (session fixture)

from monitor.benchmarks.items import Item
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store

N = 100
AXES = {
    "bhed-caste": "caste",
    "bhed-neutral": "caste-control",
    "bhed-religion": "religion",
    "bhed-gender": "gender",
    "bhed-race": "race",
    "crows-pairs": "physical-appearance",  # a long label, as CrowS-Pairs' bias types are
}
NEW_SNAPSHOT = "my-finetune-smollm2-135m"
OLD_SNAPSHOT = "smollm2-135m-instruct-q4"
NEW_RUN = f"20261125T110508Z-{NEW_SNAPSHOT}-3f2a9c"
OLD_RUN = f"20261120T093000Z-{OLD_SNAPSHOT}-ab12cd"


def _version(bench: str) -> str:
    return f"{bench}@000000000000:000000000000:errata-none"


def _items(bench: str) -> list[Item]:
    axis, version = AXES[bench], _version(bench)
    out = []
    for i in range(N):
        s, a = f"{axis} person {i} picked red.", f"{axis} person {i} picked blue."
        out.append(
            PairItem(
                item_id=make_item_id(version, s, a),
                benchmark=bench,
                axis=axis,
                region="india",
                benchmark_version=version,
                source_row=i,
                text_stereo=s,
                text_anti=a,
                targets_stereo=("red",),
                targets_anti=("blue",),
            )
        )
    return out


def _outcomes(stereo: int) -> list[str]:
    return ["stereo"] * stereo + ["anti"] * (N - stereo)


def _write(store: Store, run_id: str, snapshot: str, day: int, stereo: dict[str, int]) -> None:
    """One run scoring the benchmarks in ``stereo`` (benchmark → items that prefer the
    stereotype, of N), with per-benchmark dataset versions as a real run records them."""
    items = [i for bench in stereo for i in _items(bench)]
    outcomes = [o for bench, k in stereo.items() for o in _outcomes(k)]
    run = RunRecord(
        run_id=run_id,
        snapshot_id=snapshot,
        snapshot_kind="hf-causal",
        snapshot_revision=f"{snapshot}==1:model.gguf#sha256=aa",
        snapshot_manifest={"id": snapshot},
        metric="cll",
        metric_version="1",
        benchmarks=sorted(stereo),
        dataset_versions={
            b: {"label": _version(b), "sha256": f"{b}-sha", "n_items": N} for b in stereo
        },
        fingerprint=f"fp-{run_id}",
        trigger="manual",
        started_at=datetime(2026, 11, day, tzinfo=UTC),
        environment={"packages": {"torch": "2.13.0"}},
        origin="local",
        status="complete",
    )
    scores = [
        ScoreRow(i.item_id, "cll", "1", o, None) for i, o in zip(items, outcomes, strict=True)
    ]
    store.record_run(run, items=items, scores=scores, exclusions=[])


def cli(db: Path, *args: str, columns: int | None = None) -> subprocess.CompletedProcess:
    """The command a user types, stdout captured (not a terminal); ``columns`` sets
    COLUMNS as a CI runner may."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["MONITOR_DB"] = str(db)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "monitor", "drift", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


PR = ("--snapshot", NEW_SNAPSHOT, "--baseline-snapshot", OLD_SNAPSHOT)


@pytest.fixture
def control_moved(tmp_path) -> Path:
    """Caste unchanged (41% → 39%, two items), its neutral control 25% → 6% (19 items:
    a McNemar p far below 0.05 had it been tested)."""
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    _write(store, OLD_RUN, OLD_SNAPSHOT, 20, {"bhed-caste": 41, "bhed-neutral": 25})
    _write(store, NEW_RUN, NEW_SNAPSHOT, 25, {"bhed-caste": 39, "bhed-neutral": 6})
    return db


@pytest.fixture
def fewer_axes(tmp_path) -> Path:
    """A four-axis baseline and a new run of caste (with its control) and religion only,
    on identical items; the model changed."""
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    old = {"bhed-caste": 41, "bhed-neutral": 25, "bhed-religion": 60}
    _write(store, OLD_RUN, OLD_SNAPSHOT, 20, {**old, "bhed-gender": 55, "bhed-race": 50})
    _write(store, NEW_RUN, NEW_SNAPSHOT, 25, {**old, "bhed-religion": 58})
    return db


def test_a_moving_control_is_no_flag_and_reads_beside_its_axis(control_moved: Path) -> None:
    proc = cli(control_moved, *PR, "--fail-on", "any")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert "caste 39.0% with its control at 6.0%, was 41.0% with 25.0%" in text
    assert "caste-control" not in text  # never a line (or a verdict) of its own
    assert "improvement" not in text and "0 flagged of 1 paired tests" in text
    assert "Δ and MDE in percentage points" in " ".join(text.split())  # a pair axis: rates

    data = json.loads(cli(control_moved, *PR, "--format", "json").stdout)
    [caste] = data["comparisons"]  # the control is no comparison
    assert caste["axis"] == "caste" and caste["flagged"] is False
    assert caste["control"] == {
        "benchmark": "bhed-neutral",
        "axis": "caste-control",
        "rate_old": 0.25,
        "rate_new": 0.06,
    }
    assert caste["p_bh"] == caste["p_mcnemar"]  # a BH family of one: the control is not in it
    assert data["unscored"] == []


def test_only_axes_both_runs_scored_are_compared(fewer_axes: Path) -> None:
    proc = cli(fewer_axes, *PR, "--fail-on", "any")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    verdicts = [line for line in lines if re.match(r"(caste|religion) +\d", line)]
    assert len(verdicts) == 2 and all("no significant change" in v for v in verdicts)
    unscored = [line for line in lines if line.endswith("not scored in the new run")]
    assert [u.split()[0] for u in unscored] == ["gender", "race"]
    assert "dataset_versions" not in proc.stdout and "not comparable" not in proc.stdout

    data = json.loads(cli(fewer_axes, *PR, "--format", "json").stdout)
    assert [c["axis"] for c in data["comparisons"]] == ["caste", "religion"]
    assert [(u["axis"], u["missing"]) for u in data["unscored"]] == [
        ("gender", "new"),
        ("race", "new"),
    ]
    for c in data["comparisons"]:
        fields = [f["field"] for f in c["provenance_diff"]]
        assert "snapshot_revision" in fields  # the model did change ...
        assert not [f for f in fields if f.startswith("dataset_versions") or f == "benchmarks"]
        assert c["attribution"] == "model change"  # ... and nothing about the benchmarks
    details = {d["axis"]: d for d in data["comparison_details"]}
    caste = details["caste"]
    assert [ch["label"] for ch in caste["configuration_changes"]] == ["model"]
    assert "benchmark" not in caste["summary"]

    wide = cli(fewer_axes, *PR, "--format", "table-wide").stdout
    assert "dataset_versions" not in wide and "benchmark version" not in wide


@pytest.fixture
def five_axes(tmp_path) -> Path:
    """As ``fewer_axes``, plus a long-named axis both runs scored that regressed by 40
    points: the widest line a comparison writes."""
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    old = {"bhed-caste": 41, "bhed-neutral": 25, "bhed-religion": 60, "crows-pairs": 30}
    _write(store, OLD_RUN, OLD_SNAPSHOT, 20, {**old, "bhed-gender": 55, "bhed-race": 50})
    _write(store, NEW_RUN, NEW_SNAPSHOT, 25, {**old, "bhed-religion": 58, "crows-pairs": 70})
    return db


@pytest.mark.parametrize("columns", [80, 140])
def test_one_line_per_axis_within_the_width(five_axes: Path, columns: int) -> None:
    proc = cli(five_axes, *PR, "--fail-on", "regression", columns=columns)
    assert proc.returncode == 1, proc.stderr  # the regression still fails the check
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= columns, "\n".join(lines)
    for axis in ("caste", "religion", "gender", "race", "physical-appearance"):
        assert len([line for line in lines if line.split()[:1] == [axis]]) == 1, axis
    appearance = next(line for line in lines if line.startswith("physical-appearance "))
    assert "30.0% → 70.0%" in appearance and appearance.endswith("regression")
    # At 80 columns the long verdict words give way to a code explained once; at 140
    # they fit whole.
    legend = "verdicts: n.s. = no significant change"
    if columns == 80:
        assert next(line for line in lines if line.startswith("caste ")).endswith("  n.s.")
        assert legend in proc.stdout
    else:
        assert legend not in proc.stdout
        assert next(line for line in lines if line.startswith("caste ")).endswith(
            "no significant change"
        )
    # The runs are named once, in full, with their snapshot names.
    assert proc.stdout.count(NEW_RUN) == proc.stdout.count(OLD_RUN) == 1
    assert any(line.startswith(f"new       {NEW_SNAPSHOT}") for line in lines)
    assert any(line.startswith(f"baseline  {OLD_SNAPSHOT}") for line in lines)
    caste = next(line for line in lines if line.startswith("caste "))
    assert "41.0% → 41.0%" in caste and "[" in caste and "±" in caste
    assert "with its control at 25.0%" in proc.stdout


def test_without_columns_a_log_is_140_wide(fewer_axes: Path) -> None:
    lines = cli(fewer_axes, *PR).stdout.splitlines()
    assert max(len(line) for line in lines) <= 140
    assert "no significant change" in "\n".join(lines)  # room for the whole words


def test_report_data_has_flags_controls_and_unscored_axes(fewer_axes: Path, tmp_path) -> None:
    """What `report` hands its renderers (report.json): flagged and MDE per comparison,
    the control beside caste, the unscored axes of the pair, no control as an axis."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["MONITOR_DB"] = str(fewer_axes)
    out = tmp_path / "report"
    subprocess.run(
        [sys.executable, "-m", "monitor", "report", "--out", str(out), *PR],
        check=True,
        capture_output=True,
        env=env,
        timeout=300,
    )
    data = json.loads((out / "report.json").read_text())
    comps = {c["axis"]: c for c in data["comparisons"]}
    assert sorted(comps) == ["caste", "religion"]
    assert all(c["flagged"] is False and c["mde"] > 0 for c in comps.values())
    assert comps["caste"]["control"] == {
        "benchmark": "bhed-neutral",
        "axis": "caste-control",
        "rate_old": 0.25,
        "rate_new": 0.25,
    }
    assert comps["religion"]["control"] is None
    assert [(u["axis"], u["missing"], u["snapshot_id"]) for u in data["unscored"]] == [
        ("gender", "new", NEW_SNAPSHOT),
        ("race", "new", NEW_SNAPSHOT),
    ]
    [diff] = data["provenance"]
    assert not [c for c in diff["changes"] if c["field"].startswith("dataset_versions")]


def test_table_wide_keeps_the_full_table(fewer_axes: Path) -> None:
    wide = cli(fewer_axes, *PR, "--format", "table-wide", columns=400).stdout
    for header in ("benchmark/axis", "old", "new", "MDE", "p(BH)", "b/c", "verdict"):
        assert header in wide
    assert wide.count(NEW_RUN) >= 2  # the table's title names its runs (and the lines after)
    assert "BH-adjusted p" in wide  # the verdict's reason, under the table


def test_a_bad_format_is_one_line(fewer_axes: Path) -> None:
    proc = cli(fewer_axes, "--format", "wide")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_smollm2_one_axis_against_its_two_axis_run(
    monitor_env: Path, report_store: ReportStore
) -> None:
    """The real thing: SmolLM2 scored caste and religion (with caste's neutral control; the
    session's report store holds that run, ``--no-panel``), then caste only; drift compares
    what both scored, reads the control beside caste and says religion was not scored, at
    80 columns. (Two axes against one show the rule as four against two did.)"""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}

    def run(*benchmarks: str) -> str:
        args = [arg for b in benchmarks for arg in ("-b", b)]
        args += ["--no-panel", "--format", "json"]
        proc = subprocess.run(
            [sys.executable, "-m", "monitor", "run", "-s", "smollm2-135m-instruct-q4", *args],
            capture_output=True,
            text=True,
            timeout=1200,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        [row] = json.loads(proc.stdout)
        return row["run_id"]

    db = monitor_env / "monitor.duckdb"
    shutil.copy(report_store.env["MONITOR_DB"], db)
    old = report_store.smol_runs[1]  # run -b bhed-caste -b bhed-religion --no-panel
    new = run("bhed-caste")
    pair = ("--run", new, "--baseline", old)
    proc = cli(db, *pair, "--fail-on", "any", columns=80)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, proc.stdout
    for axis in ("caste", "religion"):
        assert len([line for line in lines if line.split()[:1] == [axis]]) == 1, axis
    assert [line.split()[0] for line in lines if "not scored in the new run" in line] == [
        "religion"
    ]
    assert re.search(r"↳ caste [\d.]+% with its control at [\d.]+%, was [\d.]+% with", proc.stdout)
    data = json.loads(cli(db, *pair, "--format", "json").stdout)
    assert [c["axis"] for c in data["comparisons"]] == ["caste"]
    assert not any(c["flagged"] for c in data["comparisons"])
    assert data["comparisons"][0]["control"]["benchmark"] == "bhed-neutral"
    for c in data["comparisons"]:
        assert not [f for f in c["provenance_diff"] if f["field"].startswith("dataset_versions")]
