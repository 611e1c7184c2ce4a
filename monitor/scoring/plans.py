"""What a scoring plan is: an item's requests and how their answers become its row.

A planner (a family's, e.g. the sentence pairs') turns an item into
an ``ItemPlan``: the requests it asks a backend (token-id tuples for causal LMs, texts
for masked LMs) and a ``finish`` that turns the answers, in the same order, into a
``ScoreRow`` through the family's pure metric functions. Requests are plain hashable
values so that ``monitor.scoring.score.score_plans`` can deduplicate them across items:
a target word's prior is computed once per benchmark, not once per item that uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from monitor.benchmarks.items import Item
from monitor.records import ScoreRow

Request = tuple[int, ...] | str
Answers = Sequence[np.ndarray]


@dataclass(frozen=True)
class ItemPlan:
    item_id: str
    requests: tuple[Request, ...]
    finish: Callable[[Answers], ScoreRow]


class Planner(Protocol):
    """Anything that plans an item's requests (``score_plans`` asks for nothing else)."""

    def plan(self, item: Item) -> ItemPlan: ...
