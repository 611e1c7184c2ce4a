"""How the pair family is scored: its ``score_local`` and ``score_api`` hooks.

Local models: the family's request planners (``planners``: ``cll``, ``cll-reference``,
``ull``, ``aul``), with the metric panel (``panel_planner``: ``cll`` and ``ull``, and
``cll-reference`` when asked, in one pass), through the scoring room's loop
(``monitor.scoring.score.score_plans``: deduplicated requests in fixed, length-sorted
chunks). Chat APIs: forced choice from top
log-probs or sampled answers (``api_plans``, whose ``score_api`` is the family's hook).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Unpack

from monitor.benchmarks.items import Item
from monitor.families.pairs.panel_planner import make_panel_planner
from monitor.families.pairs.planners import make_planner
from monitor.records import ScoreRow
from monitor.scoring.score import ScoringStats, score_plans

if TYPE_CHECKING:
    from monitor.contract.capabilities import LocalOptions


def score_items(
    backend: Any,
    items: list[Item],
    metric: str,
    *,
    chunk_requests: int | None = None,
    stats: ScoringStats | None = None,
    **options: Unpack[LocalOptions],
) -> list[ScoreRow]:
    """The family's ``score_local`` hook: every item not in ``already_scored`` scored under
    ``metric``, rows in item order (``options``: the contract's ``LocalOptions``).

    With ``panel`` (the default) a causal-logprob metric is scored together with the
    default panel (``cll`` and ``ull``) and ``panel_metrics`` (``run --metrics``, e.g.
    ``cll-reference``) in one pass (``panel_planner``); ``panel=False`` scores the metric
    alone.
    """
    planner = (
        make_panel_planner(metric, backend, options.get("panel_metrics", ()))
        if options.get("panel", True)
        else make_planner(metric, backend)
    )
    return score_plans(
        backend, items, planner, chunk_requests=chunk_requests, stats=stats, **options
    )
