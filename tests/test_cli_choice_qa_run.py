"""End to end: ``bias-monitor run`` on choice questions (BBQ, BharatBBQ) with the real
SmolLM2, the real benchmark files at ``--size mini`` and a real DuckDB file.

The issue's "done when" command: it must score through the CLI with ``mc-loglik`` and
print per-category accuracy and bias scores with intervals, none of width zero (4
templates per category: the effective-n Wilson, not a bootstrap that collapsed to
0.0% [0.0, 0.0]); a rerun of the same command gives the same rows to the bit, and drift
between the two says "too few templates for a verdict" (a sign-flip over 4 templates
cannot give p below 0.125); a command mixing choice questions with pair benchmarks,
and ``--size`` without choice questions, are one-line errors (exit 2) before any work.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

pytestmark = pytest.mark.slow

COMMAND = (
    "run",
    "-s",
    "smollm2-135m-instruct-q4",
    "-b",
    "bharatbbq-caste",
    "-b",
    "bbq-religion",
    "--size",
    "mini",
)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "COLUMNS": "200"},
    )


def stored_rows(db: Path, run_id: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT item_id, metric, outcome, details FROM scores WHERE run_id = ? "
            "ORDER BY item_id",
            [run_id],
        ).fetchall()
    finally:
        con.close()


def test_run_scores_choice_questions_and_reruns_identically(
    monitor_env: Path,
    smollm2_choice_qa_run: tuple[Path, str, tuple[str, ...]],
    smollm2_caste_runs: tuple[Path, list[dict]],
) -> None:
    """The first run is the session's (conftest ``smollm2_choice_qa_run``, this command).
    At the end the same snapshot's two caste runs (conftest ``smollm2_caste_runs``) are
    merged in: ``drift`` must compare each kind of result along its own runs."""
    db = monitor_env / "monitor.duckdb"
    first_db, table, command = smollm2_choice_qa_run
    assert command == COMMAND
    shutil.copy(first_db, db)
    for text in ("bharatbbq-caste", "bbq-religion", "acc_ambig", "acc_disambig"):
        assert text in table
    for text in ("bias_ambig", "bias_disambig", "acc_norm_ambig", "reference_"):
        assert text in table
    assert "(complete)" in table
    assert "[" in table  # intervals
    # No interval of width zero: [0.0, 0.0], [50.0, 50.0], [+0.0, +0.0], [−100.0, −100.0].
    bounds = re.findall(r"\[([−+]?[\d.]+), ([−+]?[\d.]+)\]", table)
    assert len(bounds) > 20 and all(a != b for a, b in bounds), table
    assert "with fewer than 10, Wilson on the effective n" in table
    assert re.search(r"\d+ of \d+ rows kept \(too few\)", table), table  # the authors' rows
    # The denominator of a sample: the rows of both files not drawn, beside those scored
    # (3,864 BharatBBQ caste rows and 1,200 BBQ religion rows, none excluded).
    scored = int(re.search(r"scored (\d+) items; excluded 0 source rows", table)[1])
    drawn = re.search(r"a sample: (\d+) source rows not drawn\n", table)
    assert drawn and int(drawn[1]) == 3864 + 1200 - scored, table

    second = cli(*COMMAND, "--format", "json")
    assert second.returncode == 0, second.stderr
    (outcome,) = json.loads(second.stdout)
    assert outcome["status"] == "complete"
    measures = {(m["benchmark"], m["axis"], m["measure"]): m for m in outcome["measures"]}
    caste = measures[("bharatbbq-caste", "caste", "bias_disambig")]
    assert caste["ci_low"] <= caste["value"] <= caste["ci_high"]
    assert ("bbq-religion", "religion", "acc_ambig") in measures

    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("SELECT run_id, metric FROM runs ORDER BY started_at").fetchall()
    finally:
        con.close()
    assert [m for _, m in runs] == ["mc-loglik", "mc-loglik"]
    a, b = (stored_rows(db, rid) for rid, _ in runs)
    assert len(a) == outcome["n_scored"] > 40
    assert [r[0] for r in a] == [r[0] for r in b]
    # Same model, same items, same passes: the same bits, hence the same answers.
    assert [(r[2], json.loads(r[3])["ll"]) for r in a] == [
        (r[2], json.loads(r[3])["ll"]) for r in b
    ]
    for _item, metric, role, details in a:
        d = json.loads(details)
        assert metric == "mc-loglik" and role in ("target", "non-target", "unknown")
        assert d["choice"] == max(range(3), key=d["ll"].__getitem__)
        assert isinstance(d["correct"], bool)

    # One snapshot scored on pairs and on questions is two series. Drift's default takes
    # the latest run of each (the newest, a question run, must not hide the pair runs)
    # and compares it with the previous run of its own kind, never across kinds.
    caste_db, (first, second) = smollm2_caste_runs
    merged = cli("db", "merge", str(caste_db), "--format", "json")
    assert merged.returncode == 0, merged.stderr
    data = json.loads(cli("drift", "--format", "json").stdout)
    pairs = {p["new_run_id"]: p["baseline_run_id"] for p in data["pairs"]}
    assert pairs == {second["run_id"]: first["run_id"], runs[1][0]: runs[0][0]}, data["pairs"]
    assert {c["new_run_id"] for c in data["comparisons"]} == {second["run_id"]}
    assert {c["new_run_id"] for c in data["family_comparisons"]} == {runs[1][0]}
    assert not data["unscored"]  # nothing compared across kinds, so no axis "missing"
    # 4 templates per category: no verdict is possible, and none is printed.
    qa = data["family_comparisons"]
    assert qa and all(c["verdict"] == "too few templates for a verdict" for c in qa), qa
    assert all(c["min_p"] == 0.125 and c["ci_low"] is None and c["mde"] is None for c in qa)
    text = cli("drift").stdout
    assert text.count("too few templates for a verdict") == len(qa), text
    assert "(4 templates: too few for a test)" in text


def test_choice_questions_and_pairs_in_one_command_are_refused(monitor_env: Path) -> None:
    proc = cli("run", "-b", "bharatbbq-caste", "-b", "bhed-caste", "--size", "mini")
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "separate commands" in errors[0]
    assert "Traceback" not in proc.stderr
    assert not (monitor_env / "monitor.duckdb").exists()


def test_size_without_a_sized_benchmark_is_refused(monitor_env: Path) -> None:
    # Sentence pairs take --size too since issue 46 (tests/test_cli_first_hour.py); an
    # association test and the Indic-Bias taxonomy (sized entries of its own) do not.
    proc = cli("run", "-b", "en-weat1", "--size", "mini")
    assert proc.returncode == 2
    assert (
        "--size applies to pair-outcome, choice-qa, seegull benchmarks; not to en-weat1"
        in proc.stderr
    )
    taxonomy = cli("run", "-b", "indic-taxonomy-ci", "--size", "mini")
    assert taxonomy.returncode == 2
    assert "--size mini applies to sentence-pair files, not to indic-taxonomy-ci" in (
        taxonomy.stderr
    )
    bad = cli(*COMMAND[:-1], "huge")
    assert bad.returncode == 2 and "unknown --size" in bad.stderr


def test_a_snapshot_without_a_question_metric_is_refused_or_skipped_by_name(
    monitor_env: Path,
) -> None:
    """An embedding model cannot answer questions: refused (exit 2) by default; with
    --only-applicable (the nightly's question step over every snapshot) it is skipped by
    name, nothing is written and the command succeeds."""
    args = ("run", "-s", "all-minilm-l6-v2", "-b", "bbq-religion", "--size", "mini")
    refused = cli(*args)
    assert refused.returncode == 2 and "has no metric for choice-question" in refused.stderr
    skipped = cli(*args, "--only-applicable", "--format", "json")
    assert skipped.returncode == 0, skipped.stderr
    assert json.loads(skipped.stdout) == []
    assert "skipped all-minilm-l6-v2:" in skipped.stderr and "nothing to score" in skipped.stderr
    assert not (monitor_env / "monitor.duckdb").exists()
