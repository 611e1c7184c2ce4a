"""The benchmark manifest: the real data/benchmarks.toml and the errors a broken one gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.benchmarks.manifest import BenchmarkManifest, load_manifest
from monitor.errors import UserInputError

REPO = Path(__file__).resolve().parents[1]
REAL_MANIFEST = REPO / "data" / "benchmarks.toml"


def test_real_manifest_loads_with_ids_from_keys():
    m = load_manifest()
    assert list(m.benchmarks)[:10] == [
        "bhed-caste",
        "bhed-religion",
        "bhed-gender",
        "bhed-race",
        "crows-pairs",
        "bhed-neutral",
        "indic-taxonomy",
        "indic-taxonomy-mini",
        "indic-taxonomy-ci",
        "indic-taxonomy-full",
    ]
    # Word sets for association tests (issue 11), selectable by group.
    assert [s.id for s in m.select(["sochindi"])] == ["sochindi-weat", "sochindi-seat"]
    assert len(m.select(["socbias-hi-weat"])) == 15 and len(m.select(["en-weat"])) == 15
    assert len(m.select(["en-seat"])) == 35
    assert all(spec.id == key for key, spec in m.benchmarks.items())
    caste = m.benchmarks["bhed-caste"]
    assert (caste.rows, caste.format, caste.region) == (106, "indian-bhed", "india")
    assert m.source_of(caste).commit == "458472b1e765ea70f7c982006ee8d053ae6dcb19"


def test_select_defaults_named_and_unknown():
    m = load_manifest(REAL_MANIFEST)
    # bhed-caste brings its neutral control along, right after it.
    assert [s.id for s in m.select(None)] == [
        "bhed-caste",
        "bhed-neutral",
        "bhed-religion",
        "bhed-gender",
        "bhed-race",
    ]
    assert [s.id for s in m.select(["crows-pairs", "bhed-caste", "crows-pairs"])] == [
        "crows-pairs",
        "bhed-caste",
        "bhed-neutral",
    ]
    assert [s.id for s in m.select(["bhed-caste"], controls=False)] == ["bhed-caste"]
    with pytest.raises(UserInputError) as err:
        m.select(["bhed-cast"])
    msg = str(err.value)
    # A "did you mean" of the close ids, not every id of the manifest (issue 46).
    assert "'bhed-cast' (did you mean bhed-caste" in msg and "crows-pairs" not in msg
    assert "\n" not in msg


def test_truncated_toml_is_one_clear_line(tmp_path):
    text = REAL_MANIFEST.read_text(encoding="utf-8")
    cut = tmp_path / "benchmarks.toml"
    cut.write_text(text[: text.index('sha256 = "ea35') + 15], encoding="utf-8")
    with pytest.raises(UserInputError) as err:
        load_manifest(cut)
    msg = str(err.value)
    assert str(cut) in msg and "not valid TOML" in msg and "\n" not in msg


def test_truncated_at_a_line_end_fails_the_schema(tmp_path):
    text = REAL_MANIFEST.read_text(encoding="utf-8")
    cut = tmp_path / "benchmarks.toml"
    cut.write_text(text[: text.index("rows = 106")], encoding="utf-8")
    with pytest.raises(UserInputError) as err:
        load_manifest(cut)
    assert str(cut) in str(err.value) and "benchmarks.bhed-caste.rows" in str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("default = false", "default = false\nweight = 2", "weight"),  # extra key forbidden
        ('sha256 = "ea35', 'sha256 = "zz35', "sha256"),
        ('source = "crows-pairs"', 'source = "crows"', "unknown source 'crows'"),
        ('path = "indian-bhed/Caste.csv"', 'path = "../Caste.csv"', "'..'"),
        ('format = "crows-pairs"', 'format = "stereoset"', "format"),
    ],
)
def test_schema_violations_name_the_field(tmp_path, old, new, expected):
    text = REAL_MANIFEST.read_text(encoding="utf-8")
    assert old in text
    bad = tmp_path / "benchmarks.toml"
    bad.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(UserInputError) as err:
        load_manifest(bad)
    assert str(bad) in str(err.value) and expected in str(err.value)


def test_missing_manifest(tmp_path):
    with pytest.raises(UserInputError, match="not found"):
        load_manifest(tmp_path / "nope.toml")


def test_default_path_follows_monitor_home(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "benchmarks.toml").write_text(
        REAL_MANIFEST.read_text(encoding="utf-8").replace("rows = 106", "rows = 7"),
        encoding="utf-8",
    )
    monkeypatch.setenv("MONITOR_HOME", str(tmp_path))
    m: BenchmarkManifest = load_manifest()
    assert m.benchmarks["bhed-caste"].rows == 7
