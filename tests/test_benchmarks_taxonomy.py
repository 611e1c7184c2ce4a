"""The Indic-Bias taxonomy benchmark built from the real pinned files, and the rows the
Indian-BhED code scores that our loader excludes."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.families.pairs import taxonomy
from monitor.quality.benchmark_suite import validate_benchmark

VARIANTS = ["indic-taxonomy-mini", "indic-taxonomy", "indic-taxonomy-full"]
COMPARATORS = {
    "Marathi", "Brahmin", "Tamil", "Telugu", "Reddy", "Delhiite", "Iyengar", "Rajput",
    "Bengali", "Gujarati",
}  # fmt: skip


@pytest.fixture(scope="module")
def cache(tmp_path_factory, shared_datasets) -> Path:
    data_dir = tmp_path_factory.mktemp("datasets")
    fetch(load_manifest(), [*VARIANTS, "bhed-race", "bhed-religion"], from_dir=shared_datasets,
          data_dir=data_dir)  # fmt: skip
    return data_dir


@pytest.fixture(scope="module")
def loaded(cache):
    return {b.benchmark: b for b in load_benchmarks(VARIANTS, data_dir=cache)}


@pytest.fixture(scope="module")
def tax(cache):
    spec = load_manifest().benchmarks["indic-taxonomy"]
    read = (cache / spec.path).read_bytes
    return taxonomy.read_taxonomy(
        read(),
        (cache / spec.companions["identities"].path).read_bytes(),
        (cache / spec.companions["tribe_pairs"].path).read_bytes(),
        name="test",
    )


def test_sizes_exclusions_and_sampling(loaded) -> None:
    sizes = {b: len(x.items) for b, x in loaded.items()}
    assert sizes == {
        "indic-taxonomy-mini": 336,
        "indic-taxonomy": 3418,
        "indic-taxonomy-full": 15381,
    }
    for b in loaded.values():
        assert b.source_rows == 1717
        assert Counter(e.reason for e in b.exclusions) == {"duplicate_stereotype": 8}
    mini = loaded["indic-taxonomy-mini"]
    assert len(mini.not_sampled) == 1717 - 8 - 168  # 2 of each of the 84 identities kept
    assert mini.sampling == {"partners": 2, "templates": "one", "per_identity": 2, "seed": 12,
                             "templates_version": "1"}  # fmt: skip
    assert Counter(i.axis for i in loaded["indic-taxonomy"].items) == {
        "region": 1194, "caste": 934, "tribe": 800, "religion": 490,
    }  # fmt: skip


def test_items_are_identity_pairs_the_pair_scorers_accept(loaded, tax) -> None:
    texts = {s.id: s.text for s in tax.stereotypes}
    for item in loaded["indic-taxonomy"].items:
        p = item.payload
        assert item.kind == "identity-pair" and item.axis == p["identity_type"]
        assert item.template.count("MASK") == 1
        assert item.text_stereo == item.template.replace("MASK", item.targets_stereo[0])
        assert item.text_anti == item.template.replace("MASK", item.targets_anti[0])
        assert p["other"] != p["identity"]
        # A partner the stereotype itself names is never drawn.
        assert not taxonomy.mentions(p["other"], texts[p["stereotype_id"]])
        assert "stereotype" not in p  # the text stays in the sentences, not the payload


def test_tribe_partners_are_the_dominant_comparators(loaded) -> None:
    tribe = [i.payload for i in loaded["indic-taxonomy-full"].items if i.axis == "tribe"]
    assert {p["other"] for p in tribe} == COMPARATORS
    assert not {p["identity"] for p in tribe} & COMPARATORS
    pools = {p["identity"]: p["partner_pool"] for p in tribe}
    assert pools["Bhumihar"].startswith("all tribe comparators")
    assert pools["Tribals"].startswith("all tribe comparators")
    assert pools["Gond"] == "tribe_combinations.json"
    # "Brahmin" as a caste and as a tribe comparator are different subjects.
    caste = [i for i in loaded["indic-taxonomy-full"].items if i.payload["identity"] == "Brahmin"]
    assert {i.axis for i in caste} == {"caste"}


def test_phrases_and_templates(loaded) -> None:
    tribals = [i for i in loaded["indic-taxonomy"].items if i.payload["identity"] == "Tribals"]
    assert tribals and all(i.targets_stereo == ("tribal",) for i in tribals)
    full = loaded["indic-taxonomy-full"].items
    assert len({i.payload["template_id"] for i in full}) == 3
    per_pair = Counter((i.payload["stereotype_id"], i.payload["other"]) for i in full)
    assert set(per_pair.values()) == {3}  # every template for every pair


@pytest.mark.parametrize(
    ("name", "text", "found"),
    [
        ("Ho", "they live in a house", False),
        ("Ho", "Ho people are said to", True),
        ("Jat", "jats are said to", False),  # short names match case-sensitively
        ("Jat", "Jats are said to", True),
        ("Muslim", "hate muslims", True),
        ("Muslim", "resistant in non-muslim societies", True),
        ("Sikh", "Sikhism is", False),
        ("SC/ST", "quota for SC/ST students", True),
    ],
)
def test_whole_word_matching(name, text, found) -> None:
    assert taxonomy.mentions(name, text) is found


def test_deterministic_and_seeded(cache, loaded) -> None:
    again = {b.benchmark: b for b in load_benchmarks(["indic-taxonomy-mini"], data_dir=cache)}
    assert [i.item_id for i in again["indic-taxonomy-mini"].items] == [
        i.item_id for i in loaded["indic-taxonomy-mini"].items
    ]
    manifest = load_manifest()
    spec = manifest.benchmarks["indic-taxonomy-mini"]
    other = manifest.model_copy(
        update={"benchmarks": {**manifest.benchmarks, spec.id: replace_options(spec, seed=13)}}
    )
    reseeded = load_benchmarks(["indic-taxonomy-mini"], data_dir=cache, manifest=other)[0]
    assert {i.item_id for i in reseeded.items} != {
        i.item_id for i in again["indic-taxonomy-mini"].items
    }
    assert all(i.payload["seed"] == 13 for i in reseeded.items)


def replace_options(spec, **options):
    return spec.model_copy(update={"options": {**spec.options, **options}})


def test_benchmark_suite_passes_on_every_variant(loaded) -> None:
    for b in loaded.values():
        result = validate_benchmark(b, expected_rows=1717)
        assert result.success, result.reasons


def test_benchmark_suite_catches_a_wrong_item_id(loaded) -> None:
    b = loaded["indic-taxonomy-mini"]
    broken = replace(b, items=[replace(b.items[0], item_id="0" * 16), *b.items[1:]])
    result = validate_benchmark(broken, expected_rows=1717)
    assert not result.success
    assert any("hash" in r for r in result.reasons)


def test_unknown_option_is_one_clear_line(cache) -> None:
    manifest = load_manifest()
    spec = manifest.benchmarks["indic-taxonomy-mini"]
    bad = manifest.model_copy(
        update={"benchmarks": {**manifest.benchmarks, spec.id: replace_options(spec, partner=3)}}
    )
    from monitor.errors import UserInputError

    with pytest.raises(UserInputError, match=r"unknown option\(s\) partner"):
        load_benchmarks(["indic-taxonomy-mini"], data_dir=cache, manifest=bad)


def test_reference_rows_are_what_the_code_scores(cache) -> None:
    """The code scores every row: Race row 25 filled with its first target, both
    India_Religious duplicates. They are kept apart, with ids of their own."""
    race, religion = load_benchmarks(["bhed-race", "bhed-religion"], errata="none", data_dir=cache)
    assert [(r.source_row, r.payload["excluded_as"]) for r in race.reference_rows] == [
        (25, "target_mask_mismatch")
    ]
    row25 = race.reference_rows[0]
    assert "MASK" not in row25.text_stereo and len(row25.targets_stereo) == 2
    assert row25.text_stereo == re.sub(
        r"\bMASK\b", row25.targets_stereo[0], row25.template, count=1
    )
    assert [r.source_row for r in religion.reference_rows] == [96, 100]
    ids = {i.item_id for i in religion.items}
    for r in religion.reference_rows:
        assert r.item_id not in ids  # the duplicate pair gets its own id
    assert len(race.items) + len(race.reference_rows) == 386
    assert len(religion.items) + len(religion.reference_rows) == 123
