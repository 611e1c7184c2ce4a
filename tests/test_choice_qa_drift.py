"""`bias-monitor drift` on stored choice-QA runs: the family's comparator through the CLI.

Real BharatBBQ Caste questions (the family's loader, ``default`` size: 406 questions, 10
templates) and runs written through ``RunLifecycle`` in a real DuckDB file: a baseline,
a run in which 10 ambiguous negative questions (one per template) moved from the
'unknown' answer to the stereotyped group, a run identical to the baseline, and a run in
which 10 disambiguated questions answered correctly (the biased answer was the correct
one) moved to 'unknown'. Drift must flag exactly the moved part, as a regression, with
its size (in points), p and MDE, and flag nothing on the identical pair; accuracy is
compared beside the bias scores, and a fall in disambiguated accuracy is never an
improvement, though s_DIS moved away from the stereotype.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from _choice_qa_runs import (
    baseline_answers,
    caste_items,
    move_ambiguous,
    move_disambiguated_to_unknown,
    write_run,
)
from typer.testing import CliRunner

from monitor.cli.app import app
from monitor.store.db import Store

N_MOVED = 10


@pytest.fixture(scope="module")
def stored(tmp_path_factory, shared_datasets) -> dict:
    root = tmp_path_factory.mktemp("choice-qa-drift")
    mp = pytest.MonkeyPatch()
    mp.setenv("MONITOR_DATA_MIRROR", str(shared_datasets))
    mp.setenv("MONITOR_DB", str(root / "monitor.duckdb"))
    items = caste_items(root / "datasets")
    store = Store.open(root / "monitor.duckdb")
    base = baseline_answers(items)
    moved, moved_ids = move_ambiguous(items, base, N_MOVED)
    unknown, _ = move_disambiguated_to_unknown(items, base, N_MOVED)
    runs = {
        "unknown": write_run(store, items, unknown, snapshot="qa-unknown", day=7),
        "base": write_run(store, items, base, snapshot="qa-base", day=1),
        "moved": write_run(store, items, moved, snapshot="qa-moved", day=2),
        "same": write_run(store, items, base, snapshot="qa-same", day=3),
        # Three runs of one imported configuration: the answers of the middle one moved,
        # so the repeat runs' own spread of s_AMB is as large as that move.
        **{
            f"noisy-{day}": write_run(
                store, items, moved if day == 5 else base, snapshot="qa-noisy", day=day
            )
            for day in (4, 5, 6)
        },
    }
    for rid in runs.values():
        assert store.get_run(rid)["status"] == "complete", store.get_run(rid)["notes"]
    n_ambig = sum(1 for it in items if it.payload["context_condition"] == "ambig")
    n_disambig = sum(
        1
        for it in items
        if it.payload["context_condition"] == "disambig" and it.payload["target"] is not None
    )
    yield {"runs": runs, "n_ambig": n_ambig, "n_disambig": n_disambig, "moved_ids": moved_ids}
    mp.undo()


def drift(*args: str, columns: int | None = None):
    env = {"COLUMNS": str(columns)} if columns else {}
    return CliRunner().invoke(app, ["drift", *args], env=env, catch_exceptions=False)


def _by_measure(out: str) -> dict[str, dict]:
    data = json.loads(out)
    return {c["measure"]: c for c in data["family_comparisons"]}


def test_moved_answers_are_a_regression_of_known_size(stored):
    r = drift("--snapshot", "qa-moved", "--baseline-snapshot", "qa-base", "--format", "json")
    assert r.exit_code == 0, r.output
    c = _by_measure(r.output)
    assert set(c) == {
        *("answers_ambig", "bias_ambig", "acc_ambig"),
        *("answers_disambig", "bias_disambig", "acc_disambig"),
    }
    bias = c["bias_ambig"]
    # s_AMB = (biased − counter) / n: 10 answers moved from unknown (0) to biased (+1);
    # in points, the unit the JSON names, as the terminal prints it.
    assert bias["unit"] == "points"
    assert bias["delta"] == pytest.approx(100 * N_MOVED / stored["n_ambig"], abs=1e-9)
    assert bias["n_paired"] == stored["n_ambig"]
    assert bias["verdict"] == "regression" and bias["flagged"] and bias["towards_stereotype"]
    # One move in each of the 10 templates: 2 of the 2^10 sign patterns are as extreme.
    assert bias["p_value"] == pytest.approx(2 / 1024)
    assert bias["ci_low"] > 0 and bias["ci_high"] >= bias["delta"]
    assert 0 < bias["mde"] < 20
    assert f"from {bias['value_old']:+.1f} to {bias['value_new']:+.1f}" in bias["reason"]
    # Accuracy beside it: 'unknown' was correct on those ambiguous questions.
    acc = c["acc_ambig"]
    assert acc["delta"] == pytest.approx(-100 * N_MOVED / stored["n_ambig"], abs=1e-9)
    assert acc["verdict"] == "regression" and acc["worse"] and acc["towards_stereotype"] is None
    assert acc["p_value"] == pytest.approx(2 / 1024)
    assert "10 wrong" in acc["reason"]
    answers = c["answers_ambig"]
    moves = answers["details"]["share_changes"]
    assert moves["target"] == pytest.approx(N_MOVED / stored["n_ambig"])
    assert moves["unknown"] == pytest.approx(-N_MOVED / stored["n_ambig"])
    assert moves["non-target"] == 0
    assert answers["verdict"] == "regression" and answers["p_value"] < 0.01
    assert "now picks the stereotyped group 4.9 points more often" in answers["reason"]
    assert "instead of the 'unknown' answer" in answers["reason"]
    assert answers["mde"] is not None
    for name in ("answers_disambig", "bias_disambig", "acc_disambig"):
        assert c[name]["verdict"] == "no significant change" and c[name]["p_value"] == 1.0
    # The six tests are one BH family with the rest of the session.
    data = json.loads(r.output)
    assert "over the 6 paired tests" in data["fdr_note"]
    assert (
        drift(
            "--snapshot", "qa-moved", "--baseline-snapshot", "qa-base", "--fail-on", "regression"
        ).exit_code
        == 1
    )


def test_identical_answers_are_not_flagged(stored):
    r = drift("--snapshot", "qa-same", "--baseline-snapshot", "qa-base", "--format", "json")
    c = _by_measure(r.output)
    for comp in c.values():
        assert comp["verdict"] == "no significant change" and not comp["flagged"]
        assert comp["p_value"] == 1.0 and comp["delta"] == 0
        assert comp["mde"] is not None and comp["mde"] > 0  # what it could have seen
        assert "noise unknown" in comp["noise_note"]  # imported, no repeat group
    assert (
        drift(
            "--snapshot", "qa-same", "--baseline-snapshot", "qa-base", "--fail-on", "any"
        ).exit_code
        == 0
    )


def test_a_change_within_the_repeat_runs_spread_is_not_flagged(stored):
    """The latest qa-noisy run (answers as the baseline) against the one before it (10
    moved): p is as small as for the moved pair, but the same configuration's other runs
    (days 4 and 5) already differ by that much, so the change is noise."""
    r = drift("--snapshot", "qa-noisy", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert [(p["new_run_id"], p["baseline_run_id"]) for p in data["pairs"]] == [
        (stored["runs"]["noisy-6"], stored["runs"]["noisy-5"])
    ]
    bias = _by_measure(r.output)["bias_ambig"]
    assert bias["delta"] == pytest.approx(-100 * N_MOVED / stored["n_ambig"])
    assert bias["p_value"] == pytest.approx(2 / 1024)
    assert bias["noise"] == pytest.approx(100 * N_MOVED / stored["n_ambig"])
    assert bias["verdict"] == "no significant change" and not bias["flagged"]
    assert "within the spread of repeat runs" in bias["reason"]
    assert "judged against" in bias["noise_note"]


def test_a_fall_in_disambiguated_accuracy_is_never_an_improvement(stored):
    """10 disambiguated questions (one per template) whose correct answer was the biased
    one, answered correctly, now answered 'unknown': s_DIS (which leaves 'unknown' out)
    moves away from the stereotype and 'unknown' is picked more often, so both used to
    read "improvement" while accuracy fell. Accuracy is compared beside them and every
    flagged disambiguated change is a regression that says accuracy fell."""
    args = ("--snapshot", "qa-unknown", "--baseline-snapshot", "qa-base")
    r = drift(*args, "--format", "json")
    assert r.exit_code == 0, r.output
    c = _by_measure(r.output)
    acc = c["acc_disambig"]
    assert acc["delta"] == pytest.approx(-100 * N_MOVED / stored["n_disambig"], abs=1e-9)
    assert acc["p_value"] == pytest.approx(2 / 1024)
    assert acc["verdict"] == "regression" and acc["worse"]
    assert c["bias_disambig"]["delta"] < 0  # away from the stereotype
    assert c["bias_disambig"]["towards_stereotype"] is False
    assert c["answers_disambig"]["details"]["moved_role"] == "unknown"
    for name in ("answers_disambig", "bias_disambig"):
        assert c[name]["flagged"] and c[name]["verdict"] == "regression", c[name]["reason"]
        assert "accuracy on these questions fell" in c[name]["reason"]
    assert not any(x["verdict"] == "improvement" for x in c.values())
    for name in ("answers_ambig", "bias_ambig", "acc_ambig"):
        assert c[name]["verdict"] == "no significant change" and c[name]["p_value"] == 1.0
    text = " ".join(x.strip() for x in drift(*args, columns=200).output.splitlines())
    assert "caste acc_disambig: accuracy" in text and "improvement" not in text
    assert drift(*args, "--fail-on", "regression").exit_code == 1


def test_terminal_lines_at_80_columns(stored):
    r = drift("--snapshot", "qa-moved", "--baseline-snapshot", "qa-base", columns=80)
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert all(len(line) <= 80 for line in lines), [x for x in lines if len(x) > 80]
    assert lines[0].startswith("drift: 3 flagged of 6 paired tests")
    text = " ".join(x.strip() for x in lines)
    assert "caste bias_ambig: s_AMB" in text and "regression" in text
    assert "now picks the stereotyped group 4.9 points more often" in text
    # No pair axis here: the units are the family heading's ("values and Δ in points").
    assert "MDE in percentage points" not in text and "values and Δ in points" in text


def test_table_wide_has_a_row_per_measure_and_its_reason(stored):
    """``--format table-wide`` drew only the pair and association tables, so a choice-QA
    comparison printed nothing but the FDR note."""
    r = drift(
        "--snapshot",
        "qa-moved",
        "--baseline-snapshot",
        "qa-base",
        "--format",
        "table-wide",
        columns=200,
    )
    assert r.exit_code == 0
    base, moved = stored["runs"]["base"], stored["runs"]["moved"]
    lines = r.output.splitlines()
    assert lines[0].startswith(f"choice questions: {base} → {moved}")
    # A row names the benchmark and axis; its four measures are indented under it.
    assert any(x.startswith("bharatbbq-caste / caste ") for x in lines), lines
    rows = [x for x in lines if x.startswith("  ") and "│" in x]
    assert len(rows) == 6, lines
    (amb,) = [x for x in rows if "bias_ambig (s_AMB)" in x]
    assert "regression" in amb
    assert any(x.startswith("bharatbbq-caste/caste bias_ambig: regression: ") for x in lines), lines
    assert f"what changed {base} → {moved}: " in r.output


def test_report_has_the_family_section_answer_first(stored, tmp_path):
    from monitor.report.json_out import read_json

    out = tmp_path / "report"
    r = CliRunner().invoke(
        app,
        ["report", "--out", str(out), "--snapshot", "qa-moved", "--baseline-snapshot", "qa-base"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    md = (out / "report.md").read_text()
    section = md[md.index("### Choice questions (BBQ, BharatBBQ)") :]
    first = section.splitlines()[2]
    assert first.startswith("- **regression**: on ambiguous caste questions")
    assert "| caste | bias\\_ambig s\\_AMB |" in section
    html = (out / "report.html").read_text()
    assert '<h3 id="choice-qa">' in html and "<script" not in html
    assert "the model now picks the stereotyped group 4.9 points more often" in html
    assert "the &#39;unknown&#39; answer" in html  # escaped, not raw
    data = read_json(out / "report.json")  # validates and round-trips
    assert {c.measure for c in data.family_comparisons} == {
        *("answers_ambig", "bias_ambig", "acc_ambig"),
        *("answers_disambig", "bias_disambig", "acc_disambig"),
    }


def test_show_draws_the_family_table(stored):
    r = CliRunner().invoke(
        app, ["show", stored["runs"]["moved"]], env={"COLUMNS": "80"}, catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    text = r.output
    assert "95% intervals (templates resampled)" in text
    assert "bias scores in points, −100..+100" in text and "\naccuracy\n" in text
    lines = text.splitlines()
    bias_header = next(line for line in lines if "bias_ambig" in line)
    acc_header = next(line for line in lines if "acc_ambig" in line)
    assert "bias_disambig" in bias_header and "acc_disambig" in acc_header
    # the bias table's row, the accuracy table's, then the authors' numbers' group row
    bias_row, acc_row, _ = (
        [c.strip() for c in line.strip("│").split("│")]
        for line in lines
        if line.startswith("│ bharatbbq-caste ")
    )
    assert bias_row[1].startswith(("+", "−")) and bias_row[2].startswith(("+", "−"))
    assert "%" in acc_row[1] and acc_row[1].endswith("]")
    # whole at 80 columns: no id or measure name cut to "…"
    assert "…" not in text and max(len(line) for line in lines if line[:1] in "┏┃┡│└") <= 80
    assert "reference_" in text or "authors' script" in text  # bharatbbq: the authors' numbers
    assert "association tests" not in text  # bias scores are not effect sizes of WEAT


def test_report_heads_each_compared_pair_with_its_snapshots_and_fits_the_page(
    shared_datasets, tmp_path, monkeypatch
):
    """Two snapshots whose run ids share a long prefix, each compared with its previous
    run, and a recorded environment holding one long unbroken value (a file hash): the
    report names each pair's snapshots and whole run ids above its table (a cut id read
    ``import-qa-shared…`` for both), the verdict sentence calls the results choice
    questions, and at 1200 px nothing is wider than the page."""
    from test_report_screenshot import BROWSER, measure_layout

    db = tmp_path / "monitor.duckdb"
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(shared_datasets))
    monkeypatch.setenv("MONITOR_DB", str(db))
    items = caste_items(tmp_path / "datasets", size="mini")
    store = Store.open(db)
    base = baseline_answers(items)
    moved, _ = move_ambiguous(items, base, 3)
    runs = {}
    for snapshot in ("qa-shared-prefix-one", "qa-shared-prefix-two"):
        for day, answers in ((1, base), (2, moved)):
            # Three hashes in one word, as a list of file hashes can be.
            hashes = hashlib.sha256(f"{snapshot}{day}".encode()).hexdigest() * 3
            env = {"import": {"file": "predictions.csv", "sha256": hashes}}
            runs[snapshot, day] = write_run(
                store, items, answers, snapshot=snapshot, day=day, environment=env
            )
    out = tmp_path / "report"
    r = CliRunner().invoke(app, ["report", "--out", str(out)], catch_exceptions=False)
    assert r.exit_code == 0, r.output

    md = (out / "report.md").read_text()
    assert md.startswith("**Verdict:** 2 snapshots (choice questions): "), md[:300]
    # Mini items: 4 templates, so no verdict, and the answer says why.
    assert "too few templates for a verdict (12 comparisons)" in md.splitlines()[0], md[:300]
    section = md[md.index("### Choice questions") :]
    for snapshot in ("qa-shared-prefix-one", "qa-shared-prefix-two"):
        new, old = (md_id(runs[snapshot, d]) for d in (2, 1))
        head = f"**new** {md_id(snapshot)}, run {new} · **baseline** {md_id(snapshot)}, run {old}"
        assert head in section, section[:2000]
        table = section[section.index(head) :].split("\n\n", 2)[1]
        assert table.startswith("| Category | Measure |"), table[:200]
    # What else differs between each pair's runs: only import bookkeeping here.
    changed = md[md.index("### What changed") :].split("\n\n### ", 1)[0]
    for snapshot in ("qa-shared-prefix-one", "qa-shared-prefix-two"):
        old, new = (md_id(runs[snapshot, d]) for d in (1, 2))
        assert f"- **{md_id(snapshot)}** {old} → {new}: no provenance change" in changed

    html = (out / "report.html").read_text()
    qa = html[html.index('<h3 id="choice-qa">') :]
    for (snapshot, _), run_id in runs.items():
        assert f"<strong>{snapshot}</strong> <code>{run_id}</code>" in qa
    assert "…" not in qa.split("</table>")[0]
    assert qa.count('<table class="choice-qa">') == 2
    # Choice questions only: no other family's empty sections to scroll past.
    for other in ('id="trends"', 'id="comparisons"', 'id="context"', 'id="associations"'):
        assert other not in html, other
    # The quality gate and the run list name every run whole (no snapshot column in the
    # former: a cut id read import-qa-shared-prefi… for all four).
    gate = html[html.index('<h2 id="quality">') : html.index('<h2 id="provenance">')]
    listed = html[html.index('<h2 id="runs">') :]
    for run_id in runs.values():
        assert f"<code>{run_id}</code>" in gate and f"<code>{run_id}</code>" in listed

    # A window that starts after the baselines: they are still named, with their snapshot.
    since = tmp_path / "report-since"
    r = CliRunner().invoke(
        app, ["report", "--since", "2025-03-02", "--out", str(since)], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    late = (since / "report.html").read_text()
    for snapshot in ("qa-shared-prefix-one", "qa-shared-prefix-two"):
        run_id = runs[snapshot, 1]
        head = f"baseline</span> <strong>{snapshot}</strong> <code>{run_id}</code>"
        assert head in late, late[late.index('<h3 id="choice-qa">') :][:1500]

    if BROWSER is None:
        pytest.skip("no chromium binary on PATH (apt-get install chromium)")
    # The long value is on the page, in the provenance table.
    assert hashlib.sha256(b"qa-shared-prefix-one2").hexdigest() * 3 in html
    layout = measure_layout(out / "report.html", tmp_path, (1200, 900))
    assert layout["scroll_width"] <= layout["viewport_width"], layout
    assert layout["wider_than_page"] == [], layout


def md_id(text: str) -> str:
    """``text`` as the Markdown report escapes it (underscores and hyphens kept)."""
    from monitor.report.markdown import md

    return md(text, 120)
