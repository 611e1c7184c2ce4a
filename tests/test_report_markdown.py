"""The Markdown summary: the figures a reviewer acts on, escaped, short, and sentence-free."""

from __future__ import annotations

import re

import pytest
from _report_sections import associations, pairs, updated
from _report_store import ReportStore, report_store_fixture  # noqa: F401  (session fixture)
from test_report_cases import gpt4o_case, malicious_case

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.report import Comparison, ProvenanceDiff, render_html, render_markdown
from monitor.report.markdown import MAX_CHARS, md


def _table_rows(text: str) -> list[str]:
    """Rows of the detailed verdict table (after the per-axis answer at the top)."""
    detail = text.split("### Paired comparisons in detail", 1)[-1].split("\n> ", 1)[0]
    return [line for line in detail.splitlines() if line.startswith("| ")]


def _answer_rows(text: str) -> list[str]:
    """Rows of the per-axis tables the summary opens with (before the title heading)."""
    return [line for line in text.split("\n## ", 1)[0].splitlines() if line.startswith("| ")]


def _cells(row: str) -> int:
    """Cell separators GitHub would see: pipes not escaped with a backslash."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def test_the_gpt4o_caste_case_shows_its_figures():
    text = render_markdown(gpt4o_case())
    row = next(r for r in _table_rows(text) if r.startswith("| gpt-4o "))
    # Rates with their Wilson intervals, the paired Δ with its CI, flips, p and p (BH).
    assert "81.6% [73.0, 87.9] → 67.6% [58.2, 75.8]" in row
    assert "−12.6 pp [−23.6, −1.6]" in row
    assert "| 24 / 11 |" in row
    assert "| 0.041 | 0.041 |" in row
    assert "improvement" in row
    assert "Benjamini–Hochberg-adjusted over the 2 paired tests" in text
    assert "1 regression, 1 improvement, 0 no significant change, 1 not comparable" in text


def test_drifts_come_first_and_not_comparable_says_why():
    rows = _table_rows(render_markdown(gpt4o_case()))[1:]  # after the header
    verdicts = [r.rsplit("|", 2)[-2] for r in rows]
    assert "regression" in verdicts[0] and "improvement" in verdicts[1]
    assert "not comparable: different versions of metric cll: 1 vs 2" in verdicts[2]
    assert "| — | — | — | — |" in rows[2]  # no Δ, flips, p or p (BH) for it


def test_what_changed_groups_provenance_per_compared_pair():
    text = render_markdown(gpt4o_case())
    section = text.split("### What changed", 1)[1].split("###", 1)[0]
    gpt = section.split("- **gpt-4o**", 1)[1].split("\n- ", 1)[0]
    assert "model change + environment change" in gpt
    assert "  - model: snapshot\\_manifest.source.model gpt-4 → gpt-4o" in gpt
    assert "  - environment: environment.packages.openai 1.23.2 → 1.35.3" in gpt
    assert "started\\_at" not in gpt  # run bookkeeping is not a change worth a line
    assert "environment drift" in section and "torch 2.12.0 → 2.13.0" in section
    assert "**gemma3-270m** gemma-n12 → gemma-n13: provenance not available" in section


def test_quarantined_runs_are_listed_with_their_reason():
    text = render_markdown(gpt4o_case())
    quarantined = text.split("### Quarantined runs", 1)[1]
    assert (
        "- smol-q07 (smollm2-135m, 2024-07-08): results suite failed: "
        "12 items with NaN log-probability"
    ) in quarantined
    # Without a recorded reason the failed expectations stand in.
    r = gpt4o_case()
    runs = tuple(x.model_copy(update={"reason": None}) for x in r.runs)
    text = render_markdown(r.model_copy(update={"runs": runs}))
    assert "smol-q07 (smollm2-135m, 2024-07-08): expect\\_column\\_values" in text


def test_hostile_values_are_inert_markdown():
    text = render_markdown(malicious_case())
    assert "<script" not in text.lower() and "<img" not in text and "<iframe" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "[click](" not in text and "\\[click\\](javascript" in text
    assert "**bold**" not in text and "\\*\\*bold\\*\\*" in text
    assert "\n# heading" not in text  # newlines in a value cannot start a block
    rows = _table_rows(text)
    assert {_cells(r) for r in rows} == {8}, "an escaped | must not add a table column"
    assert {_cells(r) for r in _answer_rows(text)} == {6}


def test_md_escapes_each_special_character():
    assert md("a|b") == "a\\|b"
    assert md("<b>&") == "&lt;b&gt;&amp;"
    assert md("x" * 500, limit=10) == "x" * 9 + "…"
    assert md("one\ntwo\r\nthree") == "one two three"


def test_every_flag_is_shown_however_long_the_table():
    base = gpt4o_case()
    quiet = pairs(base).comparisons[0].model_copy(update={"verdict": "no significant change"})
    many = tuple(quiet.model_copy(update={"axis": f"axis-{i:03d}"}) for i in range(300))
    report = updated(base, **{"comparisons": (*many, *pairs(base).comparisons)})
    text = render_markdown(report, max_rows=20)
    rows = _table_rows(text)[1:]
    assert len(rows) == 20
    assert "regression" in rows[0] and "improvement" in rows[1]
    assert "283 more comparisons are in the HTML report." in text
    # The per-axis answer: the 300 quiet axes are gpt-4o's, yet smollm2's regression shows.
    answer = [r for r in _answer_rows(text) if not r.startswith("| Axis |")]
    assert len(answer) == 20
    assert "improvement" in answer[0] and sum("regression" in r for r in answer) == 1
    assert "283 more axis comparisons without a flag are in the HTML report." in text


def test_output_stays_under_githubs_comment_limit():
    base = gpt4o_case()
    c, d = pairs(base).comparisons[0], base.provenance[0]
    comps, diffs = [], []
    for i in range(2000):  # many pairs, each with its own provenance diff
        comps.append(Comparison(**{**c.model_dump(), "new_run_id": f"new-{i}"}))
        diffs.append(ProvenanceDiff(**{**d.model_dump(), "new_run_id": f"new-{i}"}))
    text = render_markdown(updated(base, **{"comparisons": comps, "provenance": diffs}))
    assert len(text) <= MAX_CHARS + 100
    assert text.endswith("… truncated; the HTML report has everything.\n")


def test_no_benchmark_sentence_reaches_any_output(tmp_path, shared_datasets):
    """Flipped items are named by id only: the real caste sentences never appear."""
    fetch(load_manifest(), ["bhed-caste"], from_dir=shared_datasets, data_dir=tmp_path)
    (caste,) = load_benchmarks(["bhed-caste"], data_dir=tmp_path)
    ids = tuple(i.item_id for i in caste.items[:35])
    base = gpt4o_case()
    gpt = pairs(base).comparisons[0].model_copy(update={"flipped_item_ids": ids})
    report = updated(base, **{"comparisons": (gpt, *pairs(base).comparisons[1:])})
    outputs = render_markdown(report) + render_html(report)
    assert ids[0] in outputs  # the HTML lists the flipped ids for follow-up
    for item in caste.items:
        for sentence in (item.text_stereo, item.text_anti):
            assert sentence not in outputs, f"bhed-caste row {item.source_row} leaked"


@pytest.mark.slow
def test_the_summary_opens_with_the_verdict_then_the_per_axis_table(
    report_store: ReportStore,
) -> None:
    """The Markdown of a real store (the GPT-4o study, two SmolLM2 runs with caste's
    neutral control): the first line is the verdict sentence, the per-axis tables come
    before any section, and the control appears only in its axis's row."""
    text = report_store.markdown
    lines = text.splitlines()
    assert lines[0] == "**Verdict:** 2 snapshots: no significant change on 6 of 6 compared axes."
    first_table = next(i for i, line in enumerate(lines) if line.startswith("| "))
    first_heading = next(i for i, line in enumerate(lines) if line.startswith("#"))
    assert first_table < first_heading
    head = "\n".join(lines[:first_heading])
    for run in report_store.smol_runs:  # both runs named in full, with their snapshot
        assert f"smollm2-135m-instruct-q4, run {run}" in head
    answer = _answer_rows(text)
    assert len(answer) == 2 + 4 + 2  # two header rows, four study axes, caste and religion
    (caste,) = [r for r in answer if "(bhed-neutral)" in r]
    assert caste.startswith("| caste (bhed-caste) |")
    assert re.search(r"\| \d+\.\d% → \d+\.\d% \(bhed-neutral\) \|$", caste)
    # The control is no row of its own, in any table, and never a verdict.
    rows = [line for line in lines if line.startswith("| ")]
    assert not [
        r for r in rows if r.split("|")[1].strip().startswith(("caste-control", "bhed-neutral"))
    ]
    assert not [r for r in _table_rows(text) if "caste-control" in r or "(bhed-neutral)" in r]
    assert "6 comparisons: 0 regressions, 0 improvements, 6 no significant change" in text


def test_a_family_with_nothing_to_show_adds_no_blank_line():
    """A report without association tests: the family's empty section leaves the Markdown
    as it was before the family moved into its folder (no doubled blank line)."""
    report = gpt4o_case()
    assert not associations(report).associations and not associations(report).effect_comparisons
    text = render_markdown(report)
    assert "\n\n\n" not in text
