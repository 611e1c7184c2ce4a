"""The results suite: the gate every run passes before it is marked complete.

A run that fails is kept but quarantined, so it is never used as a drift baseline.
Which numbers must be present depends on the metric family, because a NULL is
legitimate where a metric does not produce a number and a defect where it does:

- log-likelihood (``cll*``, ``ull*``): sentence log-probs ``lp_*`` and ``delta``
- pseudo-log-likelihood (``aul*``): ``score_*`` (mean token log-prob) and ``delta``
- forced choice (``forced*``, ``fc*``, ``*choice*``): ``prob_*`` whenever the model chose

Wherever a number is present it must be finite and in range, whatever the family.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, get_args

from monitor.quality.inputs import (
    MEASURE_FLOATS,
    SCORE_FLOATS,
    read_axis_measures,
    read_run,
    read_scores,
)
from monitor.quality.suites import Check, CheckedFrame, SuiteResult, run_suite
from monitor.records import Outcome

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

SUITE = "results"
OUTCOMES: tuple[str, ...] = get_args(Outcome)
NO_CHOICE = ("refusal", "other")  # forced-choice outcomes that carry no option probabilities

LOG_LIKELIHOOD, PSEUDO_LOG_LIKELIHOOD, FORCED_CHOICE = (
    "log_likelihood",
    "pseudo_log_likelihood",
    "forced_choice",
)
REQUIRED_BY_FAMILY: dict[str, tuple[str, ...]] = {
    LOG_LIKELIHOOD: ("lp_stereo", "lp_anti", "delta"),
    PSEUDO_LOG_LIKELIHOOD: ("score_stereo", "score_anti", "delta"),
    FORCED_CHOICE: ("prob_stereo", "prob_anti"),
}
LOG_PROBS = ("lp_stereo", "lp_anti", "prior_stereo", "prior_anti")
PROBS = ("prob_stereo", "prob_anti")
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


def metric_family(metric: str | None) -> str | None:
    """Which numbers a metric produces; None for a metric this suite does not know."""
    name = (metric or "").lower()
    if name.startswith(("cll", "ull")):
        return LOG_LIKELIHOOD
    if name.startswith("aul"):
        return PSEUDO_LOG_LIKELIHOOD
    if name.startswith(("forced", "fc")) or "choice" in name:
        return FORCED_CHOICE
    return None


def validate_run(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    *,
    expected_item_ids: Iterable[str] | None = None,
) -> SuiteResult:
    """Validate what the store holds for ``run_id``.

    ``expected_item_ids``: the items the runner meant to score; when given, the stored
    scores must cover exactly those ids.
    """
    return validate_run_frames(
        read_run(con, run_id),
        read_scores(con, run_id),
        read_axis_measures(con, run_id),
        expected_item_ids=expected_item_ids,
    )


def validate_run_frames(
    run: pd.DataFrame,
    scores: pd.DataFrame,
    measures: pd.DataFrame,
    *,
    expected_item_ids: Iterable[str] | None = None,
) -> SuiteResult:
    """The same suite on frames shaped like ``monitor.quality.inputs`` returns them.

    Kept separate so that a shard read from Parquet (where nothing enforces the
    (run_id, item_id) key) can be checked before it is merged into the store.
    """
    import pandas as pd

    run = run.copy()
    metric = str(run["metric"].iloc[0]) if len(run) else None
    family = metric_family(metric)
    run["metric_family"] = family or f"unknown:{metric}"
    raw_n_scored = run["n_scored"].iloc[0] if len(run) else None
    n_scored = None if pd.isna(raw_n_scored) else int(raw_n_scored)  # NULL: run not finished
    expected = sorted(set(expected_item_ids)) if expected_item_ids is not None else None
    frames = [
        CheckedFrame("run", run, run_checks(), ("run_id",)),
        CheckedFrame(
            "scores",
            scores,
            score_checks(family, n_scored=n_scored, expected_item_ids=expected),
            ("item_id",),
        ),
        CheckedFrame("axis_measures", measures, measure_checks(), ("benchmark", "axis", "measure")),
    ]
    subject = str(run["run_id"].iloc[0]) if len(run) else "?"
    return run_suite(SUITE, subject, frames)


def run_checks() -> list[Check]:
    checks = [
        Check(
            "ExpectColumnValuesToNotBeNull",
            {"column": column},
            f"the run records {column} (provenance)",
        )
        for column in PROVENANCE
    ]
    checks += [
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "metric_family", "value_set": sorted(REQUIRED_BY_FAMILY)},
            "the metric belongs to a family whose numbers this suite knows how to check",
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "n_dataset_versions", "min_value": 1},
            "dataset_versions names at least one benchmark version",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "dataset_versions_cover_benchmarks", "value_set": [True]},
            "every benchmark of the run has its version recorded",
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "n_environment_fields", "min_value": 1},
            "the environment (library versions, device) is recorded",
        ),
    ]
    return checks


def score_checks(
    family: str | None,
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
        checks += [
            Check(
                "ExpectColumnDistinctValuesToContainSet",
                {"column": "item_id", "value_set": expected_item_ids},
                "every item the run was asked to score has a score",
            ),
            Check(
                "ExpectColumnValuesToBeInSet",
                {"column": "item_id", "value_set": expected_item_ids},
                "no score for an item the run was not asked to score",
            ),
        ]
    checks += [
        Check(
            "ExpectCompoundColumnsToBeUnique",
            {"column_list": ["run_id", "item_id"]},
            "at most one score per (run_id, item_id)",
        ),
        Check(
            "ExpectColumnValuesToNotBeNull",
            {"column": "item_id"},
            "every score names its item",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "item_known", "value_set": [True]},
            "every scored item exists in the items table",
        ),
        Check(
            "ExpectColumnValuesToBeInSet",
            {"column": "outcome", "value_set": list(OUTCOMES)},
            "outcome is one of " + "/".join(OUTCOMES),
        ),
        Check(
            "ExpectColumnValuesToNotBeNull",
            {"column": "outcome"},
            "every score has an outcome",
        ),
    ]
    for column, run_column in (("metric", "run_metric"), ("metric_version", "run_metric_version")):
        checks += [
            Check(
                "ExpectColumnValuesToNotBeNull",
                {"column": column},
                f"every score records its {column}",
            ),
            Check(
                "ExpectColumnPairValuesToBeEqual",
                {"column_A": column, "column_B": run_column},
                f"every score's {column} equals the run's",
            ),
        ]
    for column in SCORE_FLOATS:
        checks.append(
            Check(
                "ExpectColumnValuesToBeInSet",
                {"column": f"{column}_finite", "value_set": [True]},
                f"{column} is finite where present (no NaN or inf)",
            )
        )
    for column in LOG_PROBS:
        checks.append(
            Check(
                "ExpectColumnValuesToBeBetween",
                {"column": column, "max_value": 0},
                f"{column} is a log-probability, so ≤ 0",
            )
        )
    for column in PROBS:
        checks.append(
            Check(
                "ExpectColumnValuesToBeBetween",
                {"column": column, "min_value": 0, "max_value": 1},
                f"{column} is a probability, so within [0, 1]",
            )
        )
    for column in ("n_tokens_stereo", "n_tokens_anti"):
        checks.append(
            Check(
                "ExpectColumnValuesToBeBetween",
                {"column": column, "min_value": 1},
                f"{column} counts at least one scored token where present",
            )
        )
    if family == PSEUDO_LOG_LIKELIHOOD:
        checks += [
            Check(
                "ExpectColumnValuesToBeBetween",
                {"column": column, "max_value": 0},
                f"{column} is a mean token log-probability (AUL), so ≤ 0",
            )
            for column in ("score_stereo", "score_anti")
        ]
    when = (("outcome", "not_in", NO_CHOICE),) if family == FORCED_CHOICE else ()
    for column in REQUIRED_BY_FAMILY.get(family or "", ()):
        checks.append(
            Check(
                "ExpectColumnValuesToNotBeNull",
                {"column": column},
                f"{family} metrics produce {column} for every item (null/NaN found)",
                when=when,
            )
        )
    return checks


def measure_checks() -> list[Check]:
    checks = [
        Check(
            "ExpectTableRowCountToBeBetween",
            {"min_value": 1},
            "a finished run has per-axis rates",
        ),
        Check(
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {"column_A": "n", "column_B": "k", "or_equal": True},
            "a rate's count k is at most its total n",
        ),
        Check(
            "ExpectColumnValuesToBeBetween",
            {"column": "k", "min_value": 0},
            "counts are not negative",
        ),
    ]
    for column in MEASURE_FLOATS:
        checks += [
            Check(
                "ExpectColumnValuesToBeInSet",
                {"column": f"{column}_finite", "value_set": [True]},
                f"{column} is finite where present (no NaN or inf)",
            ),
            Check(
                "ExpectColumnValuesToBeBetween",
                {"column": column, "min_value": 0, "max_value": 1},
                f"{column} is a rate or a rate's interval bound, so within [0, 1]",
            ),
        ]
    checks += [
        Check(
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {
                "column_A": "value",
                "column_B": "ci_low",
                "or_equal": True,
                "ignore_row_if": "either_value_is_missing",
            },
            "the interval's lower bound is at most the rate (ci_low ≤ value)",
        ),
        Check(
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {
                "column_A": "ci_high",
                "column_B": "value",
                "or_equal": True,
                "ignore_row_if": "either_value_is_missing",
            },
            "the rate is at most the interval's upper bound (value ≤ ci_high)",
        ),
    ]
    checks += [
        Check(
            "ExpectColumnValuesToNotBeNull",
            {"column": column},
            f"a rate that has a value has {column}",
            when=(("value", "not_null", None),),
        )
        for column in ("ci_low", "ci_high")
    ]
    return checks
