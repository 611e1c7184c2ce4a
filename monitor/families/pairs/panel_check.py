"""The pair family's cross-check of a change: the same axis read by the metric panel.

Every causal-LM run scores ``cll`` and ``ull`` from the same model answers, and
``cll-reference`` where the run asked for it (``monitor.metrics.panel``), so each compared
axis can be tested again under the panel's other metrics on the same items.
:class:`PanelCheck` builds, per axis, each panel metric's paired change with its interval
and its validity for both models (``validity``), and hands them to
``monitor.drift.robustness`` for the label.

The quantity is pluggable: ``change`` is whatever change the comparator tests, applied
to one metric's outcomes of the axis in both runs (``AxisOutcomes`` with that metric's
outcomes, the axis's templates kept). :func:`raw_change` is the raw bias rate's paired
change with the comparator's cluster-widened interval; a comparator that tests another
quantity (a balanced rate) passes its own function, with anything else it needs bound
in (``functools.partial``), and the robustness label follows it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from monitor.drift.clusters import design_effect, widen
from monitor.drift.robustness import MetricReading, Robustness, read_across
from monitor.drift.stats import count_flips, paired_difference
from monitor.families.pairs.validity import pair_invalid_reason, tokenizer_of
from monitor.metrics.panel import PANEL_METRICS
from monitor.readmodel.models import AxisKey, AxisOutcomes, StoredRun


@dataclass(frozen=True)
class Change:
    """One metric's paired change on an axis: the estimate, its interval (None without a
    decided item in both runs) and the paired n."""

    delta: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


ChangeOf = Callable[[AxisOutcomes, AxisOutcomes, float], Change]


def raw_change(old: AxisOutcomes, new: AxisOutcomes, confidence: float) -> Change:
    """The raw bias rate's paired change (Newcombe), widened by the design effect where
    items share a template, as the comparator's own interval is."""
    flips = count_flips(old.outcomes, new.outcomes)
    paired = paired_difference(flips.both_stereo, flips.b, flips.c, flips.both_anti, confidence)
    if paired.delta is None or paired.ci_low is None or paired.ci_high is None:
        return Change(None, None, None, flips.n_paired)
    decided = ("stereo", "anti")
    per_item = {
        i: 0 for i, o in old.outcomes.items() if o in decided and new.outcomes.get(i) in decided
    }
    per_item.update({i: -1 for i in flips.to_anti})
    per_item.update({i: 1 for i in flips.to_stereo})
    clusters = design_effect(per_item, {**old.templates, **new.templates})
    low, high = paired.ci_low, paired.ci_high
    if clusters.design_effect > 1:
        low, high = widen(paired.delta, low, high, clusters.design_effect)
    return Change(paired.delta, low, high, flips.n_paired)


@dataclass
class PanelCheck:
    """What one compared pair of runs needs to cross-check each of its axes."""

    own_metric: str
    panel_old: Mapping[AxisKey, Mapping[str, Mapping[str, str]]]
    panel_new: Mapping[AxisKey, Mapping[str, Mapping[str, str]]]
    models: Mapping[str, Mapping[str, Any]]  # model name → its recorded tokenizer facts
    confidence: float
    change: ChangeOf = raw_change
    _invalid: dict[tuple[str, str], str | None] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        view: Any,
        new: StoredRun,
        old: StoredRun,
        *,
        confidence: float,
        change: ChangeOf = raw_change,
    ) -> PanelCheck:
        """The check of ``new`` against ``old``: their panel outcomes and tokenizer facts,
        read from the store (``view.panel_outcomes``, the runs' environments)."""
        names = (new.snapshot_id, old.snapshot_id)
        models = {new.snapshot_id: tokenizer_of(new.fields)}
        if names[1] != names[0]:
            models[old.snapshot_id] = tokenizer_of(old.fields)
        return cls(
            own_metric=new.metric,
            panel_old=view.panel_outcomes(old.run_id),
            panel_new=view.panel_outcomes(new.run_id),
            models=models,
            confidence=confidence,
            change=change,
        )

    def invalid(self, metric: str, benchmark: str) -> str | None:
        key = (metric, benchmark)
        if key not in self._invalid:
            self._invalid[key] = pair_invalid_reason(metric, benchmark, self.models)
        return self._invalid[key]

    def readings(self, key: AxisKey, old: AxisOutcomes, new: AxisOutcomes) -> list[MetricReading]:
        """The verdict's own metric first, then every other panel metric both runs scored
        on this axis, each with its paired change and validity."""
        own = self.change(old, new, self.confidence)
        out = [self._reading(self.own_metric, own, key[0], own_metric=True)]
        p_old, p_new = self.panel_old.get(key, {}), self.panel_new.get(key, {})
        for metric in PANEL_METRICS:
            if metric == self.own_metric or metric not in p_old or metric not in p_new:
                continue
            change = self.change(
                replace(old, outcomes=dict(p_old[metric]), deltas={}),
                replace(new, outcomes=dict(p_new[metric]), deltas={}),
                self.confidence,
            )
            out.append(self._reading(metric, change, key[0]))
        return out

    def _reading(
        self, metric: str, change: Change, benchmark: str, *, own_metric: bool = False
    ) -> MetricReading:
        return MetricReading(
            metric=metric,
            delta=change.delta,
            ci_low=change.ci_low,
            ci_high=change.ci_high,
            n=change.n,
            own=own_metric,
            invalid_reason=self.invalid(metric, benchmark),
        )

    def robustness(self, key: AxisKey, old: AxisOutcomes, new: AxisOutcomes) -> Robustness | None:
        """The axis's change read across the panel; None when it has no direction (no
        paired item, or no change at all)."""
        readings = self.readings(key, old, new)
        delta = readings[0].delta
        if not delta:
            return None
        return read_across(1 if delta > 0 else -1, readings)
