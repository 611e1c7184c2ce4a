"""Run declared checks through great-expectations and boil the answer down to one-liners.

Checks are plain data (``Check``) so that building a suite costs nothing and never
imports great-expectations; only ``run_suite`` does, on first use, because the library
takes seconds to import and the rest of the tool must not pay for it.

GE runs in an ephemeral, in-memory context with analytics and progress bars off: it
must not write a ``gx/`` folder into the repository, reach the network, or draw bars
over the CLI's own progress display.

A failure reason names the frame, the expectation, its columns, how many rows failed
and a few row ids. Values are shown only for columns that are not marked sensitive,
so a benchmark sentence can never leak into a log, a PR comment or the store.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

MAX_SAMPLES = 5  # row ids quoted per failed expectation
MAX_REASON_CHARS = 400

# A row condition: (column, op, value) with op one of "==", "!=", "in", "not_in", "not_null".
Condition = tuple[str, str, Any]
Conditions = tuple[Condition, ...]  # all must hold


@dataclass(frozen=True)
class Check:
    """One expectation, declared without great-expectations.

    ``expectation`` is a class name under ``great_expectations.expectations``; ``why`` is
    the plain-language rule it enforces, quoted in the failure reason; ``when`` restricts
    the check to rows meeting every condition (GE row conditions).
    """

    expectation: str
    kwargs: Mapping[str, Any]
    why: str
    when: Conditions = ()

    @classmethod
    def in_set(cls, column: str, values: Sequence[Any], why: str, when: Conditions = ()) -> Check:
        """``column`` holds one of ``values`` on every row (``when`` selects): the most
        common rule of the data suites, declared in one line."""
        return cls(
            "ExpectColumnValuesToBeInSet", {"column": column, "value_set": values}, why, when
        )

    @classmethod
    def not_null(cls, column: str, why: str, when: Conditions = ()) -> Check:
        """``column`` has a value on every row (``when`` selects)."""
        return cls("ExpectColumnValuesToNotBeNull", {"column": column}, why, when)

    @classmethod
    def between(
        cls, column: str, low: float | None, high: float | None, why: str, when: Conditions = ()
    ) -> Check:
        """``column`` lies within [``low``, ``high``] on every row (``when`` selects); a
        bound that is None is left open."""
        bounds = {k: v for k, v in (("min_value", low), ("max_value", high)) if v is not None}
        return cls("ExpectColumnValuesToBeBetween", {"column": column, **bounds}, why, when)


def item_id_checks(
    hashed: str = "the file version, the kind and the payload",
    *,
    unique: str = "item ids are unique",
    when: Conditions = (),
) -> list[Check]:
    """A benchmark suite's two rules on its items' ids (columns ``item_id`` and
    ``expected_item_id``, the id recomputed from the item's content): each is unique
    (``unique``: the rule's words) and each is the hash of ``hashed``."""
    return [
        Check("ExpectColumnValuesToBeUnique", {"column": "item_id"}, unique, when),
        Check(
            "ExpectColumnPairValuesToBeEqual",
            {"column_A": "item_id", "column_B": "expected_item_id"},
            f"the item id is the hash of {hashed}",
            when,
        ),
    ]


@dataclass(frozen=True)
class CheckedFrame:
    """A pandas frame and the checks to run on it as one GE batch."""

    name: str
    data: pd.DataFrame
    checks: Sequence[Check]
    id_columns: Sequence[str]
    sensitive_columns: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FailedExpectation:
    """One failed expectation, summarised without any sensitive value."""

    frame: str
    expectation: str  # GE expectation type, e.g. "expect_column_values_to_be_between"
    columns: tuple[str, ...]
    reason: str  # one readable line
    unexpected_count: int | None = None
    element_count: int | None = None
    sample_ids: tuple[str, ...] = ()
    observed: Any = None


@dataclass
class SuiteResult:
    """What a suite found; ``to_json`` is the document stored in ``validations.results``."""

    suite: str
    subject: str  # what was validated: a run id or a benchmark version label
    success: bool
    failures: list[FailedExpectation] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)  # every check: frame, type, ok
    elapsed_s: float = 0.0
    engine: str = ""

    @property
    def reasons(self) -> list[str]:
        return [f.reason for f in self.failures]

    def summary(self) -> str:
        """One line for a log or a run's notes."""
        if self.success:
            return f"{self.suite}: all {len(self.checks)} checks passed"
        first = self.failures[0].reason
        more = f" (+{len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
        return (
            f"{self.suite}: {len(self.failures)} of {len(self.checks)} checks failed: {first}{more}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The stored document: every field (the elapsed time rounded, each failure made
        JSON-safe) and the counts. Its writers sort the keys (``to_json``, the store's
        codec), so the order here is no format."""
        return asdict(self) | {
            "elapsed_s": round(self.elapsed_s, 4),
            "n_checks": len(self.checks),
            "n_failed": len(self.failures),
            "failures": [_json_safe(asdict(f)) for f in self.failures],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)


@functools.cache
def _gx() -> Any:
    """Import great-expectations once, quietly, with analytics off."""
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import great_expectations as gx
        import great_expectations.expectations  # registers gx.expectations
    return gx


def _context(gx: Any) -> Any:
    """In-memory stores, no data-docs site (not even a temp folder), analytics and bars off."""
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    config = DataContextConfig(
        store_backend_defaults=InMemoryStoreBackendDefaults(init_temp_docs_sites=False),
        analytics_enabled=False,
        progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
    )
    return gx.get_context(mode="ephemeral", project_config=config)


def _row_condition(conditions: Sequence[Condition]) -> Any:
    from great_expectations.expectations.row_conditions import Column

    built = []
    for column, op, value in conditions:
        col = Column(column)
        if op == "==":
            built.append(col == value)
        elif op == "!=":
            built.append(col != value)
        elif op == "in":
            built.append(col.is_in(list(value)))
        elif op == "not_in":
            built.append(col.is_not_in(list(value)))
        elif op == "not_null":
            built.append(col.is_not_null())
        else:
            raise ValueError(f"unknown row-condition operator {op!r}")
    return functools.reduce(lambda a, b: a & b, built)


def run_suite(suite: str, subject: str, frames: Sequence[CheckedFrame]) -> SuiteResult:
    """Validate every frame with its checks in one ephemeral GE context."""
    gx = _gx()
    started = time.perf_counter()
    failures: list[FailedExpectation] = []
    summary: list[dict[str, Any]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        context = _context(gx)
        source = context.data_sources.add_pandas(name="monitor")
        for frame in frames:
            asset = source.add_dataframe_asset(name=frame.name)
            definition = asset.add_batch_definition_whole_dataframe(name=frame.name)
            batch = definition.get_batch(batch_parameters={"dataframe": frame.data})
            gx_suite = gx.ExpectationSuite(name=f"{suite}/{frame.name}")
            for i, check in enumerate(frame.checks):
                kwargs = dict(check.kwargs)
                if check.when:
                    kwargs["row_condition"] = _row_condition(check.when)
                expectation_cls = getattr(gx.expectations, check.expectation)
                gx_suite.add_expectation(expectation_cls(**kwargs, meta={"check": i}))
            validation = batch.validate(
                gx_suite,
                result_format={
                    "result_format": "SUMMARY",
                    "partial_unexpected_count": MAX_SAMPLES,
                    "unexpected_index_column_names": list(frame.id_columns),
                },
            )
            # GE does not keep declaration order; restore it so reports read top-down.
            ordered = sorted(
                validation.results, key=lambda r: int(r.expectation_config.meta["check"])
            )
            for res in ordered:
                check = frame.checks[int(res.expectation_config.meta["check"])]
                ok = bool(res.success)
                columns = _columns(res.expectation_config.kwargs)
                summary.append(
                    {
                        "frame": frame.name,
                        "expectation": res.expectation_config.type,
                        "columns": list(columns),
                        "success": ok,
                    }
                )
                if not ok:
                    failures.append(_failure(frame, check, res, columns))
    return SuiteResult(
        suite=suite,
        subject=subject,
        success=not failures,
        failures=failures,
        checks=summary,
        elapsed_s=time.perf_counter() - started,
        engine=f"great_expectations {gx.__version__}",
    )


def _columns(kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    if kwargs.get("column"):
        return (kwargs["column"],)
    if kwargs.get("column_A"):
        return (kwargs["column_A"], kwargs["column_B"])
    return tuple(kwargs.get("column_list") or ())


def _failure(
    frame: CheckedFrame, check: Check, res: Any, columns: tuple[str, ...]
) -> FailedExpectation:
    etype = res.expectation_config.type
    head = f"{frame.name}: {check.why} — {etype}" + (f"({', '.join(columns)})" if columns else "")
    info = res.exception_info or {}
    if info.get("raised_exception"):
        message = str(info.get("exception_message") or "unknown error").splitlines()[0]
        return FailedExpectation(
            frame.name, etype, columns, _clip(f"{head} could not be evaluated: {message}")
        )
    result = dict(res.result or {})
    if "unexpected_count" in result:
        samples = [
            _describe_row(row, frame, columns)
            for row in (result.get("partial_unexpected_index_list") or [])[:MAX_SAMPLES]
        ]
        count, total = int(result["unexpected_count"]), result.get("element_count")
        text = f"{head}: {count} of {total} rows fail"
        if samples:
            text += "; e.g. " + "; ".join(samples)
        ids = tuple(
            _row_id(row, frame) for row in result.get("partial_unexpected_index_list") or []
        )
        return FailedExpectation(
            frame.name, etype, columns, _clip(text), count, total, ids[:MAX_SAMPLES]
        )
    if "partial_missing_list" in result:  # distinct values must contain a set
        missing = sorted(str(v) for v in result["partial_missing_list"])[:MAX_SAMPLES]
        count = int(result.get("missing_count") or len(missing))
        text = f"{head}: {count} expected value(s) absent, e.g. {', '.join(missing)}"
        return FailedExpectation(
            frame.name, etype, columns, _clip(text), count, None, tuple(missing)
        )
    observed = result.get("observed_value")
    if any(c in frame.sensitive_columns for c in columns):
        observed = None
    expected = _expected_text(res.expectation_config.kwargs)
    text = f"{head}: observed {_fmt(observed)}" + (f", expected {expected}" if expected else "")
    return FailedExpectation(frame.name, etype, columns, _clip(text), observed=_json_safe(observed))


def _expected_text(kwargs: Mapping[str, Any]) -> str:
    if "value" in kwargs:
        return str(kwargs["value"])
    lo, hi = kwargs.get("min_value"), kwargs.get("max_value")
    if lo is not None or hi is not None:
        return f"between {lo if lo is not None else '-inf'} and {hi if hi is not None else 'inf'}"
    return ""


def _row_id(row: Mapping[str, Any], frame: CheckedFrame) -> str:
    parts = [f"{c}={_fmt(row[c])}" for c in frame.id_columns if c in row and not _is_null(row[c])]
    return " ".join(parts) or "?"


def _describe_row(row: Mapping[str, Any], frame: CheckedFrame, columns: Sequence[str]) -> str:
    shown = [
        f"{c}={_fmt(row[c])}"
        for c in columns
        if c in row and c not in frame.id_columns and c not in frame.sensitive_columns
    ]
    return _row_id(row, frame) + (f" ({', '.join(shown)})" if shown else "")


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _fmt(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):  # numpy floats are floats too
        return "NaN" if math.isnan(value) else f"{float(value):.6g}"
    if isinstance(value, list | tuple) and len(value) > MAX_SAMPLES:
        return f"[{', '.join(_fmt(v) for v in value[:MAX_SAMPLES])}, … {len(value)} in all]"
    return str(value)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "…"


def _json_safe(value: Any) -> Any:
    """numpy scalars, NaN and tuples into plain JSON values (NaN is not valid JSON)."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_json_safe(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):  # numpy values
        value = value.tolist()
        if isinstance(value, list):
            return [_json_safe(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
