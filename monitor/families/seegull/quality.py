"""The family's benchmark-data suite: run whenever a file is fetched or loaded.

The loader applies the item rule (``items``); this suite checks the loaded items as a
whole, the facts the measures rely on, before any model sees them:

* item ids are unique and each is the hash of the file version, the kind and the
  payload;
* every item's stereotype has at least two of three stereotype votes;
* its identity and contrast differ, its identity kind is nationality or Indian region,
  and its offensiveness band is one of the three;
* no (identity, contrast, attribute) is an item twice;
* every source row is a row of the pinned file, and every row of the file is accounted
  for: an item's row, an exclusion, or a row a sample did not draw.

Texts are never in the frame: a failure names the row and the rule, not the tuple.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.benchmarks.items import LoadedBenchmark
from monitor.families.seegull.identities import KINDS
from monitor.families.seegull.items import BANDS, MIN_VOTES
from monitor.quality.suites import Check, CheckedFrame, SuiteResult, item_id_checks, run_suite

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = [
    "source_row",
    "item_id",
    "expected_item_id",
    "triple",
    "votes",
    "distinct",
    "identity_kind",
    "band",
]


def item_frame(loaded: LoadedBenchmark) -> pd.DataFrame:
    """One row per item: ids, votes, kinds and bands; no texts (the triple is hashed)."""
    import hashlib

    import pandas as pd

    rows = []
    for it in loaded.items:
        p = it.payload
        triple = "\x1f".join(str(p.get(k)) for k in ("identity", "contrast", "attribute"))
        rows.append(
            {
                "source_row": it.source_row,
                "item_id": it.item_id,
                "expected_item_id": loaded.version.content_id(it.kind, p),
                "triple": hashlib.sha256(triple.encode("utf-8")).hexdigest()[:16],
                "votes": int((p.get("votes") or [0])[0]),
                "distinct": p.get("identity") != p.get("contrast"),
                "identity_kind": p.get("identity_kind"),
                "band": p.get("band"),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def accounting_frame(loaded: LoadedBenchmark) -> pd.DataFrame:
    """One row per source row the load accounted for (items' rows, exclusions, rows not
    drawn), deduplicated: the suite expects exactly the file's rows."""
    import pandas as pd

    seen = sorted(
        {it.source_row for it in loaded.items}
        | {e.source_row for e in loaded.exclusions}
        | set(loaded.not_sampled)
    )
    return pd.DataFrame({"source_row": seen})


def checks(expected_rows: int) -> list[Check]:
    """The item rules above, as declared checks (great-expectations runs them)."""
    return [
        *item_id_checks(),
        Check(
            "ExpectColumnValuesToBeUnique",
            {"column": "triple"},
            "no (identity, contrast, attribute) is an item twice",
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "votes", "min_value": MIN_VOTES, "max_value": 3},
            f"every stereotype has at least {MIN_VOTES} of 3 stereotype votes",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "distinct", "value_set": [True]},
            "the contrast is another identity",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "identity_kind", "value_set": list(KINDS)},
            "every identity is a nationality or an Indian region",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "band", "value_set": [name for name, _ in BANDS]},
            "every attribute has an offensiveness band",
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "source_row", "min_value": 0, "max_value": expected_rows - 1},
            "every item comes from a row of the pinned file",
        ),
    ]


def accounting_checks(expected_rows: int) -> list[Check]:
    """Every row of the file is an item's, an exclusion or not drawn by a sample."""
    return [
        Check(
            "ExpectTableRowCountToEqual",
            {"value": expected_rows},
            "every row of the file is an item's row, an exclusion or a row not drawn",
        ),
    ]


def validate_seegull(loaded: LoadedBenchmark, *, expected_rows: int) -> SuiteResult:
    """The family's benchmark quality check (``expected_rows``: the manifest's count)."""
    return run_suite(
        f"benchmark:{loaded.benchmark}",
        loaded.version.label,
        [
            CheckedFrame(
                "items", item_frame(loaded), checks(expected_rows), ("source_row", "item_id")
            ),
            CheckedFrame(
                "rows", accounting_frame(loaded), accounting_checks(expected_rows), ("source_row",)
            ),
        ],
    )
