"""The package's own benchmark: its pin, its loader and its data-quality suite."""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections import Counter
from importlib.resources import files

import pytest
from bias_monitor_statements.items import FORMAT, load
from bias_monitor_statements.quality import validate_statements

from monitor.benchmarks.items import BenchmarkVersion
from monitor.benchmarks.manifest import BenchmarkSpec
from monitor.contract.capabilities import LoadRequest
from monitor.errors import DataIntegrityError

PACKAGE = files("bias_monitor_statements")


def _entry() -> dict:
    manifest = tomllib.loads(PACKAGE.joinpath("benchmarks.toml").read_text("utf-8"))
    return manifest["benchmarks"]["truth-statements"]


def _load(data: bytes, rows: int | None = None):
    entry = _entry()
    spec = BenchmarkSpec.model_validate(
        {
            "id": "truth-statements",
            "source": entry["source"],
            "format": "bbq-jsonl",  # any format the core's schema knows; the loader ignores it
            "axis": entry["axis"],
            "region": entry["region"],
            "path": entry["path"],
            "url": "https://example.invalid/statements.jsonl",
            "sha256": hashlib.sha256(data).hexdigest(),
            "rows": rows if rows is not None else entry["rows"],
        }
    )
    version = BenchmarkVersion("truth-statements", "0" * 40, spec.sha256, "none")
    return load(LoadRequest(spec, data, version))


def _data() -> bytes:
    return PACKAGE.joinpath(_entry()["path"]).read_bytes()


def test_the_pin_matches_the_shipped_file():
    entry = _entry()
    assert entry["format"] == FORMAT
    assert hashlib.sha256(_data()).hexdigest() == entry["sha256"]
    assert len(_data().decode("utf-8").splitlines()) == entry["rows"]


def test_every_axis_has_as_many_endorsing_as_rejecting_statements():
    loaded = _load(_data())
    counts = Counter((it.axis, it.payload["stance"]) for it in loaded.items)
    axes = {a for a, _ in counts}
    assert axes == {"caste", "religion", "region", "gender"}
    assert all(counts[a, "endorses"] == counts[a, "rejects"] == 6 for a in axes)
    assert len({it.item_id for it in loaded.items}) == 48


def test_the_quality_suite_passes_on_the_shipped_file():
    result = validate_statements(_load(_data()), expected_rows=48)
    assert result.success, result


def test_the_quality_suite_names_an_unbalanced_pair():
    lines = _data().decode("utf-8").splitlines()
    # Drop the caste-01 counter-statement: its pair is left with one stance.
    kept = [line for line in lines if json.loads(line)["id"] != "caste-01-rejects"]
    result = validate_statements(_load("\n".join(kept).encode(), 47), expected_rows=47)
    assert not result.success
    text = str(result)
    assert "one endorsing and one rejecting statement" in text
    assert "Intelligence" not in text  # the rule and the row, never the sentence


def test_the_loader_refuses_a_malformed_line():
    bad = _data().replace(b'"stance": "rejects"', b'"stance": "maybe"', 1)
    with pytest.raises(DataIntegrityError, match="row 1 has stance"):
        _load(bad)
