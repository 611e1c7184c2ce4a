"""The family's benchmark-data suite: run whenever its file is fetched or loaded.

The loader refuses a line it cannot read; this suite checks the loaded items as a whole,
the rules the measures rely on, before any model sees them:

* each row is one item; ids and statement ids are unique; the item id is the hash of
  the file version, the kind and the payload;
* every statement has a stance, ``endorses`` or ``rejects``, and a non-empty text;
* every pair holds exactly one statement of each stance, on one axis: the balanced rate
  averages the two stances, so an axis must have as many of one as of the other;
* every axis has at least 5 pairs (a rate over fewer says little).

Texts are never in the frame: a failure names the row and the rule, not the sentence.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from bias_monitor_statements.frame import STANCES
from monitor.benchmarks.items import LoadedBenchmark, id_namespace, make_content_id
from monitor.quality.suites import Check, CheckedFrame, SuiteResult, run_suite

if TYPE_CHECKING:
    import pandas as pd

MIN_PAIRS_PER_AXIS = 5
COLUMNS = [
    "source_row",
    "item_id",
    "expected_item_id",
    "statement",
    "kind",
    "stance",
    "text_filled",
    "pair_size",
    "pair_stances",
    "pair_axes",
    "axis_pairs",
]


def statement_frame(loaded: LoadedBenchmark) -> pd.DataFrame:
    """One row per item: ids, stance and pair/axis counts, no texts."""
    import pandas as pd

    namespace = id_namespace(loaded.version)
    by_pair: dict[str, list[Any]] = {}
    for it in loaded.items:
        by_pair.setdefault(str(it.payload.get("pair")), []).append(it)
    pairs_per_axis = Counter(
        its[0].axis for its in by_pair.values() if len({i.axis for i in its}) == 1
    )
    rows = []
    for it in loaded.items:
        p = it.payload
        pair = by_pair[str(p.get("pair"))]
        rows.append(
            {
                "source_row": it.source_row,
                "item_id": it.item_id,
                "expected_item_id": make_content_id(namespace, it.kind, p),
                "statement": p.get("statement"),
                "kind": it.kind,
                "stance": p.get("stance"),
                "text_filled": bool(str(p.get("text", "")).strip()),
                "pair_size": len(pair),
                "pair_stances": ",".join(sorted(str(i.payload.get("stance")) for i in pair)),
                "pair_axes": len({i.axis for i in pair}),
                "axis_pairs": pairs_per_axis.get(it.axis, 0),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def checks(expected_rows: int) -> list[Check]:
    """The rules above, as declared checks (plain data; great-expectations runs them)."""
    return [
        Check("ExpectColumnValuesToBeUnique", {"column": "source_row"}, "each row once"),
        Check("ExpectColumnValuesToBeUnique", {"column": "item_id"}, "item ids are unique"),
        Check("ExpectColumnValuesToBeUnique", {"column": "statement"}, "statement ids are unique"),
        Check(
            "ExpectColumnPairValuesToBeEqual",
            {"column_A": "item_id", "column_B": "expected_item_id"},
            "the item id is the hash of the file version, the kind and the payload",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "stance", "value_set": list(STANCES)},
            "every statement endorses or rejects a stereotype",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "text_filled", "value_set": [True]},
            "no statement is empty",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "pair_stances", "value_set": [",".join(sorted(STANCES))]},
            "every pair is one endorsing and one rejecting statement",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "pair_axes", "value_set": [1]},
            "both statements of a pair are on one axis",
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "axis_pairs", "min_value": MIN_PAIRS_PER_AXIS},
            f"every axis has at least {MIN_PAIRS_PER_AXIS} pairs",
        ),
        Check(
            "ExpectTableRowCountToEqual",
            {"value": expected_rows},
            "every row of the file is an item",
        ),
    ]


def validate_statements(loaded: LoadedBenchmark, *, expected_rows: int) -> SuiteResult:
    """The family's benchmark quality check (``expected_rows``: the manifest's count)."""
    return run_suite(
        f"benchmark:{loaded.benchmark}",
        loaded.version.label,
        [
            CheckedFrame(
                "statements",
                statement_frame(loaded),
                checks(expected_rows),
                ("source_row", "item_id"),
            )
        ],
    )
