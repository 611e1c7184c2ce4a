"""The choice-QA family's benchmark-data suite through ``bias-monitor data fetch``.

A benchmark added the documented way (a manifest entry, imported with ``data fetch
--from``) made of the first rows of the pinned BBQ Religion file passes; the same rows
with three defects the loader accepts (an ambiguous question whose answer is not the
unknown option, a disambiguated one whose answer is, an empty option) fail the
fetch, naming each rule and row, never a sentence. The real files pass the suite in the
image build (``scripts/container-smoke`` runs ``data fetch`` on every benchmark); here,
three of them (a BBQ file, a BharatBBQ category and an intersection) in
``test_pinned_choice_files_pass``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from test_cli_run import cli

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.quality import validate_benchmark

REPO = Path(__file__).resolve().parents[1]
ROWS = 12
# Pinned rows whose options are not three different answers (checked by hand).
SAME_OPTIONS = {
    "bharatbbq-genderxreligion": [368, 369, 370, 371, 432, 433, 434, 435],
    "bharatbbq-region": list(range(248, 256)),
}

ENTRY = """
[benchmarks.bbq-sample]
source = "bbq"
format = "bbq-jsonl"
axis = "religion"
region = "us"
path = "bbq-sample/Religion-first-{n}.jsonl"
url = "https://example.invalid/Religion-first-{n}.jsonl"
sha256 = "{sha}"
rows = {n}
default = false
"""


def _home(monitor_env: Path, monkeypatch, records: list[dict], name: str) -> Path:
    """A MONITOR_HOME whose manifest has ``bbq-sample`` = ``records``, and its source folder."""
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    home = monitor_env / f"home-{name}"
    shutil.copytree(REPO / "data", home / "data")
    with (home / "data" / "benchmarks.toml").open("a", encoding="utf-8") as fh:
        fh.write(ENTRY.format(n=len(records), sha=hashlib.sha256(data).hexdigest()))
    src = monitor_env / f"src-{name}"
    (src / "bbq-sample").mkdir(parents=True)
    (src / "bbq-sample" / f"Religion-first-{len(records)}.jsonl").write_bytes(data)
    monkeypatch.setenv("MONITOR_HOME", str(home))
    monkeypatch.setenv("MONITOR_DATA_DIR", str(monitor_env / f"data-{name}"))
    return src


@pytest.fixture
def first_rows(shared_datasets: Path) -> list[dict]:
    lines = (shared_datasets / "bbq" / "data" / "Religion.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines[:ROWS]]


def test_clean_rows_pass_and_defects_fail_naming_rule_and_row(
    monitor_env: Path, monkeypatch, first_rows: list[dict]
) -> None:
    src = _home(monitor_env, monkeypatch, first_rows, "clean")
    ok = cli("data", "fetch", "-b", "bbq-sample", "--from", str(src))
    assert f"bbq-sample: {ROWS} items, 0 excluded rows; quality suite passed" in ok.stderr

    bad = [dict(r) for r in first_rows]
    assert bad[0]["context_condition"] == "ambig" and bad[0]["label"] == 1  # 1 = unknown
    bad[0]["label"] = 0
    assert bad[1]["context_condition"] == "disambig" and bad[1]["label"] != 1
    bad[1]["label"] = 1
    bad[2]["ans0"] = "  "  # an empty option
    src = _home(monitor_env, monkeypatch, bad, "bad")
    proc = cli("data", "fetch", "-b", "bbq-sample", "--from", str(src), check=False)
    assert proc.returncode == 2, proc.stderr
    message = " ".join(proc.stderr.split())
    assert "bbq-sample: benchmark quality suite failed" in message
    for rule in (
        "an ambiguous context's correct answer is the unknown option",
        "a disambiguated context's correct answer is not the unknown option",
        "no option is empty",
    ):
        assert rule in message, message
    assert "Traceback" not in proc.stderr
    for r in first_rows[:3]:  # no sentence or option text in the error
        assert r["context"][:40] not in message and r["ans2"] not in message


def _two_equal_options(first_rows: list[dict]) -> list[dict]:
    """The rows with row 3's two group options made equal up to an outer space."""
    rows = [dict(r) for r in first_rows]
    info = rows[3]["answer_info"]
    groups = [k for k in ("ans0", "ans1", "ans2") if info[k][1].lower() != "unknown"]
    assert len(groups) == 2
    rows[3][groups[1]] = rows[3][groups[0]] + " "
    return rows


def test_a_row_whose_options_are_not_distinct_is_excluded_not_scored(
    monitor_env: Path, monkeypatch, first_rows: list[dict]
) -> None:
    """Two options that differ only by outer spaces (as in 8 rows of BharatBBQ's
    GenderxReligion file): the loader excludes the row with its reason, the fetch passes
    and counts it; a loaded item with such options fails the suite's rule."""
    src = _home(monitor_env, monkeypatch, _two_equal_options(first_rows), "same")
    monkeypatch.setenv("COLUMNS", "80")
    ok = cli("data", "fetch", "-b", "bbq-sample", "--from", str(src))
    assert f"bbq-sample: {ROWS - 1} items, 1 excluded rows; quality suite passed" in ok.stderr
    # Where the file went, whole in an 80-column log: the folder once, the file under it.
    data = monitor_env / "data-same"
    assert ok.stdout.startswith(f"1 file verified by sha256 in {data}\n"), ok.stdout
    assert f"bbq-sample/Religion-first-{ROWS}.jsonl" in ok.stdout
    assert max(len(line) for line in ok.stdout.splitlines()[1:]) <= 80  # the table

    (bench,) = load_benchmarks(["bbq-sample"], options={"size": "full"})
    assert [(e.source_row, e.reason) for e in bench.exclusions] == [(3, "options_not_distinct")]
    item = bench.items[0]
    options = [item.payload["options"][0]] * 2 + [item.payload["options"][2]]
    bad = dataclasses.replace(item, payload={**item.payload, "options": options})
    bench = dataclasses.replace(bench, items=[bad, *bench.items[1:]], exclusions=[])
    result = validate_benchmark(bench, expected_rows=ROWS)
    reasons = " ".join(f.reason for f in result.failures)
    assert not result.success and "the three options are different answers" in reasons


@pytest.mark.slow
def test_the_run_summary_and_show_count_the_excluded_row(
    monitor_env: Path, monkeypatch, first_rows: list[dict]
) -> None:
    """A user who scores the benchmark sees the excluded row under the run's table, with
    its reason, and again in ``show``: the denominator is never silent."""
    src = _home(monitor_env, monkeypatch, _two_equal_options(first_rows), "summary")
    monkeypatch.setenv("MONITOR_SNAPSHOTS_DIR", str(REPO / "snapshots"))
    assert cli("data", "fetch", "-b", "bbq-sample", "--from", str(src)).returncode == 0
    run = cli("run", "-s", "smollm2-135m-instruct-q4", "-b", "bbq-sample", "--size", "full")
    assert run.returncode == 0, run.stderr[-2000:]
    assert f"scored {ROWS - 1} items; excluded 1 source rows" in run.stdout, run.stdout
    assert "exclusions: options_not_distinct 1" in run.stdout
    assert "a sample" not in run.stdout  # --size full: every row was drawn
    (listed,) = json.loads(cli("runs", "list", "--format", "json").stdout)
    shown = cli("show", listed["run_id"])
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "excluded rows: 1" in shown.stdout
    assert "bbq-sample row 3: options_not_distinct" in shown.stdout


def test_pinned_choice_files_pass(tmp_path: Path, shared_datasets: Path) -> None:
    """Pinned files, every row (``full``), as ``data fetch`` checks them; GenderxReligion's
    and Region's 8 rows with two equal options each are recorded exclusions."""
    manifest = load_manifest()
    ids = ["bbq-religion", "bharatbbq-caste", "bharatbbq-regionxgender", *SAME_OPTIONS]
    fetch(manifest, ids, from_dir=shared_datasets, data_dir=tmp_path)
    for bench in load_benchmarks(ids, data_dir=tmp_path, options={"size": "full"}):
        rows = manifest.benchmarks[bench.benchmark].rows
        result = validate_benchmark(bench, expected_rows=rows)
        assert result.success, (bench.benchmark, [f.reason for f in result.failures])
        assert len(bench.items) + len(bench.exclusions) == rows
        excluded = [e.source_row for e in bench.exclusions]
        if bench.benchmark in SAME_OPTIONS:
            assert excluded == SAME_OPTIONS[bench.benchmark]
            assert {e.reason for e in bench.exclusions} == {"options_not_distinct"}
        else:
            assert excluded == []
