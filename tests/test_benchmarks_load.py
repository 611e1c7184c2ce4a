"""Loading the real benchmark files: counts, exclusions, errata and stable ids.

The numbers asserted here are what the pinned files actually contain (checked by
hand against the CSVs); a change means the parser or the pins changed.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from monitor.benchmarks.fetch import fetch, verify_cached
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import BenchmarkManifest, load_manifest
from monitor.errors import DataIntegrityError, UserInputError

ALL = ["bhed-caste", "bhed-religion", "bhed-gender", "bhed-race", "crows-pairs"]
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def cache(tmp_path_factory, shared_datasets) -> Path:
    """A data cache filled once from the shared files, as `data fetch --from` would."""
    data_dir = tmp_path_factory.mktemp("datasets")
    fetch(load_manifest(), ALL, from_dir=shared_datasets, data_dir=data_dir)  # + bhed-neutral
    return data_dir


@pytest.fixture(scope="module")
def current(cache):
    return {b.benchmark: b for b in load_benchmarks(ALL, data_dir=cache)}


@pytest.fixture(scope="module")
def raw(cache):
    return {b.benchmark: b for b in load_benchmarks(ALL, errata="none", data_dir=cache)}


def by_row(loaded):
    return {i.source_row: i for i in loaded.items}


@pytest.mark.parametrize(
    ("benchmark", "rows", "items", "exclusions"),
    [
        ("bhed-caste", 106, 106, {}),
        ("bhed-religion", 123, 121, {96: "duplicate", 100: "duplicate"}),
        ("bhed-gender", 159, 159, {}),
        ("bhed-race", 386, 385, {25: "target_mask_mismatch"}),
        ("crows-pairs", 1508, 1507, {1502: "duplicate"}),
    ],
)
def test_counts_per_file(current, benchmark, rows, items, exclusions):
    b = current[benchmark]
    assert b.source_rows == rows
    assert len(b.items) == items
    assert {e.source_row: e.reason for e in b.exclusions} == exclusions
    assert len(b.items) + len(b.exclusions) == rows  # every row is accounted for
    assert len({i.item_id for i in b.items}) == len(b.items)


def test_exclusion_details(current):
    (race25,) = current["bhed-race"].exclusions
    assert race25.detail == "2 stereotypical targets, 2 anti-stereotypical targets, 1 MASK"
    assert [e.detail for e in current["bhed-religion"].exclusions] == [
        "same pair as row 95",
        "same pair as row 98",
    ]
    assert current["crows-pairs"].exclusions[0].detail == "same pair as row 1459"


def test_multi_blank_rows_and_literal_targets(current):
    gender = by_row(current["bhed-gender"])
    row1 = gender[1]  # three blanks
    assert row1.targets_stereo == ("man", "He", "his")
    assert row1.targets_anti == ("woman", "She", "her")
    assert row1.template.count("MASK") == 3
    assert "MASK" not in row1.text_stereo and "MASK" not in row1.text_anti
    # Left to right: the words appear in the filled text in target order.
    pos = [row1.text_anti.index(w) for w in row1.targets_anti]
    assert pos == sorted(pos)
    race28 = by_row(current["bhed-race"])[28]
    assert race28.targets_stereo == ("a", "Chinese") and race28.targets_anti == ("an", "American")
    five = by_row(current["bhed-gender"])[96]
    assert len(five.targets_stereo) == 5 and "MASK" not in five.text_stereo


def test_crows_fields(current):
    crows = current["crows-pairs"]
    assert crows.axis == "mixed"
    assert Counter(i.direction for i in crows.items) == {"stereo": 1289, "antistereo": 218}
    assert {i.axis for i in crows.items} == {
        "race-color",
        "gender",
        "socioeconomic",
        "nationality",
        "religion",
        "age",
        "sexual-orientation",
        "physical-appearance",
        "disability",
    }
    assert all(len(i.targets_stereo) == len(i.targets_anti) >= 1 for i in crows.items)


def test_errata_change_ids_only_of_touched_rows(current, raw):
    touched = {"bhed-religion": {80}, "bhed-race": {167, 222}}
    for name in ALL:
        cur, none = by_row(current[name]), by_row(raw[name])
        assert cur.keys() == none.keys()
        changed = {r for r in cur if cur[r].item_id != none[r].item_id}
        assert changed == touched.get(name, set()), name
        assert {r for r in cur if cur[r].errata} == touched.get(name, set())
        assert all(not i.errata for i in none.values())
        assert current[name].version.errata_version == "1"
        assert raw[name].version.errata_version == "none"
    religion80 = by_row(current["bhed-religion"])[80]
    assert religion80.errata == ("bhed-religion-80-peacefule",)
    assert religion80.targets_stereo == ("peaceful", "dress")
    assert by_row(raw["bhed-religion"])[80].targets_stereo == ("peacefule", "dress")
    assert by_row(current["bhed-race"])[222].targets_anti == ("white",)
    assert by_row(current["bhed-race"])[167].targets_stereo == ("Bill",)


def test_ids_are_stable_across_loads(cache, current):
    again = load_benchmarks(ALL, data_dir=cache)
    for b in again:
        assert [i.item_id for i in b.items] == [i.item_id for i in current[b.benchmark].items]
        assert b.version == current[b.benchmark].version


def test_defaults_and_explicit_errata_version(cache):
    defaults = ["bhed-caste", "bhed-neutral", *ALL[1:4]]  # caste brings its neutral control
    assert [b.benchmark for b in load_benchmarks(data_dir=cache, errata="1")] == defaults
    with pytest.raises(UserInputError, match="errata version '7' is not available"):
        load_benchmarks(["bhed-caste"], data_dir=cache, errata="7")


def write_errata(path: Path, old: str, *, row: int = 80, benchmark: str = "bhed-religion"):
    path.write_text(
        'version = "9"\n[[erratum]]\nid = "t1"\n'
        f'benchmark = "{benchmark}"\nsource_row = {row}\nfield = "Target_Stereotypical"\n'
        f'old = "{old}"\nnew = "[\'x\', \'y\']"\nreason = "test"\n',
        encoding="utf-8",
    )
    return path


def test_stale_erratum_stops_the_load(cache, tmp_path):
    stale = write_errata(tmp_path / "errata.toml", "['peaceful', 'dress']")
    with pytest.raises(DataIntegrityError) as err:
        load_benchmarks(["bhed-religion"], data_dir=cache, errata_file=stale)
    assert "stale erratum t1" in str(err.value) and "row 80" in str(err.value)
    far = write_errata(tmp_path / "far.toml", "x", row=5000)
    with pytest.raises(DataIntegrityError, match="only 123 data rows"):
        load_benchmarks(["bhed-religion"], data_dir=cache, errata_file=far)
    fresh = write_errata(tmp_path / "ok.toml", "['peacefule', 'dress']")
    (b,) = load_benchmarks(["bhed-religion"], data_dir=cache, errata_file=fresh)
    assert b.version.errata_version == "9" and by_row(b)[80].targets_stereo == ("x", "y")
    unknown = write_errata(tmp_path / "unknown.toml", "x", benchmark="bhed-casts")
    with pytest.raises(UserInputError, match="unknown benchmark id"):
        load_benchmarks(["bhed-caste"], data_dir=cache, errata_file=unknown)


def test_truncated_errata_file(cache, tmp_path):
    text = (REPO / "data" / "errata.toml").read_text(encoding="utf-8")
    cut = tmp_path / "errata.toml"
    cut.write_text(text[: text.index('old = "[') + 9], encoding="utf-8")
    with pytest.raises(UserInputError) as err:
        load_benchmarks(["bhed-caste"], data_dir=cache, errata_file=cut)
    assert str(cut) in str(err.value) and "not valid TOML" in str(err.value)


def test_verify_cached_missing_and_corrupt(tmp_path, shared_datasets):
    spec = load_manifest().benchmarks["bhed-caste"]
    with pytest.raises(DataIntegrityError) as err:
        verify_cached(spec, tmp_path)
    assert "bias-monitor data fetch" in str(err.value) and spec.path in str(err.value)
    target = tmp_path / spec.path
    target.parent.mkdir(parents=True)
    data = bytearray((shared_datasets / spec.path).read_bytes())
    data[10] ^= 1
    target.write_bytes(bytes(data))
    with pytest.raises(DataIntegrityError) as err:
        load_benchmarks(["bhed-caste"], data_dir=tmp_path)
    msg = str(err.value)
    assert str(target) in msg and spec.sha256 in msg and hashlib.sha256(data).hexdigest() in msg


def pin_to(
    manifest: BenchmarkManifest, benchmark: str, data: bytes, **changes
) -> BenchmarkManifest:
    raw = manifest.model_dump()
    raw["benchmarks"][benchmark].update(sha256=hashlib.sha256(data).hexdigest(), **changes)
    return BenchmarkManifest.model_validate(raw)


def test_malformed_csv_through_load(tmp_path, shared_datasets):
    """A manifest pinned to a damaged file still fails at parsing, naming the file."""
    manifest = load_manifest()
    spec = manifest.benchmarks["bhed-caste"]
    data = (shared_datasets / spec.path).read_bytes().replace(b",Sentence", b",Sentense", 1)
    (tmp_path / spec.path).parent.mkdir(parents=True)
    (tmp_path / spec.path).write_bytes(data)
    with pytest.raises(DataIntegrityError) as err:
        load_benchmarks(
            ["bhed-caste"], data_dir=tmp_path, manifest=pin_to(manifest, "bhed-caste", data)
        )
    assert "bhed-caste" in str(err.value) and "'Sentence'" in str(err.value)
    good = (shared_datasets / spec.path).read_bytes()
    (tmp_path / spec.path).write_bytes(good)
    wrong_rows = pin_to(manifest, "bhed-caste", good, rows=105)
    with pytest.raises(
        DataIntegrityError, match="parsed 106 data rows, but the manifest expects 105"
    ):
        load_benchmarks(["bhed-caste"], data_dir=tmp_path, manifest=wrong_rows)
