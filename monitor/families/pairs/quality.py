"""The pair family's benchmark-data suite: run when a pair benchmark file is fetched,
imported or loaded (its ``benchmark_quality`` hook, called by
``monitor.quality.benchmark_suite.validate_benchmark``).

The loader already refuses damaged files; this suite checks the *result* of loading
against rules that hold for every pair benchmark, one frame row per source row (items and
exclusions side by side), so "every row is scored or excluded for a known reason"
and "no scored row has a target/blank mismatch" are checked on the same table.

A source row may yield several items (a taxonomy stereotype is paired with several
identities): the first is the row's entry, the others are marked ``repeat`` and checked
as items but not counted again. A sampled benchmark variant leaves rows out by design;
those are ``not_sampled``, a state of their own rather than a missing row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from monitor.benchmarks.items import Item, LoadedBenchmark, id_namespace
from monitor.families.pairs.parse import mask_spans
from monitor.families.pairs.records import expected_item_id
from monitor.quality.suites import Check, CheckedFrame, SuiteResult, item_id_checks, run_suite

if TYPE_CHECKING:
    import pandas as pd

# Exclusion reasons the pair parsers (``parse.py``, ``taxonomy.py`` beside this) may record.
# A new reason must be added here on purpose: an unknown one means rows are dropped for an
# unreviewed cause.
KNOWN_EXCLUSION_REASONS: frozenset[str] = frozenset(
    {
        "target_mask_mismatch",
        "duplicate",
        "identical_pair",
        "empty_target",
        "unparseable_targets",
        "empty_sentence",
        "unknown_direction",
        "duplicate_stereotype",
        "no_partner",
    }
)

SCORED, EXCLUDED, MISSING, NOT_SAMPLED = "scored", "excluded", "missing", "not_sampled"
SENSITIVE = frozenset({"text_stereo", "text_anti"})
ID_COLUMNS = ("source_row", "item_id")


def validate_pairs(
    loaded: LoadedBenchmark,
    *,
    expected_rows: int,
    known_reasons: Iterable[str] = KNOWN_EXCLUSION_REASONS,
) -> SuiteResult:
    """Check one loaded pair benchmark file version; ``expected_rows`` is the manifest's
    ``rows``."""
    frame = benchmark_frame(loaded)
    checks = benchmark_checks(loaded, expected_rows=expected_rows, known_reasons=known_reasons)
    return run_suite(
        f"benchmark:{loaded.benchmark}",
        loaded.version.label,
        [CheckedFrame("rows", frame, checks, ID_COLUMNS, SENSITIVE)],
    )


def benchmark_frame(loaded: LoadedBenchmark) -> pd.DataFrame:
    """One row per item, one per exclusion and one per source row that is neither.

    A source row that is both scored and excluded (or scored twice) therefore appears
    twice, which the ``source_row`` uniqueness check reports.
    """
    import pandas as pd

    namespace = id_namespace(loaded.version)
    rows: list[dict[str, Any]] = []
    first: set[int] = set()
    for item in loaded.items:
        rows.append({**_item_row(item, namespace), "repeat": item.source_row in first})
        first.add(item.source_row)
    rows.extend(
        {
            "state": NOT_SAMPLED,
            "benchmark": loaded.benchmark,
            "benchmark_version": loaded.version.label,
            "source_row": n,
        }
        for n in loaded.not_sampled
    )
    for exc in loaded.exclusions:
        rows.append(
            {
                "state": EXCLUDED,
                "benchmark": exc.benchmark,
                "benchmark_version": exc.benchmark_version,
                "source_row": exc.source_row,
                "exclusion_reason": exc.reason,
            }
        )
    covered = {r["source_row"] for r in rows}
    rows.extend(
        {
            "state": MISSING,
            "benchmark": loaded.benchmark,
            "benchmark_version": loaded.version.label,
            "source_row": n,
        }
        for n in range(loaded.source_rows)
        if n not in covered
    )
    columns = [
        "state",
        "benchmark",
        "benchmark_version",
        "source_row",
        "item_id",
        "expected_item_id",
        "axis",
        "region",
        "text_stereo",
        "text_anti",
        "n_blanks",
        "n_targets_stereo",
        "n_targets_anti",
        "shortest_target",
        "exclusion_reason",
        "repeat",
    ]
    frame = pd.DataFrame(rows, columns=columns)
    frame["source_row"] = frame["source_row"].astype("int64")
    frame["repeat"] = frame["repeat"].astype("boolean").fillna(False).astype(bool)
    for col in ("n_blanks", "n_targets_stereo", "n_targets_anti", "shortest_target"):
        frame[col] = frame[col].astype("Float64").astype("float64")  # None → NaN, ints as float
    return frame.sort_values(["source_row", "state"], kind="stable").reset_index(drop=True)


def _item_row(item: Item, namespace: str) -> dict[str, Any]:
    has_blanks = item.template is not None
    targets = (*item.targets_stereo, *item.targets_anti)
    return {
        "state": SCORED,
        "benchmark": item.benchmark,
        "benchmark_version": item.benchmark_version,
        "source_row": item.source_row,
        "item_id": item.item_id,
        # Identity check: the id must be the hash the loader documents, or paired drift
        # between runs silently pairs different sentences.
        "expected_item_id": expected_item_id(item, namespace),
        "axis": item.axis,
        "region": item.region,
        "text_stereo": item.text_stereo,
        "text_anti": item.text_anti,
        # Only templated benchmarks (Indian-BhED) have blanks and word targets; for
        # CrowS-Pairs the targets are diff spans and may legitimately be empty.
        "n_blanks": len(mask_spans(item.template)) if has_blanks else None,
        "n_targets_stereo": len(item.targets_stereo) if has_blanks else None,
        "n_targets_anti": len(item.targets_anti) if has_blanks else None,
        "shortest_target": (min(len(t.strip()) for t in targets) if targets else 0)
        if has_blanks
        else None,
        "exclusion_reason": None,
    }


def _repeats(loaded: LoadedBenchmark) -> int:
    """Items beyond the first of their source row."""
    return len(loaded.items) - len({it.source_row for it in loaded.items})


def benchmark_checks(
    loaded: LoadedBenchmark,
    *,
    expected_rows: int,
    known_reasons: Iterable[str] = KNOWN_EXCLUSION_REASONS,
) -> list[Check]:
    scored: tuple = (("state", "==", SCORED),)
    excluded: tuple = (("state", "==", EXCLUDED),)
    entries: tuple = (("repeat", "==", False),)  # one frame row per source row
    templated = (*scored, ("n_blanks", "not_null", None))
    states = [SCORED, EXCLUDED, *([NOT_SAMPLED] if loaded.not_sampled else [])]
    checks = [
        Check(
            "ExpectTableRowCountToEqual",
            {"value": expected_rows + _repeats(loaded)},
            f"the file version has the {expected_rows} data rows the manifest pins"
            + (" (plus the further items of rows that yield several)" if _repeats(loaded) else ""),
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "state", "value_set": states},
            "every source row is either scored or excluded with a reason"
            + (" (or left out by the variant's sampling)" if loaded.not_sampled else ""),
        ),
        Check(
            "ExpectColumnValuesToBeUnique",
            {"column": "source_row"},
            "each source row is accounted for exactly once",
            when=entries,
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "source_row", "min_value": 0, "max_value": max(expected_rows - 1, 0)},
            "source rows index the file's data rows",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "benchmark", "value_set": [loaded.benchmark]},
            "rows belong to the benchmark being loaded",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "benchmark_version", "value_set": [loaded.version.label]},
            "rows carry the loaded file version",
        ),
    ]
    for column in ("item_id", "text_stereo", "text_anti", "axis", "region"):
        checks.append(
            Check(
                "ExpectColumnValuesToNotBeNull",
                {"column": column},
                f"scored rows have {column}",
                when=scored,
            )
        )
    # Each sentence column read against two patterns: some text, and no blank left.
    texts = (
        ("ExpectColumnValuesToMatchRegex", r"\S", "is not empty", scored),
        ("ExpectColumnValuesToNotMatchRegex", r"\bMASK\b", "has no unfilled MASK blank", templated),
    )
    for column in ("text_stereo", "text_anti"):
        checks += [
            Check(expectation, {"column": column, "regex": regex}, f"{column} {words}", when=when)
            for expectation, regex, words, when in texts
        ]
    checks += [
        *item_id_checks(
            "the file version and the normalised pair",
            unique="item ids are unique among scored rows",
            when=scored,
        ),
        Check(
            "ExpectColumnPairValuesToBeEqual",
            {
                "column_A": "n_targets_stereo",
                "column_B": "n_blanks",
                "ignore_row_if": "either_value_is_missing",
            },
            "a scored row has one stereotypical target per MASK blank",
            when=scored,
        ),
        Check(
            "ExpectColumnPairValuesToBeEqual",
            {
                "column_A": "n_targets_anti",
                "column_B": "n_blanks",
                "ignore_row_if": "either_value_is_missing",
            },
            "a scored row has one anti-stereotypical target per MASK blank",
            when=scored,
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "n_blanks", "min_value": 1},
            "a templated row has at least one MASK blank",
            when=templated,
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "shortest_target", "min_value": 1},
            "targets are non-empty words",
            when=templated,
        ),
        Check(
            "ExpectColumnValuesToNotBeNull",
            {"column": "exclusion_reason"},
            "an excluded row records why",
            when=excluded,
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "exclusion_reason", "value_set": sorted(known_reasons)},
            "exclusion reasons come from the reviewed set",
            when=excluded,
        ),
    ]
    return checks
