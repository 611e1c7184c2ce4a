"""The pair family's ``measures`` hook: what a run's measures add to its metric's own
bias rates, computed from the stored rows and the items.

``registry.run_measures`` hands every pair run here with the metric spec's ``aggregate``
(a bias rate per axis, Wilson intervals); this adds

* the metric panel's rates and their agreement, for rows that carry the panel
  (``monitor.metrics.panel``);
* for identity pairs, cluster-bootstrap intervals on the identity-type bias rates,
  per-identity association rates and a Bradley–Terry ranking (``identity``);
* for rows kept only because the reproduced Indian-BhED code scores them, the rate
  without them (``cll_reference.after_exclusions_measures``);
* on each sentence-pair axis, the balanced rate (``balanced``) in the bias rate's
  ``details["balanced"]``: the stereotype-win rate at no group-name preference, the
  per-direction rates and the name preference; where the stereotypes name one group
  only, ``details["balanced_note"]`` says why there is none.

Pure: no I/O, like ``monitor.metrics``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from monitor.benchmarks.items import Item
from monitor.families.pairs.balanced import NOT_SEPARABLE, balanced_rate, directions
from monitor.families.pairs.cll_reference import after_exclusions_measures
from monitor.families.pairs.identity import identity_measures
from monitor.metrics.intervals import BIAS_RATE, axis_of
from monitor.metrics.panel import panel_measures
from monitor.records import Measure, ScoreRow


def pair_measures(
    rows: Sequence[ScoreRow], items_by_id: Mapping[str, Item], *, aggregate: list[Measure]
) -> list[Measure]:
    """The run's measures: ``aggregate`` (the metric's own), the panel's, identity pairs'
    cluster intervals and rankings, and the rate without reference-only rows."""
    item_axis = {i: (it.benchmark, it.axis) for i, it in items_by_id.items()}
    measures = with_balanced(aggregate, rows, items_by_id) + panel_measures(rows, item_axis)
    measures = identity_measures(measures, rows, items_by_id)
    reference_rows = {i for i, it in items_by_id.items() if it.payload.get("reference_row")}
    return measures + after_exclusions_measures(rows, item_axis, reference_rows)


def with_balanced(
    measures: list[Measure], rows: Sequence[ScoreRow], items_by_id: Mapping[str, Item]
) -> list[Measure]:
    """``measures`` with each sentence-pair axis's bias rate carrying its balanced rate
    (``details["balanced"]``, ``BalancedRate.as_json``) or, where the axis's stereotypes
    name fewer than two groups with enough items, the reason there is none
    (``details["balanced_note"]``). Other kinds of item (identity pairs have their own
    rankings) and other measures pass through."""
    pairs = {i: it for i, it in items_by_id.items() if it.kind == "pair"}
    item_axis = {i: (it.benchmark, it.axis) for i, it in pairs.items()}
    outcomes: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        if row.item_id in pairs:
            outcomes.setdefault(axis_of(row, item_axis), {})[row.item_id] = row.outcome
    if not outcomes:
        return measures
    direction = directions(pairs.values())
    templates = {i: it.template for i, it in pairs.items() if it.template}
    out = []
    for m in measures:
        axis_outcomes = outcomes.get((m.benchmark, m.axis))
        if m.measure != BIAS_RATE or axis_outcomes is None:
            out.append(m)
            continue
        balanced = balanced_rate(axis_outcomes, direction, templates, m.confidence)
        extra = (
            {"balanced": balanced.as_json()}
            if balanced is not None
            else {"balanced_note": NOT_SEPARABLE}
        )
        out.append(replace(m, details={**m.details, **extra}))
    return out
