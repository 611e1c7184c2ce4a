"""End to end through the CLI with the real SmolLM2: the Indic-Bias taxonomy benchmark
(rates with intervals, a ranking, an identical rerun, drift between two runs), each caste
score beside its neutral control and the metric panel in `show` and the reports, and the
reference metric scoring exactly what the Indian-BhED code scored."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from test_cli_run import cli

pytestmark = pytest.mark.slow

TYPES = {"religion", "region", "caste", "tribe"}


def test_taxonomy_rates_ranking_rerun_and_drift(monitor_env: Path, monkeypatch) -> None:
    first = json.loads(cli("run", "-b", "indic-taxonomy-mini", "--format", "json").stdout)
    (one,) = first
    assert one["status"] == "complete" and one["n_scored"] == 336
    shown = json.loads(cli("show", one["run_id"], "--format", "json").stdout)
    ms = shown["measures"]
    per_type = {m["axis"]: m for m in ms if m["measure"] == "bias_rate"}
    assert set(per_type) == TYPES | {"all"}
    for m in per_type.values():
        assert m["method"].startswith("cluster-bootstrap") and m["details"]["clusters"] > 1
        assert 0 <= m["ci_low"] <= m["value"] <= m["ci_high"] <= 1
    rates = [m for m in ms if m["measure"] == "association_rate"]
    assert len(rates) == 84 and all("/" in m["axis"] for m in rates)
    ranks = [m for m in ms if m["measure"] == "bt_strength"]
    # Every identity of a type and, for tribes, the ten dominant comparators are ranked.
    assert len(ranks) == 12 + 30 + 23 + 19 + 10
    for m in ranks:
        assert m["kind"] == "ranking_score" and m["ci_low"] <= m["value"] <= m["ci_high"]
        lo, hi = m["details"]["rank_ci"]
        assert lo <= m["details"]["rank"] <= hi and "paper_elo" in m["details"]
    assert shown["validations"][-1]["success"] is True

    monkeypatch.setenv("COLUMNS", "80")  # a CI job's log: every table fits, nothing is cut
    table = cli("show", one["run_id"]).stdout
    monkeypatch.delenv("COLUMNS")
    assert "identities by Bradley–Terry strength" in table and "Indic-Bias" in table
    ruled = [line for line in table.splitlines() if "│" in line or "┃" in line]
    assert max(len(line) for line in ruled) <= 80 and "…" not in table
    items = json.loads(cli("show", one["run_id"], "--items", "--format", "json").stdout)["items"]
    assert len(items) == 336 and not {"text_stereo", "payload"} & set(items[0])

    # A rerun with --no-panel scores the run's own metric alone: the same outcomes and the
    # same bits (ull, the default panel's other metric, asks for cll's sentences: the same
    # requests, chunks and forward passes), the same measures and intervals, only the
    # panel's own measures absent.
    (two,) = json.loads(
        cli("run", "-b", "indic-taxonomy-mini", "--no-panel", "--format", "json").stdout
    )
    con = duckdb.connect(str(monitor_env / "monitor.duckdb"), read_only=True)
    differing, worst = con.execute(
        "SELECT count(*) FILTER (WHERE a.outcome <> b.outcome), max(abs(a.delta - b.delta)) "
        "FROM scores a JOIN scores b USING (item_id) WHERE a.run_id = ? AND b.run_id = ?",
        [one["run_id"], two["run_id"]],
    ).fetchone()
    measures = con.execute(
        "SELECT run_id, benchmark, axis, measure, value, ci_low, ci_high FROM axis_measures "
        "WHERE run_id IN (?, ?) ORDER BY benchmark, axis, measure",
        [one["run_id"], two["run_id"]],
    ).fetchall()
    con.close()
    # With cll-reference in the panel (the default until it became opt-in) its requests
    # changed the batch shapes and the sums moved by up to 3.0e-4 nats; now nothing may.
    assert differing == 0 and worst == 0.0, worst
    panel_measure = ("metric_agreement", "bias_rate:ull")
    a = [m[1:] for m in measures if m[0] == one["run_id"]]
    b = [m[1:] for m in measures if m[0] == two["run_id"]]
    # 5 type rates and tie rates, 84 identity rates, 94 rankings, 2 panel measures x 4 types
    assert len(a) == 196 and len(b) == 188
    assert [m for m in a if m[2] not in panel_measure] == b

    # Drift compares the two runs per identity type: nothing moved.
    d = json.loads(
        cli("drift", "--run", two["run_id"], "--baseline", one["run_id"], "--format", "json").stdout
    )
    axes = {c["axis"] for c in d["comparisons"]}
    assert axes >= TYPES
    for c in d["comparisons"]:
        assert (c["to_anti"], c["to_stereo"]) == (0, 0)
        assert c["verdict"] == "no significant change"


def test_caste_score_beside_neutral_control_and_metric_panel(
    monitor_env: Path, smollm2_caste_runs
) -> None:
    # Two runs of `run -b bhed-caste`, scored through the CLI once per session; a copy of
    # their store is this test's store.
    scored_db, runs = smollm2_caste_runs
    shutil.copy(scored_db, os.environ["MONITOR_DB"])
    shown = cli("show", runs[1]["run_id"]).stdout
    assert "bias rates in context" in shown and "bhed-neutral" in shown
    out = monitor_env / "report"
    cli("report", "--out", str(out))
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    data = json.loads((out / "report.json").read_text())
    assert "### Bias rates in context" in md and "bhed-neutral" in md
    assert "Bias rates in context" in html and "bhed-neutral" in html
    ctx = [c for c in data["contexts"] if c["benchmark"] == "bhed-caste"]
    assert {c["run_id"] for c in ctx} == {r["run_id"] for r in runs}
    for c in ctx:
        assert c["control_benchmark"] == "bhed-neutral" and c["control"]["n"] == 52
        assert [p["label"] for p in c["panel"]] == ["cll", "ull"]  # the default panel
        assert all(p["control"] is not None for p in c["panel"])
        assert c["agreement"]["n"] == 106
    caste_trend = next(t for t in data["trends"] if t["benchmark"] == "bhed-caste")
    assert caste_trend["control"] == ctx[0]["control"]["value"]


def test_reference_metric_scores_what_the_code_scored(monitor_env: Path) -> None:
    (out,) = json.loads(
        cli(
            "run", "--metric", "cll-reference", "--errata", "none", "-b", "bhed-race",
            "-b", "bhed-religion", "--no-panel", "--format", "json",
        ).stdout
    )  # fmt: skip
    assert out["n_scored"] == 386 + 123
    shown = json.loads(cli("show", out["run_id"], "--format", "json").stdout)
    by = {(m["axis"], m["measure"]): m for m in shown["measures"]}
    # n as the Indian-BhED code prints it; our exclusions beside it, not applied.
    assert (by[("race", "bias_rate")]["k"], by[("race", "bias_rate")]["n"]) == (244, 386)
    assert (by[("religion", "bias_rate")]["k"], by[("religion", "bias_rate")]["n"]) == (75, 123)
    assert by[("race", "bias_rate_after_exclusions")]["n"] == 385
    assert by[("religion", "bias_rate_after_exclusions")]["n"] == 121
    assert {(e["benchmark"], e["source_row"]) for e in shown["exclusions"]} == {
        ("bhed-race", 25),
        ("bhed-religion", 96),
        ("bhed-religion", 100),
    }
