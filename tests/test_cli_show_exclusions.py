"""``show`` lists a run's excluded rows one line per benchmark and reason, rows as ranges,
within an 80-column log: a defective template of 8 rows is one line, not 8 lines of 120
characters. Through the CLI, on a run written to a real DuckDB file."""

from __future__ import annotations

from pathlib import Path

from _report_store import ReportStore, _cli, report_store_fixture  # noqa: F401  (session fixture)
from test_store_support import BENCHMARK, VERSION, make_items, make_measures, make_run, make_score
from typer.testing import CliRunner

from monitor.benchmarks.items import Exclusion
from monitor.cli.app import app
from monitor.store.db import Store

SAME = "two of the three options are the same text once outer spaces are removed"


def test_excluded_rows_are_grouped_into_ranges_within_80_columns(tmp_path: Path) -> None:
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    items = make_items(4)
    rows = [5, 6, 7, 9, 12]
    exclusions = [Exclusion(BENCHMARK, VERSION, r, "options_not_distinct", SAME) for r in rows]
    exclusions.append(Exclusion(BENCHMARK, VERSION, 13, "duplicate", "same pair as row 2"))
    with store.session():
        store.upsert_items(items)
        store.begin_run(make_run("r1"))
        store.add_scores("r1", [make_score(i) for i in items])
        store.add_exclusions("r1", exclusions)
        store.finish_run("r1", "complete", make_measures(), len(items), len(exclusions))
    result = CliRunner().invoke(app, ["show", "r1", "--db", str(db)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(map(len, lines[lines.index("excluded rows: 6") :])) <= 80
    start = lines.index("excluded rows: 6")
    assert lines[start + 1 : start + 4] == [
        f"  {BENCHMARK} rows 5–7, 9, 12: options_not_distinct (two of the three options are",
        "    the same text once outer spaces are removed)",
        f"  {BENCHMARK} row 13: duplicate (same pair as row 2)",
    ]


def test_provenance_lines_fit_80_columns_and_name_versions_not_dicts(
    report_store: ReportStore,
) -> None:
    """``show``'s provenance block on the session's real runs (an imported study run and
    a SmolLM2 run): the package list and each dataset version wrap under the value's
    column instead of running to 110 columns, and an imported run's dataset versions read
    as the benchmark versions it matched, not as a Python dict."""
    env = {**report_store.env, "COLUMNS": "80"}
    for run in ("import-gpt-4o-caste-study-20240416", report_store.smol_runs[0]):
        text = _cli(env, "show", run)
        lines = text.splitlines()
        block = lines[: next(i for i, x in enumerate(lines) if x.startswith("per-axis"))]
        assert max(map(len, block)) <= 80, [x for x in block if len(x) > 80]
        assert "{'" not in text and "dataset            bhed-caste:" in text, text[:2000]
        if run.startswith("import-"):
            assert "bhed-caste@" in text and "packages           —" in text
        else:
            assert "packages           " in text and "torch " in text
