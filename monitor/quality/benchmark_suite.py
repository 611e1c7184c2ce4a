"""The benchmark-data suite: run when a benchmark file is fetched, imported or loaded.

Each family brings its own rules as its ``benchmark_quality`` hook, in its folder's
``quality.py`` (``monitor/families/<name>/``: sentence and identity pairs, word sets,
choice questions), found by the kind of the loaded items. This module only picks the
suite, so the quality room holds no family's rules.
"""

from __future__ import annotations

from monitor.benchmarks.items import LoadedBenchmark
from monitor.quality.suites import SuiteResult


def validate_benchmark(loaded: LoadedBenchmark, *, expected_rows: int) -> SuiteResult:
    """Check one loaded benchmark file version with its family's suite; ``expected_rows``
    is the manifest's ``rows``.

    The family is the one whose item kinds the items have. A file none of whose rows
    became an item (all excluded) has no kind to go by; it is checked by the default
    family's suite (``DEFAULT_FAMILY``, sentence pairs), which requires every row to be
    excluded for a known reason."""
    from monitor.metrics.families import DEFAULT_FAMILY, FAMILIES

    kinds = {it.kind for it in loaded.items}
    owners = [f for f in FAMILIES.values() if kinds & set(f.item_kinds)]
    if len(owners) > 1:
        names = ", ".join(f.name for f in owners)
        raise ValueError(f"{loaded.benchmark}: items of several families ({names}) in one file")
    family = owners[0] if owners else FAMILIES[DEFAULT_FAMILY]
    suite = family.hook("benchmark_quality")
    if suite is None:
        raise ValueError(f"{loaded.benchmark}: the {family.name} family has no benchmark suite")
    return suite(loaded, expected_rows=expected_rows)
