"""The pair family's ``measures`` hook: what a run's measures add to its metric's own
bias rates, computed from the stored rows and the items.

``registry.run_measures`` hands every pair run here with the metric spec's ``aggregate``
(a bias rate per axis, Wilson intervals); this adds

* the metric panel's rates and their agreement, for rows that carry the panel
  (``monitor.metrics.panel``);
* for identity pairs, cluster-bootstrap intervals on the identity-type bias rates,
  per-identity association rates and a Bradley–Terry ranking (``identity``);
* for rows kept only because the reproduced Indian-BhED code scores them, the rate
  without them (``cll_reference.after_exclusions_measures``).

Pure: no I/O, like ``monitor.metrics``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from monitor.benchmarks.items import Item
from monitor.families.pairs.cll_reference import after_exclusions_measures
from monitor.families.pairs.identity import identity_measures
from monitor.metrics.panel import panel_measures
from monitor.records import Measure, ScoreRow


def pair_measures(
    rows: Sequence[ScoreRow], items_by_id: Mapping[str, Item], *, aggregate: list[Measure]
) -> list[Measure]:
    """The run's measures: ``aggregate`` (the metric's own), the panel's, identity pairs'
    cluster intervals and rankings, and the rate without reference-only rows."""
    item_axis = {i: (it.benchmark, it.axis) for i, it in items_by_id.items()}
    measures = aggregate + panel_measures(rows, item_axis)
    measures = identity_measures(measures, rows, items_by_id)
    reference_rows = {i for i, it in items_by_id.items() if it.payload.get("reference_row")}
    return measures + after_exclusions_measures(rows, item_axis, reference_rows)
