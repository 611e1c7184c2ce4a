"""The benchmark-data suite: run when a benchmark file is fetched, imported or loaded.

Each family brings its own rules as its ``quality`` capability, in its folder's
``quality.py`` (``monitor/families/<name>/``: sentence and identity pairs, word sets,
choice questions), found by the kind of the loaded items. This module only picks the
suite, so the quality room holds no family's rules.
"""

from __future__ import annotations

from monitor.benchmarks.items import LoadedBenchmark
from monitor.quality.suites import SuiteResult


def validate_benchmark(
    loaded: LoadedBenchmark, *, expected_rows: int, fmt: str | None = None
) -> SuiteResult:
    """Check one loaded benchmark file version with its family's suite; ``expected_rows``
    is the manifest's ``rows``.

    The family is the one whose item kinds the items have. A file none of whose rows
    became an item (all excluded) has no kind to go by; it is checked by the suite of the
    family that loads its manifest format ``fmt`` (for sentence pairs, which requires every
    row to be excluded for a known reason)."""
    from monitor.contract.registry import family_of_items, formats

    owners = family_of_items({it.kind for it in loaded.items})
    if len(owners) > 1:
        names = ", ".join(f.name for f in owners)
        raise ValueError(f"{loaded.benchmark}: items of several families ({names}) in one file")
    if owners:
        family = owners[0]
    elif fmt is not None and fmt in formats():
        family = formats()[fmt]
    else:
        raise ValueError(f"{loaded.benchmark}: no item, and no manifest format to tell its family")
    return family.items().quality(loaded, expected_rows=expected_rows)
