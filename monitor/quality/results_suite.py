"""The results suite: the gate every run passes before it is marked complete.

A run that fails is kept but quarantined, so it is never used as a drift baseline.
Which numbers must be present depends on the metric, because a NULL is legitimate where
a metric does not produce a number and a defect where it does. Each metric's spec
(``monitor.metrics.registry``) declares that (``MetricSpec.numbers``), and its result
family which measure checks apply; this suite reads those declarations and never guesses
from a metric's name. Wherever a number is present it must be finite and in range,
whatever the metric: which numbers must be finite and where each lies are the families'
declared score columns (``DetailColumn.finite``/``bounds``), beside the core ``delta``.
A metric's required numbers are its family's columns, or keys of the row's ``details``
for a family that keeps its numbers there.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import fields
from typing import TYPE_CHECKING, Any, get_args

from monitor.benchmarks.items import Item
from monitor.metrics.registry import METRICS, MetricSpec, run_measures
from monitor.quality.suites import Check, CheckedFrame, SuiteResult, run_suite
from monitor.records import (
    LEGACY_KIND,
    Measure,
    Outcome,
    ScoreRow,
    family_record,
    score_columns,
    score_floats,
)

if TYPE_CHECKING:
    import pandas as pd

    from monitor.readmodel.models import ResultFrames

SUITE = "results"
OUTCOMES: tuple[str, ...] = get_args(Outcome)
MEASURE_FLOATS = ("value", "ci_low", "ci_high")
PROVENANCE = (
    "snapshot_revision",
    "metric",
    "metric_version",
    "dataset_versions",
    "environment",
    "git_commit",
    "device",
    "started_at",
)


def spec_of(metric: str | None) -> MetricSpec | None:
    """The registered spec of a stored run's metric; None for a metric nobody declared."""
    return METRICS.get(metric or "")


def validate_run(
    frames: ResultFrames,
    *,
    expected_item_ids: Iterable[str] | None = None,
) -> SuiteResult:
    """Validate what the store holds for one run (``StoreView.result_frames``).

    ``expected_item_ids``: the items the run meant to score; when given, the stored
    scores must cover exactly those ids.
    """
    return validate_run_frames(
        frames.run, frames.scores, frames.measures, expected_item_ids=expected_item_ids
    )


def validate_run_frames(
    run: pd.DataFrame,
    scores: pd.DataFrame,
    measures: pd.DataFrame,
    *,
    expected_item_ids: Iterable[str] | None = None,
) -> SuiteResult:
    """The same suite on frames shaped like ``StoreView.result_frames`` returns them.

    Kept separate so that a shard read from Parquet (where nothing enforces the
    (run_id, item_id) key) can be checked before it is merged into the store.
    """
    import pandas as pd

    run = run.copy()
    metric = str(run["metric"].iloc[0]) if len(run) else None
    spec = spec_of(metric)
    scores, measures = recomputed(spec, scores, _with_measure_kinds(measures))
    scores = with_numbers(spec, scores)
    run["metric_registered"] = spec is not None
    raw_n_scored = run["n_scored"].iloc[0] if len(run) else None
    n_scored = None if pd.isna(raw_n_scored) else int(raw_n_scored)  # NULL: run not finished
    expected = sorted(set(expected_item_ids)) if expected_item_ids is not None else None
    extra_frames: list[CheckedFrame] = []
    if expected is not None:
        scores["item_expected"] = scores["item_id"].isin(expected)
        extra_frames.append(_expected_items_frame(expected, set(scores["item_id"])))
    frames = [
        CheckedFrame("run", run, run_checks(metric), ("run_id",)),
        CheckedFrame(
            "scores",
            scores,
            score_checks(spec, n_scored=n_scored, expected_item_ids=expected),
            ("item_id",),
        ),
        CheckedFrame(
            "axis_measures",
            measures,
            measure_checks(),
            ("benchmark", "axis", "measure"),
        ),
    ]
    subject = str(run["run_id"].iloc[0]) if len(run) else "?"
    return run_suite(SUITE, subject, [*frames, *extra_frames])


def _expected_items_frame(expected: list[str], scored: set[str]) -> CheckedFrame:
    """One row per item the run was asked to score, and whether a score row names it: a
    missing score fails here, naming the item."""
    import pandas as pd

    data = pd.DataFrame({"item_id": expected, "scored": [i in scored for i in expected]})
    check = Check.in_set("scored", [True], "every item the run was asked to score has a score")
    return CheckedFrame("expected_items", data, [check], ("item_id",))


OK = "ok"
TOLERANCE = 1e-12  # recomputed from the same float64 inputs by the same code: exact


def recomputed(
    spec: MetricSpec | None, scores: pd.DataFrame, measures: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Add a ``recomputed`` column to both frames: "ok" where a stored number equals what
    the metric's own code gives from the stored inputs, else what differs.

    Per score row: the spec's ``check_row`` rebuilds delta, side scores and outcome from
    the stored log-probs and priors. Per measure: the spec's ``aggregate`` recomputes the
    run's measures from its stored rows (k, n, value, interval), with what
    ``run_measures`` adds (metric panel, identity rates and rankings from the items'
    payloads). A row edited after
    scoring — a tampered shard whose manifest was recomputed — fails here.
    """
    needed = {"details", "item_benchmark", "item_axis"}
    scores, measures = scores.copy(), measures.copy()
    if spec is None or not needed <= set(scores.columns):
        # A frame without those columns (an old shard): nothing to rebuild, nothing checked.
        scores["recomputed"] = None
        measures["recomputed"] = None
        return scores, measures
    record = next(
        (t.record for t in spec.family.detail_tables if t.extends == "scores" and t.record),
        ScoreRow,
    )
    rows = [_score_row(r, record) for r in scores.to_dict("records")]
    check = spec.check_row
    scores["recomputed"] = [
        OK if check is None or not (bad := check(row)) else f"{', '.join(bad)} differ"
        for row in rows
    ]
    items = [_item(r) for r in scores.to_dict("records") if r["item_benchmark"] is not None]
    try:
        expected = {(m.benchmark, m.axis, m.measure): m for m in run_measures(spec, rows, items)}
    except (ValueError, KeyError, TypeError) as exc:
        expected = {}
        scores["recomputed"] = f"measures cannot be recomputed: {exc}"
    measures["recomputed"] = [
        _measure_matches(m, expected.get((m["benchmark"], m["axis"], m["measure"])))
        for m in measures.to_dict("records")
    ]
    return scores, measures


def _none(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def _item(r: dict[str, Any]) -> Item:
    """The stored item as the measure code reads it: ids, axis and payload (no texts), as
    its family's record (``records.family_record``)."""
    payload = r.get("item_payload")
    kind = _none(r.get("item_kind")) or LEGACY_KIND
    record = family_record(kind, "items") or Item
    return record(
        item_id=r["item_id"],
        benchmark=r["item_benchmark"],
        axis=r["item_axis"],
        region=r.get("item_region") or "",
        benchmark_version="",
        source_row=0,
        kind=kind,
        payload=json.loads(payload) if isinstance(payload, str) else {},
    )


def _score_row(r: dict[str, Any], record: type[ScoreRow]) -> ScoreRow:
    """A frame row back into the record the metric code reads (NULL/NaN → None): the
    metric's family's ``record``, with the numbers the frame holds of its fields."""
    numbers = {f.name for f in fields(record)} - {f.name for f in fields(ScoreRow)}
    return record(
        item_id=r["item_id"],
        metric=r["metric"],
        metric_version=r["metric_version"],
        outcome=_none(r["outcome"]),
        delta=_none(r["delta"]),
        **{c: _none(r[c]) for c in numbers if c in r},
        details=json.loads(r["details"]) if isinstance(r["details"], str) else {},
    )


def with_numbers(spec: MetricSpec | None, scores: pd.DataFrame) -> pd.DataFrame:
    """``scores`` with every number the metric declares (``ItemNumbers``) as a column: a
    family's declared column where the row holds it there, else the value of that name in
    the row's ``details`` (a family without a detail table keeps its numbers there)."""
    if spec is None or "details" not in scores.columns:
        return scores
    names = dict.fromkeys((*spec.numbers.required, *spec.numbers.non_positive))
    out = scores.copy()
    parsed = [json.loads(d) if isinstance(d, str) else {} for d in out["details"]]
    for name in names:
        from_details = [_number(d.get(name)) for d in parsed]
        if name not in out.columns:
            out[name] = from_details
            continue
        out[name] = [
            v if _none(v) is not None else d
            for v, d in zip(out[name].tolist(), from_details, strict=True)
        ]
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _measure_matches(stored: dict[str, Any], fresh: Measure | None) -> str:
    if fresh is None:
        return "not derivable from the run's rows"
    diffs = []
    for name in ("k", "n"):
        a, b = _none(stored[name]), getattr(fresh, name)
        if (None if a is None else int(a)) != b:
            diffs.append(f"{name} {a} ≠ {b} from the rows")
    for name in ("value", "ci_low", "ci_high"):
        a, b = _none(stored[name]), getattr(fresh, name)
        if (a is None) != (b is None) or (a is not None and abs(a - b) > TOLERANCE):
            diffs.append(f"{name} differs from the rows")
    return OK if not diffs else "; ".join(diffs)


def _with_measure_kinds(measures: pd.DataFrame) -> pd.DataFrame:
    """Frames from before measure kinds (schema < 3, old shards) hold rates only."""
    if "kind" in measures.columns and "p_value" in measures.columns:
        return measures
    out = measures.copy()
    if "kind" not in out.columns:
        out["kind"] = "rate"
    if "p_value" not in out.columns:
        out["p_value"] = None
        out["p_value_finite"] = None
    return out


def run_checks(metric: str | None) -> list[Check]:
    checks = [
        Check.not_null(column, f"the run records {column} (provenance)") for column in PROVENANCE
    ]
    checks += [
        Check.in_set(
            "metric_registered",
            [True],
            f"the metric ({metric}) is registered, so the suite knows which numbers it fills",
        ),
        Check.between(
            "n_dataset_versions", 1, None, "dataset_versions names at least one benchmark version"
        ),
        Check.in_set(
            "dataset_versions_cover_benchmarks",
            [True],
            "every benchmark of the run has its version recorded",
        ),
        Check.between(
            "n_environment_fields",
            1,
            None,
            "the environment (library versions, device) is recorded",
        ),
    ]
    return checks


def score_checks(
    spec: MetricSpec | None,
    *,
    n_scored: int | None,
    expected_item_ids: list[str] | None,
) -> list[Check]:
    checks: list[Check] = []
    if n_scored is not None:
        checks.append(
            Check(
                "ExpectTableRowCountToEqual",
                {"value": n_scored},
                "one score row per item the run says it scored (runs.n_scored)",
            )
        )
    if expected_item_ids is not None:
        if n_scored is None:
            checks.append(
                Check(
                    "ExpectTableRowCountToEqual",
                    {"value": len(expected_item_ids)},
                    "one score row per item the run was asked to score",
                )
            )
        # Membership is computed in pandas (``item_expected``; the ``expected_items``
        # frame for the other direction) and checked as a boolean: a value set of every
        # item id in the expectation's kwargs made great-expectations copy that list on
        # each of its thousands of configuration reads (37 s per 6,656-item run).
        checks.append(
            Check.in_set(
                "item_expected", [True], "no score for an item the run was not asked to score"
            )
        )
    checks += [
        Check(
            "ExpectCompoundColumnsToBeUnique",
            {"column_list": ["run_id", "item_id"]},
            "at most one score per (run_id, item_id)",
        ),
        Check.not_null("item_id", "every score names its item"),
        Check.in_set("item_known", [True], "every scored item exists in the items table"),
    ]
    if spec is None or spec.family.outcomes:
        checks += [
            Check.in_set("outcome", list(OUTCOMES), "outcome is one of " + "/".join(OUTCOMES)),
            Check.not_null("outcome", "every score has an outcome"),
        ]
    for column, run_column in (("metric", "run_metric"), ("metric_version", "run_metric_version")):
        checks += [
            Check.not_null(column, f"every score records its {column}"),
            Check(
                "ExpectColumnPairValuesToBeEqual",
                {"column_A": column, "column_B": run_column},
                f"every score's {column} equals the run's",
            ),
        ]
    for column in score_floats():
        checks.append(
            Check.in_set(
                f"{column}_finite", [True], f"{column} is finite where present (no NaN or inf)"
            )
        )
    for declared in score_columns():
        if declared.bounds is None:
            continue
        checks.append(
            Check.between(
                declared.name,
                declared.bounds.minimum,
                declared.bounds.maximum,
                f"{declared.name} {declared.bounds.says}",
            )
        )
    checks.append(
        Check.in_set(
            "recomputed",
            [OK],
            "each row's delta, side scores and outcome equal what the metric computes from "
            "the row's own stored log-probs and priors",
            when=(("recomputed", "not_null", None),),
        )
    )
    if spec is not None:
        numbers = spec.numbers
        checks += [
            Check.between(
                column,
                None,
                0,
                f"{column} is a {numbers.label} number that is a log-probability or a mean "
                "of them, so ≤ 0",
            )
            for column in numbers.non_positive
        ]
        when = (
            (("outcome", "not_in", numbers.unless_outcome_in),) if numbers.unless_outcome_in else ()
        )
        checks += [
            Check.not_null(
                column,
                f"{spec.name} ({numbers.label}) produces {column} for every item (null/NaN found)",
                when=when,
            )
            for column in numbers.required
        ]
    return checks


def measure_checks() -> list[Check]:
    """Checks on the per-run measures: what holds for every measure (finite numbers, an
    interval around its value), and what holds for its kind: a rate's count k is at most
    its total n and its value and bounds lie in [0, 1]; a p-value lies in [0, 1]."""
    rate = (("kind", "==", "rate"),)
    checks = [
        Check(
            "ExpectTableRowCountToBeBetween",
            {"min_value": 1},
            "a finished run has per-axis measures",
        ),
        Check(
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {"column_A": "n", "column_B": "k", "or_equal": True},
            "a rate's count k is at most its total n",
            when=rate,
        ),
        Check.between("k", 0, None, "counts are not negative", when=rate),
        Check.not_null("n", "a rate records how many items it counts over", when=rate),
    ]
    for column in (*MEASURE_FLOATS, "p_value"):
        checks.append(
            Check.in_set(
                f"{column}_finite", [True], f"{column} is finite where present (no NaN or inf)"
            )
        )
    checks += [
        Check.between(
            column,
            0,
            1,
            f"{column} is a rate or a rate's interval bound, so within [0, 1]",
            when=rate,
        )
        for column in MEASURE_FLOATS
    ]
    checks.append(Check.between("p_value", 0, 1, "a p-value lies within [0, 1]"))
    checks += [
        Check(
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {
                "column_A": "value",
                "column_B": "ci_low",
                "or_equal": True,
                "ignore_row_if": "either_value_is_missing",
            },
            "the interval's lower bound is at most the value (ci_low ≤ value)",
        ),
        Check(
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {
                "column_A": "ci_high",
                "column_B": "value",
                "or_equal": True,
                "ignore_row_if": "either_value_is_missing",
            },
            "the value is at most the interval's upper bound (value ≤ ci_high)",
        ),
    ]
    checks += [
        Check.not_null(
            column,
            f"a measure that has a value has {column}",
            when=(("value", "not_null", None),),
        )
        for column in ("ci_low", "ci_high")
    ]
    checks.append(
        Check.in_set(
            "recomputed",
            [OK],
            "each measure equals what the metric's aggregation gives from the run's stored rows",
            when=(("recomputed", "not_null", None),),
        )
    )
    return checks
