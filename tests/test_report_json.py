"""The JSON report: strict JSON, ISO dates, null for undefined numbers, a schema version."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from test_report_cases import gpt4o_case, malicious_case, year_case

from monitor.errors import UserInputError
from monitor.report import SCHEMA_VERSION, from_json, read_json, to_json, write_report


def _strict(text: str):
    """Parse refusing NaN/Infinity, which json.loads would otherwise accept."""

    def refuse(name):
        raise AssertionError(f"non-JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("build", [gpt4o_case, malicious_case, year_case])
def test_round_trip_is_exact(build):
    report = build()
    assert from_json(to_json(report)) == report


def test_shape_dates_and_nulls():
    text = to_json(gpt4o_case())
    data = _strict(text)
    assert next(iter(data)) == "schema_version" and data["schema_version"] == SCHEMA_VERSION == 2
    assert datetime.fromisoformat(data["generated_at"]).isoformat() == "2024-07-19T06:00:00+00:00"
    gpt, _, gemma = data["comparisons"]
    assert gpt["ci_old"] == pytest.approx([0.7298, 0.8786], abs=1e-4)  # Wilson, 84/103
    assert (gpt["b_to_anti"], gpt["c_to_stereo"], gpt["n_paired"]) == (24, 11, 103)
    assert gemma["p_value"] is None and gemma["delta"] is None  # NaN went in
    assert gpt["flipped_item_ids"][:2] == ["0000000000000000", "0000000000000001"]
    points = data["trends"][1]["points"]
    assert points[10]["flagged"].startswith("regression") and points[0]["flagged"] is None


def test_a_foreign_schema_version_is_refused_with_one_sentence():
    data = _strict(to_json(gpt4o_case()))
    data["schema_version"] = 1  # before trend points could summarise several runs
    with pytest.raises(UserInputError, match="schema_version 1; this monitor reads 2"):
        from_json(json.dumps(data))


def test_invalid_input_names_the_field(tmp_path):
    data = _strict(to_json(gpt4o_case()))
    data["comparisons"][0]["verdict"] = "worse"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(
        UserInputError, match=r"bad\.json is not a valid report: comparisons\.0\.verdict"
    ):
        read_json(path)
    path.write_text("{not json")
    with pytest.raises(UserInputError, match="is not valid JSON"):
        read_json(path)


def test_written_file_reads_back(tmp_path):
    paths = write_report(gpt4o_case(), tmp_path)
    assert read_json(paths["json"]) == gpt4o_case()
