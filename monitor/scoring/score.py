"""Score items with one metric: plan requests, deduplicate, ask the backend, finish rows.

Items are processed in chunks. Each chunk is one bulk backend call (the backend sorts
and batches it), and its finished rows go to ``on_batch`` at once, so a caller that
stores them there loses at most one chunk if the process is killed. Answers are kept
across chunks, so a request seen in an earlier chunk (a target prior, a repeated
sentence) is never computed again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from monitor.benchmarks.items import Item
from monitor.records import ScoreRow
from monitor.scoring.requests import ItemPlan, Request, make_planner

DEFAULT_CHUNK_ITEMS = 64


@dataclass
class ScoringStats:
    """How much deduplication saved: requests planned vs. requests sent to the backend."""

    items: int = 0
    requests_planned: int = 0
    requests_sent: int = 0
    backend_calls: int = 0


def _chunks(items: Sequence[Item], size: int) -> Iterator[Sequence[Item]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _ask(backend, requests: list[Request], batch_size: int | None) -> list[np.ndarray]:
    if requests and isinstance(requests[0], str):
        return backend.unmasked_token_logprobs(requests, batch_size=batch_size)
    return backend.token_logprobs(requests, batch_size=batch_size)


def score_items(
    backend,
    items: list[Item],
    metric: str,
    *,
    batch_size: int | None = None,
    progress: Callable[[int], None] | None = None,
    already_scored: Collection[str] = frozenset(),
    on_batch: Callable[[list[ScoreRow]], None] | None = None,
    chunk_items: int = DEFAULT_CHUNK_ITEMS,
    stats: ScoringStats | None = None,
) -> list[ScoreRow]:
    """Score every item not in ``already_scored`` under ``metric``; rows in item order.

    ``progress(n)`` is called after each chunk with the number of items it finished;
    ``on_batch(rows)`` with that chunk's rows, before the next chunk starts.
    """
    planner = make_planner(metric, backend)
    todo = [it for it in items if it.item_id not in already_scored]
    stats = stats if stats is not None else ScoringStats()
    answers: dict[Request, np.ndarray] = {}
    rows: list[ScoreRow] = []
    for chunk in _chunks(todo, max(1, chunk_items)):
        plans: list[ItemPlan] = [planner.plan(it) for it in chunk]
        new: dict[Request, None] = {}
        for plan in plans:
            for req in plan.requests:
                if req not in answers:
                    new[req] = None
        if new:
            wanted = list(new)
            answers.update(zip(wanted, _ask(backend, wanted, batch_size), strict=True))
            stats.backend_calls += 1
        chunk_rows = [plan.finish([answers[r] for r in plan.requests]) for plan in plans]
        stats.items += len(chunk)
        stats.requests_planned += sum(len(p.requests) for p in plans)
        stats.requests_sent += len(new)
        if on_batch is not None:
            on_batch(chunk_rows)
        if progress is not None:
            progress(len(chunk))
        rows.extend(chunk_rows)
    return rows
