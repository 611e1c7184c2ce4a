"""How the pair family is scored: its ``score_local`` and ``score_api`` hooks.

The scoring code itself still lives in the scoring room, where the monitor began with
it: local models through the request planners and the metric panel
(``monitor.scoring.score.score_items``), chat APIs through forced choice from top
log-probs or sampled answers (``monitor.scoring.api_tasks``). These hooks make the
drivers ask the pair family as they ask every family, instead of treating it as the
default; the code moves here with the planners.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from monitor.benchmarks.items import Item
from monitor.records import ScoreRow
from monitor.scoring.api_tasks import ApiScoring, pair_api_scoring
from monitor.scoring.score import score_items


def score_local(
    backend: Any,
    items: list[Item],
    metric: str,
    *,
    progress: Callable[[int], None] | None = None,
    already_scored: Collection[str] = frozenset(),
    on_batch: Callable[[list[ScoreRow]], None] | None = None,
    **options: Any,
) -> list[ScoreRow]:
    """Every item not in ``already_scored`` scored with ``metric`` (and the metric panel
    where the backend is a causal LM and ``panel`` is on); the local driver's call."""
    return score_items(
        backend,
        items,
        metric,
        progress=progress,
        already_scored=already_scored,
        on_batch=on_batch,
        **options,
    )


def score_api(metric: str) -> ApiScoring | None:
    """Forced choice (``forced-choice``, from top log-probs, falling back to sampling) or
    sampled answers (``sampled-choice``); None for the family's local-only metrics."""
    return pair_api_scoring(metric)
