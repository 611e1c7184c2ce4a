"""One report input: the report model names no family's field; each family's data is its
own section model, and the JSON keeps the layout it had before sections existed."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import pytest
from _report_sections import pairs
from _report_store import ReportStore, report_store_fixture  # noqa: F401  (session fixture)
from test_report_cases import gpt4o_case

from monitor.contract.capabilities import Report
from monitor.contract.registry import families
from monitor.errors import UserInputError
from monitor.families.pairs.section import PairsSection
from monitor.report import from_json, render_html, render_markdown, to_json
from monitor.report.model import ReportInput
from monitor.report.section import FamilySection

# The report JSON's top-level keys, schema 2, in the order reports have always had them.
SCHEMA_2_KEYS = [
    "schema_version",
    "title",
    "generated_at",
    "since",
    "comparisons",
    "unscored",
    "trends",
    "provenance",
    "quality",
    "runs",
    "runs_not_listed",
    "quality_not_listed",
    "notes",
    "contexts",
    "repeat_groups",
    "methods",
    "fdr_note",
    "associations",
    "effect_comparisons",
    "effect_trends",
    "family_comparisons",
    "run_measures",
    "alpha",
    "confidence",
]


def test_the_report_model_names_no_family_field():
    generic = set(ReportInput.model_fields)
    for family in families():
        kind = family.report().section
        assert kind is not None, family.name
        assert not generic & set(kind.model_fields), family.name


def test_every_family_reports_through_one_section_pattern():
    assert [f.name for f in dataclasses.fields(Report)] == ["section", "build"]
    for family in families():
        kind = family.report().section
        assert issubclass(kind, FamilySection) and kind.family == family.name
        # Declared in the family's own folder, not in the report frame.
        assert not kind.__module__.startswith("monitor.report"), kind.__module__
        assert kind() == kind()  # every field has a default: the section with nothing


def test_the_json_keeps_its_schema_2_layout():
    assert list(from_json(to_json(gpt4o_case())).model_dump()) == SCHEMA_2_KEYS
    empty = ReportInput(title="t", generated_at=datetime(2024, 7, 19, tzinfo=UTC))
    assert empty.sections == ()
    text = to_json(empty)
    assert list(json.loads(text)) == SCHEMA_2_KEYS
    assert from_json(text) == empty  # the defaults written, no section read back


def test_a_key_no_family_claims_is_refused():
    text = to_json(gpt4o_case()).replace('"title":', '"bogus": 1,\n  "title":', 1)
    with pytest.raises(UserInputError, match="bogus"):
        from_json(text)


def test_the_cli_report_reads_back_into_sections_byte_for_byte(report_store: ReportStore):
    """``bias-monitor report``'s JSON read back: the pairs' data in their section, and
    the same three files rendered again from it."""
    text = (report_store.folder / "report.json").read_text(encoding="utf-8")
    report = from_json(text)
    assert [type(s) for s in report.sections] == [PairsSection]
    assert pairs(report).comparisons and pairs(report).trends
    assert to_json(report) == text
    assert render_markdown(report) == report_store.markdown
    assert render_html(report) == report_store.html.read_text(encoding="utf-8")
