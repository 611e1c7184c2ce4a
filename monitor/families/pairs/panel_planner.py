"""The metric panel's planner: one scoring pass answers the run's metric and its panel.

The panel is ``cll`` and ``ull`` by default, ``cll-reference`` too when asked
(``monitor.metrics.panel.panel_of``). Wraps the pair planners of ``planners``
(unchanged): an item's plan asks for the union of what the panel's metrics need, in
order, deduplicated before anything is computed, and its ``finish`` hands each metric its
own answers. ``ull``'s requests are ``cll``'s two sentences, so the default panel asks
for exactly ``cll``'s requests, in the same order: the same chunks, the same forward
passes and the same bits as ``cll`` alone, with ``ull`` read off the same logits.
``cll-reference``'s no-BOS sequences share nothing with them (for a tokenizer that adds
BOS itself they would), which is why it is opt-in. The run's metric decides the row; the
others go into ``details["panel"]`` (outcome, delta, version), which
``monitor.metrics.panel`` aggregates. A panel metric the model cannot be scored with
(``cll`` and ``ull`` need a BOS or EOS token) is recorded as unavailable, never guessed.

Kept apart from ``planners`` on purpose: ``scoring.score_items`` only picks
:func:`make_panel_planner` instead of ``make_planner``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from monitor.backends.base import CausalLM
from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.families.pairs.planners import make_planner
from monitor.metrics.panel import PANEL_KEY, panel_of
from monitor.metrics.registry import get_metric
from monitor.records import ScoreRow
from monitor.scoring.plans import Answers, ItemPlan


def _entry(row: ScoreRow) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "version": row.metric_version,
        "outcome": row.outcome,
        "delta": row.delta,
    }
    if "error" in row.details:
        entry["error"] = row.details["error"]
    return entry


@dataclass
class PanelPlanner:
    """Plans ``primary`` and the other panel metrics together (see the module docstring)."""

    primary: str
    planners: Mapping[str, Any]  # metric -> planner, the primary first
    unavailable: Mapping[str, str]  # metric -> why it cannot be scored with this model

    def plan(self, item: Item) -> ItemPlan:
        plans = {m: p.plan(item) for m, p in self.planners.items()}
        requests = tuple(dict.fromkeys(r for p in plans.values() for r in p.requests))
        index = {r: i for i, r in enumerate(requests)}

        def finish(answers: Answers) -> ScoreRow:
            rows = {m: p.finish([answers[index[r]] for r in p.requests]) for m, p in plans.items()}
            panel = {m: _entry(r) for m, r in rows.items() if m != self.primary}
            panel.update({m: {"error": why} for m, why in self.unavailable.items()})
            own = rows[self.primary]
            return replace(own, details={**own.details, PANEL_KEY: panel})

        return ItemPlan(item.item_id, requests, finish)


def make_panel_planner(metric: str, backend, extra: Iterable[str] = ()):
    """The planner for ``metric``; for a causal-logprob metric on a causal LM, the panel:
    ``metric``, the default panel and ``extra`` (``run --metrics``) in one pass."""
    base = make_planner(metric, backend)
    if get_metric(metric).requests != "causal-logprobs" or not isinstance(backend, CausalLM):
        return base
    planners: dict[str, Any] = {metric: base}
    unavailable: dict[str, str] = {}
    for other in panel_of(metric, extra):
        if other == metric:
            continue
        try:
            planners[other] = make_planner(other, backend)
        except UserInputError as exc:
            unavailable[other] = str(exc)
    return PanelPlanner(metric, planners, unavailable)
