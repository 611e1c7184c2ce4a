"""Benchmark-data suite on the real Indian-BhED files and CrowS-Pairs, via the real loader."""

from __future__ import annotations

import dataclasses
import json

import pytest

from monitor.benchmarks.items import Exclusion, LoadedBenchmark, id_namespace
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.families.pairs.parse import mask_spans, parse_targets, read_table
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.quality.benchmark_suite import validate_benchmark

BHED = ["bhed-caste", "bhed-religion", "bhed-gender", "bhed-race"]


@pytest.fixture(scope="module")
def manifest():
    return load_manifest()


@pytest.fixture(scope="module")
def loaded(shared_datasets) -> dict[str, LoadedBenchmark]:
    benches = load_benchmarks([*BHED, "crows-pairs"], data_dir=shared_datasets)
    return {b.benchmark: b for b in benches}


def _rows(manifest, bench_id: str) -> int:
    return manifest.benchmarks[bench_id].rows


def _texts(bench: LoadedBenchmark) -> list[str]:
    return [t for it in bench.items for t in (it.text_stereo, it.text_anti)]


def _assert_no_sentences(result, bench: LoadedBenchmark) -> None:
    doc = result.to_json()
    for text in _texts(bench)[:200]:
        assert text not in doc
        assert all(text not in r for r in result.reasons)


@pytest.mark.parametrize("bench_id", [*BHED, "crows-pairs"])
def test_real_files_pass_with_their_real_exclusions(loaded, manifest, bench_id):
    bench = loaded[bench_id]
    result = validate_benchmark(bench, expected_rows=_rows(manifest, bench_id))
    assert result.success, result.reasons
    assert result.suite == f"benchmark:{bench_id}"
    assert result.subject == bench.version.label
    assert len(result.checks) >= 20 and all(c["success"] for c in result.checks)
    doc = json.loads(result.to_json())
    assert doc["success"] is True and doc["n_failed"] == 0


def test_real_exclusions_are_the_known_ones(loaded):
    # What the suite accepted above: Race row 25 (2 targets, 1 blank), two Religion duplicates.
    assert [(e.source_row, e.reason) for e in loaded["bhed-race"].exclusions] == [
        (25, "target_mask_mismatch")
    ]
    assert {e.reason for e in loaded["bhed-religion"].exclusions} == {"duplicate"}


def _scored_despite_mismatch(shared_datasets, race: LoadedBenchmark) -> LoadedBenchmark:
    """What a buggy loader would produce: Race row 25 scored instead of excluded."""
    raw = read_table(
        (shared_datasets / "indian-bhed" / "Race.csv").read_bytes(), "indian-bhed", name="Race.csv"
    )[25]
    template = raw["Sentence"]
    ts = parse_targets(raw["Target_Stereotypical"], side="s")
    ta = parse_targets(raw["Target_Anti-Stereotypical"], side="a")
    assert len(ts) != len(mask_spans(template))  # the real defect in the real file
    text_s, text_a = template.replace("MASK", " ".join(ts)), template.replace("MASK", " ".join(ta))
    item = PairItem(
        item_id=make_item_id(id_namespace(race.version), text_s, text_a),
        benchmark=race.benchmark,
        axis=race.axis,
        region=race.region,
        benchmark_version=race.version.label,
        source_row=25,
        text_stereo=text_s,
        text_anti=text_a,
        targets_stereo=ts,
        targets_anti=ta,
        template=template,
    )
    return dataclasses.replace(
        race,
        items=[*race.items, item],
        exclusions=[e for e in race.exclusions if e.source_row != 25],
    )


def test_target_mask_mismatch_not_recorded_as_exclusion_fails(shared_datasets, loaded, manifest):
    race = loaded["bhed-race"]
    bad = _scored_despite_mismatch(shared_datasets, race)
    result = validate_benchmark(bad, expected_rows=_rows(manifest, "bhed-race"))
    assert not result.success
    mismatch = [f for f in result.failures if "n_blanks" in f.columns]
    assert {f.columns for f in mismatch} == {
        ("n_targets_stereo", "n_blanks"),
        ("n_targets_anti", "n_blanks"),
    }
    for failure in mismatch:
        assert failure.expectation == "expect_column_pair_values_to_be_equal"
        assert failure.unexpected_count == 1
        assert failure.sample_ids[0].startswith("source_row=25 item_id=")
        assert "source_row=25" in failure.reason and "n_targets_stereo=2" in " ".join(
            f.reason for f in mismatch
        )
    _assert_no_sentences(result, bad)


def test_row_neither_scored_nor_excluded_fails(loaded, manifest):
    caste = loaded["bhed-caste"]
    dropped = dataclasses.replace(caste, items=[it for it in caste.items if it.source_row != 7])
    result = validate_benchmark(dropped, expected_rows=_rows(manifest, "bhed-caste"))
    assert not result.success
    (failure,) = [f for f in result.failures if f.columns == ("state",)]
    assert failure.sample_ids == ("source_row=7",)
    assert "state=missing" in failure.reason


def test_row_both_scored_and_excluded_fails(loaded, manifest):
    caste = loaded["bhed-caste"]
    twice = dataclasses.replace(
        caste,
        exclusions=[Exclusion(caste.benchmark, caste.version.label, 3, "duplicate", "test")],
    )
    result = validate_benchmark(twice, expected_rows=_rows(manifest, "bhed-caste"))
    assert not result.success
    (failure,) = [f for f in result.failures if f.columns == ("source_row",)]
    assert failure.expectation == "expect_column_values_to_be_unique"
    assert "source_row=3" in failure.reason


def test_unknown_exclusion_reason_fails(loaded, manifest):
    race = loaded["bhed-race"]
    odd = dataclasses.replace(
        race, exclusions=[dataclasses.replace(e, reason="looked_wrong") for e in race.exclusions]
    )
    result = validate_benchmark(odd, expected_rows=_rows(manifest, "bhed-race"))
    assert not result.success
    (failure,) = result.failures
    assert failure.columns == ("exclusion_reason",)
    assert "exclusion_reason=looked_wrong" in failure.reason and "source_row=25" in failure.reason


def test_wrong_row_count_and_tampered_id_fail(loaded, manifest):
    gender = loaded["bhed-gender"]
    first = gender.items[0]
    tampered = dataclasses.replace(
        gender, items=[dataclasses.replace(first, item_id="0" * 16), *gender.items[1:]]
    )
    result = validate_benchmark(tampered, expected_rows=_rows(manifest, "bhed-gender") + 1)
    assert not result.success
    by_type = {f.expectation: f for f in result.failures}
    assert "observed 159, expected 160" in by_type["expect_table_row_count_to_equal"].reason
    id_failure = by_type["expect_column_pair_values_to_be_equal"]
    assert id_failure.columns == ("item_id", "expected_item_id")
    assert f"item_id={'0' * 16}" in id_failure.reason
    assert f"source_row={first.source_row}" in id_failure.reason


def test_a_file_whose_rows_were_all_excluded_gets_the_pair_suite(loaded, manifest):
    """No item is left to say which family's suite applies: the family of the file's
    manifest format (sentence pairs) checks it, so every row must still be accounted for
    by a known exclusion reason; without a format there is nothing to go by."""
    race = loaded["bhed-race"]
    every_row = [
        Exclusion(race.benchmark, race.version.label, n, "duplicate", "test: all excluded")
        for n in range(race.source_rows)
    ]
    empty = dataclasses.replace(race, items=[], reference_rows=[], exclusions=every_row)
    fmt = manifest.benchmarks["bhed-race"].format
    result = validate_benchmark(empty, expected_rows=_rows(manifest, "bhed-race"), fmt=fmt)
    assert result.suite == "benchmark:bhed-race" and result.success, result.reasons
    unknown = [dataclasses.replace(e, reason="no_reason_given") for e in every_row]
    bad = validate_benchmark(
        dataclasses.replace(empty, exclusions=unknown),
        expected_rows=_rows(manifest, "bhed-race"),
        fmt=fmt,
    )
    assert not bad.success and any("no_reason_given" in r for r in bad.reasons)
    with pytest.raises(ValueError, match="no manifest format to tell its family"):
        validate_benchmark(empty, expected_rows=_rows(manifest, "bhed-race"))
