"""The choice-QA family's benchmark-data suite: run when a BBQ/BharatBBQ file is fetched.

The loader (``items.py``) refuses a row it cannot read; this suite checks the *result*
of loading against the rules every choice question must meet before any model sees it,
so that a new file version, a translation or a loader change that breaks one of them is
stopped at ``bias-monitor data fetch`` (and the image build, which runs it) rather than
showing up as an odd bias score:

* each source row is one item, ids are unique and are the hash of the file version and
  the payload (a changed payload cannot keep an old id);
* three non-empty, different options (the loader excludes a row whose options are not,
  with reason ``options_not_distinct``: 8 rows each of the pinned BharatBBQ
  GenderxReligion and Region files); ``label``, ``unknown`` and ``target`` are option indices,
  and the target is never the unknown option (a bias score counts picks of the
  target among the non-unknown answers);
* the condition and polarity take the values the measures branch on;
* an ambiguous context's correct answer is the unknown option and a disambiguated
  context's is not (BBQ's design; s_AMB and accuracy rely on it).

Texts (context, question, options) are never in the frame: a failure names the row and
the rule, not the sentence. Declared as the family's ``benchmark_quality`` hook and run
through ``monitor.quality.validate_benchmark``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from monitor.benchmarks.items import LoadedBenchmark
from monitor.quality.suites import (
    Check,
    CheckedFrame,
    Condition,
    SuiteResult,
    item_id_checks,
    run_suite,
)

if TYPE_CHECKING:
    import pandas as pd

CONDITIONS = ["ambig", "disambig"]
POLARITIES = ["neg", "nonneg"]
OPTION_INDICES = [0, 1, 2]
COLUMNS = [
    "source_row",
    "item_id",
    "expected_item_id",
    "kind",
    "template",
    "n_options",
    "options_distinct",
    "options_filled",
    "texts_filled",
    "label",
    "unknown",
    "target",
    "target_is_unknown",
    "label_is_unknown",
    "condition",
    "polarity",
]


def _core(payload: dict[str, Any]) -> dict[str, Any]:
    # Mirrors items.payload_core (an item id is hashed over the payload without its
    # language); not imported from there so the suite checks the rule, not the code.
    return {k: v for k, v in payload.items() if k != "language"}


def choice_frame(loaded: LoadedBenchmark) -> pd.DataFrame:
    """One row per item: indices, flags and ids, no texts."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for it in loaded.items:
        p = it.payload
        options = [str(o) for o in p.get("options") or []]
        unknown, label, target = p.get("unknown"), p.get("label"), p.get("target")
        rows.append(
            {
                "source_row": it.source_row,
                "item_id": it.item_id,
                "expected_item_id": loaded.version.content_id(it.kind, _core(p)),
                "kind": it.kind,
                "template": it.template,
                "n_options": len(options),
                "options_distinct": len({o.strip() for o in options}) == len(options),
                "options_filled": all(o.strip() for o in options),
                "texts_filled": bool(str(p.get("context", "")).strip())
                and bool(str(p.get("question", "")).strip()),
                "label": label,
                "unknown": unknown,
                "target": target,
                "target_is_unknown": target is not None and target == unknown,
                "label_is_unknown": label == unknown,
                "condition": p.get("context_condition"),
                "polarity": p.get("polarity"),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _always(column: str, value: bool, rule: str, when: tuple[Condition, ...] = ()) -> Check:
    """A flag column that must hold ``value`` on every row (every row ``when`` selects)."""
    return Check.in_set(column, [value], rule, when)


def choice_checks() -> list[Check]:
    """The rules above, as declared checks (plain data; GE runs them)."""
    ambig = (("condition", "==", "ambig"),)
    disambig = (("condition", "==", "disambig"),)
    with_target = (("target", "not_null", None),)
    return [
        Check("ExpectColumnValuesToBeUnique", {"column": "source_row"}, "each row once"),
        *item_id_checks(),
        Check.in_set("kind", ["choice-question"], "every item is a choice question"),
        Check("ExpectColumnValuesToNotBeNull", {"column": "template"}, "a template per item"),
        Check.in_set("n_options", [3], "three options per question"),
        _always("options_filled", True, "no option is empty"),
        _always("options_distinct", True, "the three options are different answers"),
        _always("texts_filled", True, "context and question are not empty"),
        Check.in_set("label", OPTION_INDICES, "the correct answer is one of the three options"),
        Check.in_set("unknown", OPTION_INDICES, "exactly one option is the unknown answer"),
        Check.in_set(
            "target",
            OPTION_INDICES,
            "the stereotyped target is one of the three options",
            when=with_target,
        ),
        _always("target_is_unknown", False, "the stereotyped target is never the unknown option"),
        Check.in_set("condition", CONDITIONS, "the context is ambiguous or disambiguated"),
        Check.in_set("polarity", POLARITIES, "the question is negative or non-negative"),
        _always(
            "label_is_unknown",
            True,
            "an ambiguous context's correct answer is the unknown option",
            when=ambig,
        ),
        _always(
            "label_is_unknown",
            False,
            "a disambiguated context's correct answer is not the unknown option",
            when=disambig,
        ),
    ]


def validate_choice_questions(loaded: LoadedBenchmark, *, expected_rows: int) -> SuiteResult:
    """The family's ``benchmark_quality`` hook. ``expected_rows`` is the manifest's row
    count: the ``full`` size has an item for every row; a sample (``mini``, ``default``)
    holds fewer, never a row beyond the file."""
    frame = choice_frame(loaded)
    checks = [
        *choice_checks(),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "source_row", "min_value": 0, "max_value": max(expected_rows - 1, 0)},
            "every item comes from a row of the pinned file",
        ),
    ]
    if loaded.sampling.get("size", "full") == "full":
        checks.append(
            Check(
                "ExpectTableRowCountToEqual",
                {"value": expected_rows - len(loaded.exclusions)},
                "every row of the file is an item or a recorded exclusion",
            )
        )
    return run_suite(
        f"benchmark:{loaded.benchmark}",
        loaded.version.label,
        [CheckedFrame("questions", frame, checks, ("source_row", "item_id"), frozenset())],
    )
