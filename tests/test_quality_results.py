"""Results suite on a real DuckDB file holding a run of real Indian-BhED items.

The scores are real too: Llama-2-7b per-row log-probabilities for Caste.csv published on
the Indian-LLMs-Bias repository's PR #2 (../shared/datasets/indian-bhed/pr2-am-bean), turned
into CLL ScoreRows. Each failure test corrupts one thing the way a real bug would and
checks that the suite names the expectation and the item.
"""

from __future__ import annotations

import csv
import json
import math
import socket
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from monitor.benchmarks.items import Item
from monitor.benchmarks.load import load_benchmarks
from monitor.errors import UserInputError
from monitor.families.pairs.records import PairScoreRow
from monitor.jobs.lifecycle import RunLifecycle
from monitor.metrics.outcomes import decide
from monitor.quality import validate_run
from monitor.quality.results_suite import validate_run_frames
from monitor.records import AxisMeasure, ScoreRow
from monitor.store import migrate
from monitor.store.db import Store

RUN_ID = "20260101T000000Z-llama-2-7b-abc123"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def caste_items(shared_datasets) -> list[Item]:
    (caste,) = load_benchmarks(["bhed-caste"], data_dir=shared_datasets)
    return caste.items


@pytest.fixture(scope="module")
def llama_rows(shared_datasets, caste_items) -> list[ScoreRow]:
    """CLL score rows from the published Llama-2-7b scores, matched by source row."""
    path = shared_datasets / "indian-bhed" / "pr2-am-bean" / "Caste.csv_scores.csv"
    with path.open(encoding="utf-8", newline="") as f:
        published = {int(r[""]): r for r in csv.DictReader(f)}
    rows = []
    for item in caste_items:
        r = published[item.source_row]
        delta = float(r["Score_Conditional"])
        rows.append(
            PairScoreRow(
                item_id=item.item_id,
                metric="cll",
                metric_version="1",
                outcome="stereo" if delta > 0 else "anti" if delta < 0 else "tie",
                delta=delta,
                score_stereo=float(r["Stereotypical_Score"])
                - float(r["Target_Stereotypical_Score"]),
                score_anti=float(r["Anti-Stereotypical_Score"])
                - float(r["Target_Anti-Stereotypical_Score"]),
                lp_stereo=float(r["Stereotypical_Score"]),
                lp_anti=float(r["Anti-Stereotypical_Score"]),
                prior_stereo=float(r["Target_Stereotypical_Score"]),
                prior_anti=float(r["Target_Anti-Stereotypical_Score"]),
                n_tokens_stereo=12,
                n_tokens_anti=12,
            )
        )
    return rows


def bias_rate(rows: list[ScoreRow]) -> AxisMeasure:
    decided = [r for r in rows if r.outcome in ("stereo", "anti")]
    k, n = sum(r.outcome == "stereo" for r in decided), len(decided)
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    return AxisMeasure(
        "bhed-caste",
        "caste",
        "bias_rate",
        k,
        n,
        k / n,
        float(lo),
        float(hi),
        "stereo wins among decided pairs",
    )


def build_store(
    path: Path,
    items: list[Item],
    rows: list[ScoreRow],
    *,
    metric: str = "cll",
    measures: list[AxisMeasure] | None = None,
    git_commit: str | None = "unknown",
    n_scored: int | None = None,
) -> Store:
    """A real DuckDB file written at schema version 1 with one run by plain SQL, then
    opened (and so migrated to the current schema) as a Store."""
    con = duckdb.connect(str(path))
    migrate.apply_migrations(con, str(path), upto=1)
    con.executemany(
        "INSERT INTO items (item_id, benchmark, benchmark_version, axis, region, source_row,"
        " direction, text_stereo, text_anti, targets_stereo, targets_anti, template, errata)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [
                it.item_id,
                it.benchmark,
                it.benchmark_version,
                it.axis,
                it.region,
                it.source_row,
                it.direction,
                it.text_stereo,
                it.text_anti,
                list(it.targets_stereo),
                list(it.targets_anti),
                it.template,
                list(it.errata),
            ]
            for it in items
        ],
    )
    con.execute(
        """INSERT INTO runs (run_id, snapshot_id, snapshot_kind, snapshot_revision,
               snapshot_manifest, metric, metric_version, benchmarks, dataset_versions,
               fingerprint, trigger, status, started_at, git_commit, device, environment,
               n_scored, n_excluded)
           VALUES (?, 'llama-2-7b', 'hf-causal', 'meta-llama/Llama-2-7b-hf@01c7f73d', '{}', ?, '1',
               ['bhed-caste'], ?, 'fp', 'manual', 'running', ?, ?, 'cpu', ?, ?, 0)""",
        [
            RUN_ID,
            metric,
            json.dumps(
                {"bhed-caste": {"label": items[0].benchmark_version, "n_items": len(items)}}
            ),
            datetime(2026, 1, 1, tzinfo=UTC),
            git_commit,
            json.dumps({"torch": "2.13.0", "device": "cpu"}),
            len(rows) if n_scored is None else n_scored,
        ],
    )
    con.executemany(
        "INSERT INTO scores (run_id, item_id, metric, metric_version, outcome, delta,"
        " score_stereo, score_anti, lp_stereo, lp_anti, prior_stereo, prior_anti, prob_stereo,"
        " prob_anti, n_tokens_stereo, n_tokens_anti, details, scored_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [
                RUN_ID,
                r.item_id,
                r.metric,
                r.metric_version,
                r.outcome,
                r.delta,
                r.score_stereo,
                r.score_anti,
                r.lp_stereo,
                r.lp_anti,
                r.prior_stereo,
                r.prior_anti,
                r.prob_stereo,
                r.prob_anti,
                r.n_tokens_stereo,
                r.n_tokens_anti,
                json.dumps(r.details),
                datetime(2026, 1, 1, tzinfo=UTC),
            ]
            for r in rows
        ],
    )
    con.executemany(
        "INSERT INTO axis_measures (run_id, benchmark, axis, measure, k, n, value, ci_low,"
        " ci_high, definition) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [
                RUN_ID,
                m.benchmark,
                m.axis,
                m.measure,
                m.k,
                m.n,
                m.value,
                m.ci_low,
                m.ci_high,
                m.definition,
            ]
            for m in (measures if measures is not None else [bias_rate(rows)])
        ],
    )
    con.close()
    return Store(path)


def check(store: Store, run_id: str = RUN_ID, **kwargs):
    """The results suite on what the store holds for ``run_id``."""
    with store.read() as view:
        return validate_run(view.result_frames(run_id), **kwargs)


def sql(store: Store, query: str, params=None):
    """Tamper with the file the way a bug (or a person) would, outside the store's API."""
    with duckdb.connect(str(store.path)) as con:
        return con.execute(query, params).fetchall()


def corrupt(rows: list[ScoreRow], index: int, **changes) -> list[ScoreRow]:
    return [replace(r, **changes) if i == index else r for i, r in enumerate(rows)]


def upstream_bug(rows: list[ScoreRow], index: int, lp_stereo: float) -> list[ScoreRow]:
    """A backend bug that returns an impossible log-prob: the metric then computes its
    delta, score and outcome from it, so the row is consistent but out of range."""
    r = rows[index]
    score_s = lp_stereo - r.prior_stereo
    delta = score_s - r.score_anti
    fixed = replace(
        r, lp_stereo=lp_stereo, score_stereo=score_s, delta=delta, outcome=decide(delta)
    )
    return [fixed if i == index else row for i, row in enumerate(rows)]


def failure_for(result, frame: str, column: str):
    matches = [f for f in result.failures if f.frame == frame and column in f.columns]
    assert matches, result.reasons
    return matches[0]


def test_good_run_passes_and_is_stored(tmp_path, caste_items, llama_rows):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows)
    result = check(con, expected_item_ids={it.item_id for it in caste_items})
    assert result.success, result.reasons
    assert result.suite == "results" and result.subject == RUN_ID
    frames = {c["frame"] for c in result.checks}
    assert frames == {"run", "scores", "axis_measures", "expected_items"}
    RunLifecycle(con).gate(RUN_ID, expected_item_ids={it.item_id for it in caste_items})
    ((suite, success, doc),) = sql(
        con, "SELECT suite, success, results FROM validations WHERE run_id = ?", [RUN_ID]
    )
    assert (suite, success) == ("results", True)
    assert json.loads(doc)["n_checks"] == len(result.checks) > 40
    # The stored document never carries benchmark text.
    assert not any(it.text_stereo in doc or it.template in doc for it in caste_items)


def test_positive_log_prob_fails_naming_item(tmp_path, caste_items, llama_rows):
    bad = upstream_bug(llama_rows, 5, lp_stereo=3.2)
    con = build_store(tmp_path / "m.duckdb", caste_items, bad)
    result = check(con)
    assert not result.success
    failure = failure_for(result, "scores", "lp_stereo")
    assert failure.expectation == "expect_column_values_to_be_between"
    assert failure.unexpected_count == 1
    assert failure.sample_ids == (f"item_id={bad[5].item_id}",)
    assert "lp_stereo=3.2" in failure.reason and "≤ 0" in failure.reason
    assert len(result.failures) == 1, result.reasons


def test_nan_log_prob_fails_finite_check(tmp_path, caste_items, llama_rows):
    bad = corrupt(llama_rows, 7, lp_anti=math.nan)
    con = build_store(tmp_path / "m.duckdb", caste_items, bad)
    result = check(con)
    assert not result.success
    finite = failure_for(result, "scores", "lp_anti_finite")
    assert finite.expectation == "expect_column_values_to_be_in_set"
    assert bad[7].item_id in finite.reason and "no NaN or inf" in finite.reason
    # lp_anti is required for CLL, so the NaN also fails "present".
    present = [f for f in result.failures if f.columns == ("lp_anti",)]
    assert present and present[0].expectation == "expect_column_values_to_not_be_null"


def test_probability_above_one_fails(tmp_path, caste_items, llama_rows):
    bad = corrupt(llama_rows, 0, prob_stereo=1.4)
    con = build_store(tmp_path / "m.duckdb", caste_items, bad)
    result = check(con)
    failure = failure_for(result, "scores", "prob_stereo")
    assert "prob_stereo=1.4" in failure.reason and bad[0].item_id in failure.reason


def test_duplicate_score_row_fails(tmp_path, caste_items, llama_rows):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows)
    # The store's primary key refuses a duplicate...
    with pytest.raises(duckdb.ConstraintException):
        sql(con, "INSERT INTO scores SELECT * FROM scores WHERE run_id = ? LIMIT 1", [RUN_ID])
    # ...but a shard read from Parquet has no key: the suite must catch it there.
    with con.read() as view:
        frames = view.result_frames(RUN_ID)
    scores = frames.scores
    doubled = pd.concat([scores, scores.iloc[[3]]], ignore_index=True)
    result = validate_run_frames(
        frames.run,
        doubled,
        frames.measures,
        expected_item_ids={it.item_id for it in caste_items},
    )
    assert not result.success
    dup = next(
        f for f in result.failures if f.expectation == "expect_compound_columns_to_be_unique"
    )
    assert f"item_id={scores.item_id[3]}" in dup.reason and dup.unexpected_count == 2
    count = next(f for f in result.failures if f.expectation == "expect_table_row_count_to_equal")
    assert f"observed {len(llama_rows) + 1}, expected {len(llama_rows)}" in count.reason


def test_missing_and_unexpected_items_fail(tmp_path, caste_items, llama_rows):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows[1:])
    expected = {it.item_id for it in caste_items} - {caste_items[2].item_id}
    result = check(con, expected_item_ids=expected)
    missing = failure_for(result, "expected_items", "scored")
    assert missing.sample_ids == (f"item_id={llama_rows[0].item_id}",)
    assert missing.unexpected_count == 1
    extra = failure_for(result, "scores", "item_expected")
    assert extra.sample_ids == (f"item_id={caste_items[2].item_id}",)
    assert extra.unexpected_count == 1
    assert len(result.failures) == 2, result.reasons


def test_n_scored_mismatch_fails(tmp_path, caste_items, llama_rows):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows, n_scored=len(llama_rows) + 4)
    result = check(con)
    (failure,) = result.failures
    assert failure.expectation == "expect_table_row_count_to_equal"
    assert f"observed {len(llama_rows)}, expected {len(llama_rows) + 4}" in failure.reason


def test_without_n_scored_rows_are_counted_against_expected_items(
    tmp_path, caste_items, llama_rows
):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows[1:])
    sql(con, "UPDATE runs SET n_scored = NULL")
    result = check(con, expected_item_ids={it.item_id for it in caste_items})
    count, missing = result.failures
    assert count.expectation == "expect_table_row_count_to_equal"
    assert f"observed {len(llama_rows) - 1}, expected {len(llama_rows)}" in count.reason
    assert missing.sample_ids == (f"item_id={llama_rows[0].item_id}",)


def test_metric_version_differing_from_run_fails(tmp_path, caste_items, llama_rows):
    bad = corrupt(llama_rows, 9, metric_version="2")
    con = build_store(tmp_path / "m.duckdb", caste_items, bad)
    result = check(con)
    failure = failure_for(result, "scores", "metric_version")
    assert failure.expectation == "expect_column_pair_values_to_be_equal"
    assert bad[9].item_id in failure.reason and "metric_version=2" in failure.reason


def test_unknown_outcome_and_score_for_unknown_item_fail(tmp_path, caste_items, llama_rows):
    bad = corrupt(llama_rows, 4, outcome="maybe")
    con = build_store(tmp_path / "m.duckdb", caste_items[1:], bad)  # item 0 not in items table
    result = check(con)
    assert bad[4].item_id in failure_for(result, "scores", "outcome").reason
    assert bad[0].item_id in failure_for(result, "scores", "item_known").reason


def test_missing_provenance_fails(tmp_path, caste_items, llama_rows):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows, git_commit=None)
    result = check(con)
    (failure,) = result.failures
    assert failure.frame == "run" and failure.columns == ("git_commit",)
    assert f"run_id={RUN_ID}" in failure.reason


def test_interval_not_containing_rate_fails(tmp_path, caste_items, llama_rows):
    good = bias_rate(llama_rows)
    bad = [replace(good, ci_low=good.value + 0.05), replace(good, measure="tie_rate", ci_high=1.3)]
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows, measures=bad)
    result = check(con)
    low = failure_for(result, "axis_measures", "ci_low")
    assert "measure=bias_rate" in low.reason
    high = next(f for f in result.failures if f.columns == ("ci_high",))
    assert "measure=tie_rate" in high.reason and "ci_high=1.3" in high.reason


def test_required_numbers_depend_on_metric_family(tmp_path, caste_items, llama_rows):
    # AUL produces score_* but no sentence log-probs: null lp_* is fine there...
    def mean(lp: float) -> float:
        return lp / 12  # a mean over 12 tokens, as AUL stores it

    aul = [
        PairScoreRow(
            r.item_id,
            "aul",
            "1",
            decide(mean(r.lp_stereo) - mean(r.lp_anti)),
            mean(r.lp_stereo) - mean(r.lp_anti),
            score_stereo=mean(r.lp_stereo),
            score_anti=mean(r.lp_anti),
        )
        for r in llama_rows
    ]
    con = build_store(tmp_path / "aul.duckdb", caste_items, aul, metric="aul")
    assert check(con).success
    # ...but a CLL run without them is broken.
    cll = [PairScoreRow(r.item_id, "cll", "1", r.outcome, r.delta) for r in llama_rows]
    con = build_store(tmp_path / "cll.duckdb", caste_items, cll)
    result = check(con)
    assert {f.columns for f in result.failures} == {("lp_stereo",), ("lp_anti",)}
    assert all(f"{len(cll)} of {len(cll)} rows fail" in f.reason for f in result.failures)


def test_forced_choice_needs_probabilities_unless_the_model_refused(
    tmp_path, caste_items, llama_rows
):
    def choice(r: ScoreRow) -> ScoreRow:
        p = 1 / (1 + math.exp(-r.delta))  # the pair's two options, softmax over delta
        return PairScoreRow(
            r.item_id, "forced-choice", "1", r.outcome, r.delta, prob_stereo=p, prob_anti=1 - p
        )

    rows = [choice(r) for r in llama_rows]
    rows[3] = PairScoreRow(rows[3].item_id, "forced-choice", "1", "refusal", None)
    con = build_store(tmp_path / "ok.duckdb", caste_items, rows, metric="forced-choice")
    assert check(con).success
    rows[4] = replace(rows[4], prob_anti=None)
    con = build_store(tmp_path / "bad.duckdb", caste_items, rows, metric="forced-choice")
    (failure,) = check(con).failures
    assert failure.columns == ("prob_anti",) and rows[4].item_id in failure.reason


def test_unknown_metric_fails(tmp_path, caste_items, llama_rows):
    """A metric no spec declares: the suite cannot know which numbers it must hold."""
    rows = [replace(r, metric="seat") for r in llama_rows]
    con = build_store(tmp_path / "m.duckdb", caste_items, rows, metric="seat")
    result = check(con)
    (failure,) = result.failures
    assert "metric_registered=False" in failure.reason and "(seat)" in failure.reason


def test_quarantine_sets_status_and_short_note(tmp_path, caste_items, llama_rows):
    con = build_store(tmp_path / "m.duckdb", caste_items, upstream_bug(llama_rows, 5, 3.2))
    verdict = RunLifecycle(con).gate(RUN_ID)
    assert verdict.status == "quarantined"
    ((status, notes, finished),) = sql(
        con, "SELECT status, notes, finished_at IS NOT NULL FROM runs WHERE run_id = ?", [RUN_ID]
    )
    assert status == "quarantined" and finished
    assert notes.startswith("quality gate failed: results: 1 of") and "lp_stereo" in notes
    assert len(notes) <= 300
    ((stored,),) = sql(con, "SELECT results FROM validations")
    assert json.loads(stored)["failures"][0]["sample_ids"] == [f"item_id={llama_rows[5].item_id}"]
    with pytest.raises(UserInputError, match="no-such-run"):
        RunLifecycle(con).gate("no-such-run")


def test_unknown_run_is_a_user_error(tmp_path, caste_items, llama_rows):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows)
    with pytest.raises(UserInputError, match="no run with id 'nope'"):
        check(con, "nope")


def test_great_expectations_stays_offline_quiet_and_writes_nothing(
    tmp_path, monkeypatch, capfd, caste_items, llama_rows
):
    con = build_store(tmp_path / "m.duckdb", caste_items, llama_rows)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)

    def no_network(*args, **kwargs):
        raise AssertionError(f"great-expectations tried to open a connection: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    capfd.readouterr()
    assert check(con).success
    out, err = capfd.readouterr()
    assert out == "" and "Calculating Metrics" not in err and err == ""
    assert list(work.iterdir()) == []  # no gx/ folder or great_expectations.yml


def test_importing_the_package_does_not_import_great_expectations():
    code = (
        "import sys, monitor.quality, monitor.quality.results_suite, "
        "monitor.quality.benchmark_suite; print('great_expectations' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_a_row_edited_after_scoring_fails_its_recomputation(tmp_path, caste_items, llama_rows):
    """A tampered delta (log-probs left as they were): the row no longer says what its
    own numbers give, and the measures no longer follow from the rows."""
    good = llama_rows[7]
    bad = corrupt(llama_rows, 7, delta=-good.delta, outcome="stereo" if good.delta < 0 else "anti")
    con = build_store(tmp_path / "m.duckdb", caste_items, bad, measures=[bias_rate(llama_rows)])
    result = check(con)
    row = failure_for(result, "scores", "recomputed")
    assert row.sample_ids == (f"item_id={good.item_id}",) and "delta" in row.reason
    measure = failure_for(result, "axis_measures", "recomputed")
    assert "measure=bias_rate" in measure.reason and "from the rows" in measure.reason
