"""Score items with a family's planner: plan requests, deduplicate, ask the backend,
finish rows (the families' planners, e.g. the sentence pairs').

Why the work is cut the way it is:

* **Scores must not depend on what else is in the run.** A float32 forward pass gives
  slightly different bits for the same sentence in a differently shaped batch. So the
  batches a sentence lands in are a function of its own benchmark file alone: every item
  of a benchmark is planned (also items already stored), the benchmark's unique requests
  are sorted by length and cut into fixed chunks, and each chunk is one backend call.
  Running a benchmark alone, together with others, or resumed after a kill therefore
  gives bit-identical scores (same model, device, dtype and batch size).
* **Nothing is computed twice.** Identical requests (a target word's prior, a repeated
  sentence) are asked once per benchmark. Shared *prefixes* are the backend's business
  (the local causal backend lays each forward pass out as a prefix tree); the
  length-sorted chunks already keep a pair's two sentences, whose lengths differ by a
  token or two, in one call: on the four Indian-BhED axes they keep 90% of the sharing a
  single tree per benchmark would find, and a pair-aware order gained 1% more.
* **A kill loses little.** Chunks run shortest first, so the short target priors come
  first and items then finish as the chunks holding their sentences complete; finished
  rows go to ``on_batch`` after each chunk. A resumed run skips every chunk that no
  unstored item needs and recomputes the others exactly as before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Unpack

import numpy as np

from monitor.backends.base import HasScoringOptions
from monitor.benchmarks.items import Item
from monitor.records import ScoreRow
from monitor.scoring.plans import ItemPlan, Planner, Request

if TYPE_CHECKING:
    from monitor.contract.capabilities import LocalOptions

# Unique requests per backend call. About 64 items' worth for CLL on Indian-BhED.
DEFAULT_CHUNK_REQUESTS = 128


@dataclass
class ScoringStats:
    """How much deduplication saved: requests planned vs. requests sent to the backend."""

    items: int = 0
    requests_planned: int = 0
    requests_sent: int = 0
    backend_calls: int = 0


def requests_per_call(backend) -> int:
    """Unique requests per backend call: the backend's own ``requests_per_call`` where it
    sets one (a GPU's loader does, so that one call holds several passes to overlap),
    else ``DEFAULT_CHUNK_REQUESTS``. Part of what fixes the chunks, so it is recorded."""
    value = getattr(backend, "requests_per_call", None)
    return value if isinstance(value, int) and value > 0 else DEFAULT_CHUNK_REQUESTS


def scoring_provenance(backend, chunk_requests: int | None = None) -> dict:
    """What decides the float operations behind this run's scores beyond model, device and
    dtype, for the run's environment (``environment["scoring"]``): how requests are cut
    into backend calls, and the backend's own choices (prefix sharing, batch size, ...)
    where it has any. Two runs that differ here may differ in the last bits of a score."""
    options = backend.scoring_options() if isinstance(backend, HasScoringOptions) else {}
    return {"chunk_requests": chunk_requests or requests_per_call(backend), **options}


def _ask(backend, requests: list[Request], batch_size: int | None) -> list[np.ndarray]:
    if requests and isinstance(requests[0], str):
        return backend.unmasked_token_logprobs(requests, batch_size=batch_size)
    return backend.token_logprobs(requests, batch_size=batch_size)


def fixed_chunks(requests: list[Request], size: int) -> list[list[Request]]:
    """Unique requests cut into chunks, shortest first; depends only on ``requests``.

    The sort is stable over first-seen order, so the same item list always gives the same
    chunks whatever is already stored.
    """
    ordered = sorted(requests, key=len)
    size = max(1, size)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def by_benchmark(items: Sequence[Item]) -> list[list[Item]]:
    """The items of each benchmark, in item order: a local scorer cuts its passes from
    one benchmark's items alone, so its scores do not depend on what else is in the run."""
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(it.benchmark, []).append(it)
    return list(groups.values())


@dataclass
class Finished:
    """The rows a local scorer has finished, each batch handed on as it finishes
    (``on_batch`` stores it, ``progress`` counts it: the contract's ``ScoreLocal``), and
    given back in item order at the end."""

    on_batch: Callable[[list[ScoreRow]], None] | None = None
    progress: Callable[[int], None] | None = None
    done: dict[str, ScoreRow] = field(default_factory=dict)

    def add(self, rows: list[ScoreRow]) -> None:
        """One finished batch (nothing is handed on for an empty one)."""
        if not rows:
            return
        for r in rows:
            self.done[r.item_id] = r
        if self.on_batch is not None:
            self.on_batch(rows)
        if self.progress is not None:
            self.progress(len(rows))

    def in_order(self, items: Sequence[Item]) -> list[ScoreRow]:
        """The finished rows of ``items``, in their order."""
        return [self.done[it.item_id] for it in items if it.item_id in self.done]


def score_plans(
    backend,
    items: list[Item],
    planner: Planner,
    *,
    chunk_requests: int | None = None,
    stats: ScoringStats | None = None,
    **options: Unpack[LocalOptions],
) -> list[ScoreRow]:
    """Score every item not in ``options["already_scored"]`` through ``planner``'s plans;
    rows in item order.

    ``options`` are the local driver's (``LocalOptions``): each finished batch goes to
    ``on_batch`` and ``progress`` before the next backend call; the metric panel is the
    planner's, so ``panel`` and ``panel_metrics`` are not read here.
    """
    chunk_requests = chunk_requests or requests_per_call(backend)
    stats = stats if stats is not None else ScoringStats()
    finished = Finished(options.get("on_batch"), options.get("progress"))
    for group in by_benchmark(items):
        _score_benchmark(
            backend,
            planner,
            group,
            batch_size=options.get("batch_size"),
            already_scored=options.get("already_scored", frozenset()),
            chunk_requests=chunk_requests,
            stats=stats,
            emit=finished.add,
        )
    return finished.in_order(items)


def _score_benchmark(
    backend,
    planner,
    items: list[Item],
    *,
    batch_size: int | None,
    already_scored: Collection[str],
    chunk_requests: int,
    stats: ScoringStats,
    emit: Callable[[list[ScoreRow]], None],
) -> None:
    # Plan every item, stored or not: the chunks must not depend on what is stored.
    plans: list[ItemPlan] = [planner.plan(it) for it in items]
    unique = list(dict.fromkeys(r for p in plans for r in p.requests))
    pending = [p for p in plans if p.item_id not in already_scored]
    if not pending:
        return
    missing: dict[int, set[Request]] = {}
    waiting: dict[Request, list[int]] = defaultdict(list)
    for k, plan in enumerate(pending):
        missing[k] = set(plan.requests)
        for r in missing[k]:
            waiting[r].append(k)
    stats.items += len(pending)
    stats.requests_planned += sum(len(p.requests) for p in pending)

    answers: dict[Request, np.ndarray] = {}

    def finish(ready: list[int]) -> None:
        ready.sort()  # item order within one emission
        emit([pending[k].finish([answers[r] for r in pending[k].requests]) for k in ready])

    finish([k for k, m in missing.items() if not m])  # plans with nothing to ask
    for chunk in fixed_chunks(unique, chunk_requests):
        if not any(r in waiting for r in chunk):
            continue  # only stored items need it
        answers.update(zip(chunk, _ask(backend, chunk, batch_size), strict=True))
        stats.backend_calls += 1
        stats.requests_sent += len(chunk)
        ready: list[int] = []
        for r in chunk:
            for k in waiting.pop(r, ()):
                missing[k].discard(r)
                if not missing[k]:
                    ready.append(k)
        finish(ready)
