"""A flagged change read across other measurements of the same items: robust, fragile or
contradicted.

A paired test on one metric can flag a change that another equally defensible metric of
the same model answers does not show: the bias rate of a causal LM depends heavily on
how a sentence is scored (``monitor.metrics.panel``). So a flagged change is read
against every other metric that scored the same items and is valid for both models, each
by its paired interval of the same change (whatever quantity the family's comparator
tests: raw today, a balanced rate once the family hands that in):

* **robust**: every other valid metric's interval lies on the same side of zero;
* **fragile**: none lies on the other side, but at least one includes zero;
* **contradicted**: at least one lies entirely on the other side (it is named);
* **not cross-checked**: no other valid metric scored the items, so nothing confirms or
  contradicts it (never claimed robust).

A metric that is not valid for one of the models (``MetricReading.valid_reason``) is
listed with its reason and does not count. Pure and generic: the family builds the
readings, this module only labels them, and ``drift --fail-on`` gates on the label
(``fails_regression_gate``, ``fails_robust_gate``) without knowing any family.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

RobustnessLabel = Literal["robust", "fragile", "contradicted", "not cross-checked"]

NOT_VALID = "not valid for this model"


@dataclass(frozen=True)
class MetricReading:
    """One metric's paired change on the items of a compared axis.

    ``delta`` and ``ci_low``/``ci_high`` are in the unit of the tested change (a
    proportion for a bias rate); None when no item was decided by this metric in both
    runs. ``own``: the metric the verdict was decided on (listed, never a cross-check of
    itself). ``invalid_reason``: why the metric is not a valid reading for one of the
    models (None when it is).
    """

    metric: str
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    own: bool = False
    invalid_reason: str | None = None

    @property
    def valid(self) -> bool:
        return self.invalid_reason is None

    def side(self) -> int | None:
        """+1 when the interval lies above zero, -1 below, 0 when it includes zero, None
        without an interval."""
        if self.delta is None or self.ci_low is None or self.ci_high is None:
            return None
        if self.ci_low > 0:
            return 1
        if self.ci_high < 0:
            return -1
        return 0


@dataclass(frozen=True)
class Robustness:
    """How the other valid metrics read a change whose sign is ``direction`` (+1 a rise,
    -1 a fall). ``against``: the metrics that make it fragile or contradicted."""

    label: RobustnessLabel
    direction: int
    readings: tuple[MetricReading, ...]
    against: tuple[str, ...] = ()

    @property
    def cross_checks(self) -> tuple[MetricReading, ...]:
        """The other metrics that count: valid, with an interval."""
        return tuple(r for r in self.readings if not r.own and r.valid and r.side() is not None)

    @property
    def own_invalid(self) -> str | None:
        """Why the verdict's own metric is not valid for a model of the pair (else None)."""
        return next((r.invalid_reason for r in self.readings if r.own and not r.valid), None)

    def words(self) -> str:
        """The label with the metrics it rests on, e.g. "fragile (cll-reference's
        interval includes zero)"."""
        if self.label == "not cross-checked":
            invalid = [r.metric for r in self.readings if not r.own and not r.valid]
            text = (
                f"not cross-checked ({', '.join(invalid)} {NOT_VALID}; no other metric read "
                "these items)"
                if invalid
                else "not cross-checked (no other metric scored these items)"
            )
        elif self.label == "robust":
            names = [r.metric for r in self.cross_checks]
            verb = "moves" if len(names) == 1 else "move"
            its = "its interval" if len(names) == 1 else "each interval"
            text = f"robust ({', '.join(names)} {verb} the same way, {its} clear of zero)"
        elif self.label == "fragile":
            whose = " and ".join(f"{m}'s" for m in self.against)
            text = f"fragile ({whose} interval includes zero)"
        else:
            verb = "moves" if len(self.against) == 1 else "move"
            text = f"contradicted ({', '.join(self.against)} {verb} the other way)"
        own = self.own_invalid
        return text if own is None else f"{text}; the verdict's own metric is {NOT_VALID}"


def read_across(direction: int, readings: Sequence[MetricReading]) -> Robustness:
    """Label a change of sign ``direction`` by the other valid metrics' intervals."""
    checks = [r for r in readings if not r.own and r.valid and r.side() is not None]
    if not checks:
        return Robustness("not cross-checked", direction, tuple(readings))
    opposite = tuple(r.metric for r in checks if r.side() == -direction)
    if opposite:
        return Robustness("contradicted", direction, tuple(readings), opposite)
    zero = tuple(r.metric for r in checks if r.side() == 0)
    if zero:
        return Robustness("fragile", direction, tuple(readings), zero)
    return Robustness("robust", direction, tuple(readings))


def robustness_of(comparison: Any) -> Robustness | None:
    """A comparison's robustness, whatever its family (None where the family reads no
    other metric: association tests, choice questions, API metrics)."""
    value = getattr(comparison, "robustness", None)
    return value if isinstance(value, Robustness) else None


def fails_regression_gate(comparison: Any) -> bool:
    """``--fail-on regression``: a flagged regression that no valid metric contradicts."""
    if comparison.verdict.label != "regression":
        return False
    r = robustness_of(comparison)
    return r is None or r.label != "contradicted"


def fails_robust_gate(comparison: Any) -> bool:
    """``--fail-on robust``: a flagged regression, on a metric valid for both models, that
    every other valid metric confirms."""
    r = robustness_of(comparison)
    return (
        comparison.verdict.label == "regression"
        and r is not None
        and r.label == "robust"
        and r.own_invalid is None
    )


def _flagged(comparison: Any) -> bool:
    return bool(comparison.verdict.flagged)


def _never(comparison: Any) -> bool:
    return False


# ``drift --fail-on``: which comparisons fail the command (exit 1), by the option's value.
FAIL_ON: dict[str, Callable[[Any], bool]] = {
    "regression": fails_regression_gate,
    "robust": fails_robust_gate,
    "any": _flagged,
    "never": _never,
}


def reading_json(r: MetricReading) -> dict[str, Any]:
    """One metric's reading for ``--format json`` and the report's JSON."""
    return {
        "metric": r.metric,
        "own": r.own,
        "valid": r.valid,
        "invalid_reason": r.invalid_reason,
        "delta": r.delta,
        "ci": [r.ci_low, r.ci_high],
        "n_paired": r.n,
    }


def robustness_json(r: Robustness | None) -> dict[str, Any] | None:
    """A comparison's ``robustness`` field: the label, the metrics against it, and every
    metric's interval and validity."""
    if r is None:
        return None
    return {
        "label": r.label,
        "words": r.words(),
        "against": list(r.against),
        "own_metric_valid": r.own_invalid is None,
        "metrics": [reading_json(m) for m in r.readings],
    }
