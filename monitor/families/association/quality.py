"""The benchmark-data suite for word-set benchmarks (association tests).

The family's ``benchmark_quality`` hook, run by ``validate_benchmark`` when the loaded
items are word-set terms: one frame row
per term slot (items and exclusions side by side), checked for the rules every word-set
file must meet. Terms are never shown in a failure: the text column is sensitive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.benchmarks.items import LoadedBenchmark
from monitor.quality.suites import Check, CheckedFrame, SuiteResult, item_id_checks, run_suite

if TYPE_CHECKING:
    import pandas as pd

ROLES = ["X", "Y", "A", "B"]
KNOWN_REASONS = ["empty_term"]


def word_set_frame(loaded: LoadedBenchmark) -> pd.DataFrame:
    import pandas as pd

    rows = [
        {
            "state": "scored",
            "source_row": it.source_row,
            "item_id": it.item_id,
            "expected_item_id": loaded.version.content_id(it.kind, it.payload),
            "test": it.axis,
            "role": it.payload.get("role"),
            "text": it.payload.get("text"),
            "reason": None,
        }
        for it in loaded.items
    ]
    rows += [
        {"state": "excluded", "source_row": e.source_row, "reason": e.reason}
        for e in loaded.exclusions
    ]
    columns = ["state", "source_row", "item_id", "expected_item_id", "test", "role", "text"]
    return pd.DataFrame(rows, columns=[*columns, "reason"])


def validate_word_sets(loaded: LoadedBenchmark, *, expected_rows: int | None = None) -> SuiteResult:
    """The suite of one word-set file. ``expected_rows`` (the manifest's term count) is
    already checked by the loader; the table's rows are the term slots it built."""
    scored = (("state", "==", "scored"),)
    frame = word_set_frame(loaded)
    roles_per_test = frame[frame["state"] == "scored"].groupby("test")["role"].nunique()
    complete = int((roles_per_test == len(ROLES)).sum())
    checks = [
        Check(
            "ExpectTableRowCountToEqual",
            {"value": loaded.source_rows},
            "every term slot of the file is an item or an exclusion",
        ),
        Check("ExpectColumnValuesToBeUnique", {"column": "source_row"}, "each slot once"),
        *item_id_checks(when=scored),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "role", "value_set": ROLES},
            "every term is in set X, Y, A or B",
            when=scored,
        ),
        Check(
            "ExpectColumnValuesToMatchRegex",
            {"column": "text", "regex": r"\S"},
            "terms are not empty",
            when=scored,
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "reason", "value_set": KNOWN_REASONS},
            "exclusion reasons come from the reviewed set",
            when=(("state", "==", "excluded"),),
        ),
    ]
    tests = CheckedFrame(
        "tests",
        _tests_frame(len(roles_per_test), complete),
        [
            Check(
                "ExpectColumnPairValuesToBeEqual",
                {"column_A": "tests", "column_B": "complete"},
                "every test has terms in all four sets",
            )
        ],
        ("tests",),
    )
    return run_suite(
        f"benchmark:{loaded.benchmark}",
        loaded.version.label,
        [
            CheckedFrame("terms", frame, checks, ("source_row", "item_id"), frozenset({"text"})),
            tests,
        ],
    )


def _tests_frame(n: int, complete: int) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([{"tests": n, "complete": complete}])
