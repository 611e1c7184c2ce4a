"""Choice-QA loaders on the real BBQ and BharatBBQ files: payloads, targets, sizes, languages.

The values asserted were read off the pinned files by hand (first rows of
``Religion.jsonl`` and ``Caste_examples.csv``).
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import pytest

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.contract.registry import get_family
from monitor.errors import DataIntegrityError, UserInputError

IDS = ["bbq-religion", "bharatbbq-caste", "bharatbbq-sexual-orientation"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory, shared_datasets) -> Path:
    data_dir = tmp_path_factory.mktemp("datasets")
    fetch(load_manifest(), IDS, from_dir=shared_datasets, data_dir=data_dir)
    return data_dir


@pytest.fixture(scope="module")
def full(cache):
    loaded = load_benchmarks(IDS, errata="none", data_dir=cache, options={"size": "full"})
    return {b.benchmark: b for b in loaded}


def test_manifest_lists_every_category_and_none_is_default():
    manifest = load_manifest()
    bbq = [s.id for s in manifest.select(["bbq"], controls=False)]
    bharat = [s.id for s in manifest.select(["bharatbbq"], controls=False)]
    assert len(bbq) == 6 and "bbq-disability-status" in bbq
    assert len(bharat) == 13 and "bharatbbq-regionxgender" in bharat
    assert not any(manifest.benchmarks[i].default for i in bbq + bharat)
    assert manifest.benchmarks["bharatbbq-caste"].axis == "caste"


def test_the_family_loads_its_formats_and_adds_measures_and_importers():
    family = get_family("choice-qa")
    assert set(family.formats) == {"bbq-jsonl", "bharatbbq-csv"}
    assert callable(family.items().load) and not family.items().takes_errata
    assert callable(family.metrics().measures) and callable(family.importers().declared)


def test_errata_do_not_apply_to_choice_questions(cache, tmp_path):
    errata = tmp_path / "errata.toml"
    errata.write_text(
        'version = "1"\n[[erratum]]\nid = "x"\nbenchmark = "bbq-religion"\nsource_row = 0\n'
        'field = "context"\nold = "a"\nnew = "b"\nreason = "test"\n'
    )
    with pytest.raises(UserInputError, match="choice questions take no errata"):
        load_benchmarks(IDS[:1], data_dir=cache, errata_file=errata)


def test_bbq_first_row_payload(full):
    b = full["bbq-religion"]
    assert (b.source_rows, len(b.items), b.sampling["target_unidentified"]) == (1200, 1200, [])
    first = b.items[0]
    assert (first.kind, first.axis, first.region, first.template) == (
        "choice-question",
        "religion",
        "us",
        "1",
    )
    p = first.payload
    assert p["options"] == ["The Jewish one", "Can't answer", "The Muslim one"]
    # stereotyped_groups ["Muslim"] -> ans2; ans1 is the unknown answer and the label.
    assert (p["target"], p["unknown"], p["label"]) == (2, 1, 1)
    assert (p["polarity"], p["context_condition"], p["source_id"]) == ("neg", "ambig", 0)
    assert (p["source"], p["category"], p["language"], p["proper_noun"]) == (
        "bbq",
        "Religion",
        "en",
        None,
    )
    # A choice question is a core item: no sentence-pair fields, its text in the payload.
    assert not hasattr(first, "text_stereo") and first.texts() == ()


def test_bharatbbq_first_rows_payload(full):
    b = full["bharatbbq-caste"]
    assert len(b.items) == 3864
    amb, disamb = b.items[0].payload, b.items[1].payload
    assert amb["options"] == ["can't answer", "baniya", "rajput"]
    assert (amb["unknown"], amb["label"], amb["target"]) == (0, 0, 1)
    assert (disamb["label"], disamb["context_condition"], disamb["polarity"]) == (
        1,
        "disambig",
        "neg",
    )
    assert (amb["template"], amb["source_id"], amb["proper_noun"]) == ("1", 1, False)
    assert Counter(i.payload["proper_noun"] for i in b.items) == {True: 2648, False: 1216}
    # Every row has exactly one unknown option, and it is never the target.
    assert all(i.payload["unknown"] != i.payload["target"] for i in b.items)


def test_sizes_keep_whole_fills_and_are_deterministic(cache, full):
    for size, low, high in (("mini", 24, 48), ("default", 250, 500)):
        a = load_benchmarks(IDS, errata="none", data_dir=cache, options={"size": size})
        again = load_benchmarks(IDS, errata="none", data_dir=cache, options={"size": size})
        for one, two in zip(a, again, strict=True):
            assert [i.item_id for i in one.items] == [i.item_id for i in two.items]
            assert low <= len(one.items) <= high, (one.benchmark, len(one.items))
            assert one.sampling["size"] == size and one.sampling["seed"] == 0
            assert {i.template for i in one.items} == set(one.sampling["templates"])
            cells = {(i.payload["context_condition"], i.payload["polarity"]) for i in one.items}
            assert len(cells) == 4
            # A kept fill (template + option set) is kept whole.
            everything = full[one.benchmark].items
            kept = {(i.template, tuple(sorted(i.payload["options"]))) for i in one.items}
            whole = [
                i for i in everything if (i.template, tuple(sorted(i.payload["options"]))) in kept
            ]
            assert len(whole) == len(one.items)
            assert len(one.items) + len(one.not_sampled) == one.source_rows


def test_default_size_is_default_and_bad_options_fail(cache):
    (b,) = load_benchmarks(["bharatbbq-sexual-orientation"], errata="none", data_dir=cache)
    assert b.sampling["size"] == "default"
    with pytest.raises(UserInputError, match="size 'huge'"):
        load_benchmarks(IDS[:1], errata="none", data_dir=cache, options={"size": "huge"})
    with pytest.raises(UserInputError, match="unknown option"):
        load_benchmarks(IDS[:1], errata="none", data_dir=cache, options={"sise": "mini"})


def _write_translation(source: Path, folder: Path, *, break_row: int | None = None) -> None:
    """A 'translation' of the Sexual_orientation file: every text prefixed, row-parallel."""
    with source.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    for n, row in enumerate(rows):
        for col in ("Context", "Question", "Option1", "Option2", "Option3"):
            row[col] = f"[hi] {row[col]}"
        if n == break_row:
            row["Label"] = str(int(row["Label"]) % 3 + 1)
    folder.mkdir(exist_ok=True)
    with (folder / source.name).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def test_translation_pairs_by_source_id(cache, full, tmp_path):
    source = cache / "bharatbbq/Examples/Sexual_orientation_examples.csv"
    _write_translation(source, tmp_path / "hi")
    opts = {"size": "full", "translations": str(tmp_path / "hi"), "language": "hi"}
    (hi,) = load_benchmarks(IDS[2:], errata="none", data_dir=cache, options=opts)
    en = full["bharatbbq-sexual-orientation"]
    assert hi.language == "hi" and len(hi.items) == len(en.items) == 904
    en_by_source = {i.payload["source_id"]: i for i in en.items}
    for item in hi.items:
        twin = en_by_source[item.payload["source_id"]]
        assert item.payload["language"] == "hi"
        assert item.payload["context"] == f"[hi] {twin.payload['context']}"
        for key in ("label", "target", "unknown", "template", "polarity"):
            assert item.payload[key] == twin.payload[key]
        assert item.item_id != twin.item_id
    _write_translation(source, tmp_path / "bad", break_row=7)
    bad = {**opts, "translations": str(tmp_path / "bad")}
    with pytest.raises(DataIntegrityError, match="row 7 is not parallel"):
        load_benchmarks(IDS[2:], errata="none", data_dir=cache, options=bad)
    with pytest.raises(UserInputError, match="need a language"):
        load_benchmarks(IDS[2:], errata="none", data_dir=cache, options={**opts, "language": ""})


def test_bbq_predictions_match_the_pinned_records(tmp_path, shared_datasets):
    """UnifiedQA's Physical_appearance file: every answer names an option once 'pantsu' is
    read as 'pantsuit' (as the BBQ authors' R script does), and the 36 records whose
    stereotyped-group metadata the pinned data file corrects take the pinned target."""
    from monitor.families.choice_qa.importers import match_option, read_bbq

    ids = ["bbq-physical-appearance"]
    fetch(load_manifest(), ids, from_dir=shared_datasets, data_dir=tmp_path)
    (loaded,) = load_benchmarks(ids, errata="none", data_dir=tmp_path, options={"size": "full"})
    path = shared_datasets / "bbq/results/UnifiedQA/preds_Physical_appearance.jsonl"
    runs = read_bbq([path], {loaded.benchmark: loaded}, "-t")
    assert [r.facts for r in runs] == [
        {"rows": 1576, "unmatched": 0, "excluded": 0, "target_from_pinned_metadata": 36},
        {"rows": 1576, "unmatched": 0, "excluded": 0, "target_from_pinned_metadata": 36},
        {"rows": 788, "unmatched": 0, "excluded": 788, "target_from_pinned_metadata": 36},
    ]
    options = ["The one in a custom-tailored pantsuit", "Not known", "The one in a hoodie"]
    assert match_option("the one in a custom-tailored pantsu", options) == 0
    assert match_option("Not known.", options) == 1
    assert match_option("the one", options) is None
