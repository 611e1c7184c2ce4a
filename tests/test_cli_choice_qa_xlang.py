"""Cross-language BharatBBQ through the CLI: a user's translation, scored and compared.

A test writes a "translation" of the pinned English Caste file into a temporary folder:
row-parallel, every text reversed and prefixed (deterministic; reversed texts sort in
another order than the English ones, so a sample that depended on the texts' order would
keep other rows). With the real SmolLM2 and a real DuckDB file, ``bias-monitor run`` scores
``bharatbbq-caste --size mini`` in English and with ``--translations DIR --language hi``,
and ``bias-monitor drift`` compares the two runs: every item pairs with its English twin by
source id (their item ids differ, so pairing by item id would pair none), the output
names both languages and the verdict is a language difference, never a regression.

A second part writes chosen answers (``_choice_qa_runs``) for the two languages so that
the Hindi run is more biased by a known amount: drift must label it a ``difference`` (not
a ``regression``), and ``--fail-on regression`` must not fail on it.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from _choice_qa_runs import baseline_answers, move_ambiguous, write_run
from typer.testing import CliRunner

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.cli.app import app
from monitor.store.db import Store

ENGLISH = "bharatbbq/Examples/Caste_examples.csv"
TEXTS = ("Context", "Question", "Option1", "Option2", "Option3")
RUN = ("run", "-s", "smollm2-135m-instruct-q4", "-b", "bharatbbq-caste", "--size", "mini")


def write_translation(source: Path, folder: Path, *, break_row: int | None = None) -> Path:
    """``source`` with every text reversed and prefixed ``hi:``; ``break_row``'s Target
    changed, so that row no longer lines up with the English one."""
    with source.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    for n, row in enumerate(rows):
        for col in TEXTS:
            row[col] = f"hi:{row[col][::-1]}"
        if n == break_row:
            row["Target"] = str(int(row["Target"]) % 3 + 1)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / source.name
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **env, "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def scored(tmp_path_factory, session_cache, shared_datasets, smollm2_choice_qa_run) -> dict:
    """The session's English SmolLM2 run (bharatbbq-caste and bbq-religion, mini) and a
    'Hindi' run of bharatbbq-caste --size mini, in a copy of its DuckDB file."""
    root = tmp_path_factory.mktemp("xlang")
    db = root / "monitor.duckdb"
    shutil.copy(smollm2_choice_qa_run[0], db)
    env = {
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_DIR": str(root / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "MONITOR_DB": str(db),
    }
    con = duckdb.connect(str(db), read_only=True)
    try:
        ((en_run,),) = con.execute("SELECT run_id FROM runs").fetchall()
    finally:
        con.close()
    translation = write_translation(shared_datasets / ENGLISH, root / "hi")
    hi = cli(env, *RUN, "--translations", str(root / "hi"), "--language", "hi", "--format", "json")
    assert hi.returncode == 0, hi.stderr
    (hi_run,) = json.loads(hi.stdout)
    return {
        "env": env,
        "en": en_run,
        "hi": hi_run,
        "n_caste": len(_item_ids(db, en_run)),
        "sha": hashlib.sha256(translation.read_bytes()).hexdigest(),
    }


def invoke(env: dict[str, str], *args: str):
    """A CLI command in this process (the store and the data folders of ``env``)."""
    result = CliRunner().invoke(app, list(args), env={**env, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def _item_ids(db: Path, run_id: str, benchmark: str = "bharatbbq-caste") -> dict[int, str]:
    """Source id -> item id of the items of ``benchmark`` a run scored."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT i.item_id, i.payload FROM scores s JOIN items i USING (item_id) "
            "WHERE s.run_id = ? AND i.benchmark = ?",
            [run_id, benchmark],
        ).fetchall()
    finally:
        con.close()
    return {json.loads(p)["source_id"]: i for i, p in rows}


@pytest.mark.slow
def test_translation_is_scored_and_recorded(scored) -> None:
    hi, env = scored["hi"], scored["env"]
    assert hi["status"] == "complete"
    assert hi["n_scored"] == scored["n_caste"] > 20
    db = Path(env["MONITOR_DB"])
    en_ids, hi_ids = _item_ids(db, scored["en"]), _item_ids(db, hi["run_id"])
    # The same source rows (the sample does not depend on the texts), other item ids.
    assert set(en_ids) == set(hi_ids) and len(hi_ids) == hi["n_scored"]
    assert not set(en_ids.values()) & set(hi_ids.values())

    shown = json.loads(invoke(env, "show", hi["run_id"], "--format", "json"))
    version = shown["run"]["dataset_versions"]["bharatbbq-caste"]
    assert version["language"] == "hi"
    assert version["sampling"]["translation_sha256"] == scored["sha"]
    assert version["sampling"]["translation_file"] == "Caste_examples.csv"
    assert version["label"].endswith(f"+hi:{scored['sha'][:12]}")
    table = invoke(env, "show", hi["run_id"])
    # The provenance line is wrapped (and a long value folded) at the output's width.
    shown_text = "".join(table.split())
    assert f"(languagehi:Caste_examples.csvsha256{scored['sha']})" in shown_text, table
    english = json.loads(invoke(env, "show", scored["en"], "--format", "json"))
    assert "language" not in english["run"]["dataset_versions"]["bharatbbq-caste"]


@pytest.mark.slow
def test_drift_pairs_the_languages_by_source_id(scored) -> None:
    hi, env, n = scored["hi"], scored["env"], scored["n_caste"]
    args = ("drift", "--run", hi["run_id"], "--baseline", scored["en"])
    # A language difference is never a drift flag: --fail-on any exits 0.
    comps = json.loads(invoke(env, *args, "--format", "json", "--fail-on", "any"))[
        "family_comparisons"
    ]
    # Only the axis both runs scored (the English run also scored bbq-religion).
    assert {(c["benchmark"], c["measure"]) for c in comps} == {
        ("bharatbbq-caste", m)
        for m in (
            *("answers_ambig", "bias_ambig", "acc_ambig"),
            *("answers_disambig", "bias_disambig", "acc_disambig"),
        )
    }
    for c in comps:
        # Paired by item id, nothing would pair: "not comparable" with 0 items paired.
        # Paired by source id, 4 templates (mini) are too few for any verdict.
        assert c["verdict"] == "too few templates for a verdict", c["reason"]
        assert c["details"]["paired_by"] == "source_id"
        assert c["details"]["items_paired"] == n
        assert c["details"]["unpaired"] == {"baseline": 0, "new": 0}
        assert c["details"]["languages"] == {"baseline": "en", "new": "hi"}
        assert c["contrast"].startswith(
            f"cross-language comparison en → hi: {n} items paired by source id, "
            "0 of the en run and 0 of the hi run unpaired; the same model in two languages"
        )
        assert any(w in c["change"] for w in (" in en and ", " en and hi", "in hi than in en"))
    assert sum(c["n_paired"] for c in comps if c["measure"].startswith("bias_")) > 0

    # As the README shows it: the snapshot's latest run (Hindi) against its previous one.
    table = invoke(env, "drift", "--snapshot", "smollm2-135m-instruct-q4")
    assert f"{hi['run_id']} vs smollm2-135m-instruct-q4 {scored['en']}" in table
    assert f"cross-language comparison en → hi: {n} items paired by source id" in table


def test_translation_errors_are_one_line(tmp_path, session_cache, shared_datasets) -> None:
    env = {
        "MONITOR_CACHE_DIR": str(session_cache),
        "MONITOR_DATA_DIR": str(tmp_path / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "MONITOR_DB": str(tmp_path / "monitor.duckdb"),
    }
    write_translation(shared_datasets / ENGLISH, tmp_path / "bad", break_row=11)
    cases = {
        "no such folder": (*RUN, "--translations", str(tmp_path / "nowhere"), "--language", "hi"),
        "needs --language": (*RUN, "--translations", str(tmp_path / "bad")),
        "applies with --translations": (*RUN, "--language", "hi"),
        "BharatBBQ benchmarks (bharatbbq-*) only, not to bbq-religion": (
            *RUN,
            "-b",
            "bbq-religion",
            "--translations",
            str(tmp_path / "bad"),
            "--language",
            "hi",
        ),
        "row 11 is not parallel to the English row": (
            *RUN,
            "--translations",
            str(tmp_path / "bad"),
            "--language",
            "hi",
        ),
    }
    for words, args in cases.items():
        proc = cli(env, *args)
        assert proc.returncode == 2, (words, proc.stderr)
        assert "Traceback" not in proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and words in errors[0], (words, proc.stderr)
    assert not (tmp_path / "monitor.duckdb").exists()


def test_a_more_biased_translation_is_a_difference_not_a_regression(
    tmp_path, shared_datasets, monkeypatch
) -> None:
    """Chosen answers: the 'Hindi' run picks the stereotyped group on 10 ambiguous
    questions (one per template) where the English run answered 'unknown'."""
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(shared_datasets))
    monkeypatch.setenv("MONITOR_DB", str(tmp_path / "monitor.duckdb"))
    write_translation(shared_datasets / ENGLISH, tmp_path / "hi")
    ids, data = ["bharatbbq-caste"], tmp_path / "datasets"
    fetch(load_manifest(), ids, data_dir=data)
    (en,) = load_benchmarks(ids, data_dir=data, options={"size": "default"})
    hi_options = {"size": "default", "translations": str(tmp_path / "hi"), "language": "hi"}
    (hi,) = load_benchmarks(ids, data_dir=data, options=hi_options)
    en_items, hi_items = list(en.items), list(hi.items)
    by_source = {it.payload["source_id"]: it.item_id for it in hi_items}
    answers = baseline_answers(en_items)
    twin = {by_source[it.payload["source_id"]]: answers[it.item_id] for it in en_items}
    moved, _ = move_ambiguous(hi_items, twin, 10)
    store = Store.open(tmp_path / "monitor.duckdb")
    write_run(store, en_items, answers, snapshot="qa-model", day=1)
    write_run(store, hi_items, moved, snapshot="qa-model", day=2)

    # The default pair (the snapshot's latest run against its previous one) is the
    # cross-language pair here.
    r = CliRunner().invoke(
        app,
        ["drift", "-s", "qa-model", "--format", "json", "--fail-on", "regression"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    comps = {c["measure"]: c for c in json.loads(r.output)["family_comparisons"]}
    bias = comps["bias_ambig"]
    n_ambig = sum(1 for it in hi_items if it.payload["context_condition"] == "ambig")
    assert bias["delta"] == pytest.approx(100 * 10 / n_ambig, abs=1e-9)  # points
    assert bias["verdict"] == "difference" and not bias["flagged"]
    assert bias["towards_stereotype"]
    assert "in en and" in bias["reason"]
    assert "points in hi, towards the stereotype" in bias["reason"]
    assert "a difference between languages, not a change over time" in bias["reason"]
    assert comps["bias_disambig"]["verdict"] == "no significant change"
    assert all(c["details"]["items_paired"] == len(en_items) for c in comps.values())

    # The report: the contrast first, then the difference in words; the JSON round-trips.
    from monitor.report.json_out import read_json

    out = tmp_path / "report"
    r = CliRunner().invoke(
        app, ["report", "--out", str(out), "--snapshot", "qa-model"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    md = (out / "report.md").read_text()
    section = md[md.index("### Choice questions (BBQ, BharatBBQ)") :].splitlines()
    assert section[2].startswith("_cross-language comparison en → hi: 406 items paired")
    assert any(line.startswith("- **difference**: on ambiguous caste") for line in section)
    assert "qa-model (choice questions): 3 differences: caste answers\\_ambig (+4.9 pp)" in md
    html = (out / "report.html").read_text()
    assert "cross-language comparison en → hi" in html
    data = read_json(out / "report.json")
    assert {c.verdict.label for c in data.family_comparisons} == {
        "difference",
        "no significant change",
    }
    assert all(c.contrast for c in data.family_comparisons)
