"""SeeGULL for chat API models: which of two identities an attribute fits, asked in the
tuple's own language (the family's ``score_api`` hook; issue 48, item 2).

Each item (S, C, a) is one question naming both identities, in both orders (``option
_order = "both"``, the default: S first, then C first, so a preference for the
first-named option cancels) or in one order drawn by a generator seeded with (seed, item
id) (``"random"``). The answer is read from the top log-probabilities exactly as the
pairs' forced choice reads a fill-in-the-blank (``monitor.metrics.forced_choice``): the
two identities are the options, matched by prefix in any script, a token that begins
both is ambiguous and never credited, the two orders' masses averaged; an order whose
text is a refusal is counted (``details.refusals``), and an item with no option mass
whose answers are mostly refusals is a ``refusal``. The refusal test is the core's
(``monitor.metrics.sampling.is_refusal``), which reads English refusals; a refusal
written in the item's language counts as ``other``.

The outcome is ``stereo`` when S gets the larger mass, so the family's measures (frame 1
rate, balanced rate, two-way clustered intervals), drift and report read these rows as
they read the local model's; there is no second frame. The questions are in
``frames.QUESTIONS``, not reviewed by a native speaker; their text is part of the run's
fingerprint. A model that gives no log-probabilities fails the run with the reason (no
sampled twin yet).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence

from monitor.backends.openai_chat import ResponseRecord
from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.families.seegull.frames import (
    CHOICE_METRIC,
    CHOICE_TEMPLATE_ID,
    CHOICE_VERSION,
    QUESTIONS,
    question,
)
from monitor.families.seegull.items import KIND
from monitor.metrics.forced_choice import Option, forced_choice_row, read_order
from monitor.metrics.sampling import is_refusal
from monitor.records import ScoreRow
from monitor.scoring.api_tasks import ApiScoring, PlannedRequest, request_key

STEREO_FIRST, ANTI_FIRST = "stereo-first", "anti-first"


def orders_for(item: Item, option_order: str, seed: int) -> tuple[str, ...]:
    """Both orders, or one drawn from a generator seeded by (seed, item id)."""
    if option_order == "both":
        return (STEREO_FIRST, ANTI_FIRST)
    rng = random.Random(f"{seed}:{item.item_id}")
    return (ANTI_FIRST if rng.random() < 0.5 else STEREO_FIRST,)


def plan_item(item: Item, *, option_order: str, samples: int, seed: int) -> list[PlannedRequest]:
    """The item's requests: each order (× each sample, for a sampling method)."""
    if item.kind != KIND:
        raise UserInputError(
            f"{CHOICE_METRIC} scores SeeGULL items; benchmark {item.benchmark} has {item.kind}"
        )
    p = item.payload
    stereo, anti = Option("stereo", str(p["identity"])), Option("anti", str(p["contrast"]))
    out = []
    for order in orders_for(item, option_order, seed):
        first, second = (stereo, anti) if order == STEREO_FIRST else (anti, stereo)
        text = question(str(p["language"]), str(p["attribute"]), first.text, second.text)
        for sample in range(max(1, samples)):
            key = request_key(item.item_id, order, sample)
            out.append(
                PlannedRequest(
                    key, item.item_id, order, sample, CHOICE_TEMPLATE_ID, text, (first, second)
                )
            )
    return out


def plan_requests(
    items: Iterable[Item], *, option_order: str, samples: int, seed: int
) -> dict[str, list[PlannedRequest]]:
    """Item id -> its planned requests, in item order."""
    return {
        it.item_id: plan_item(it, option_order=option_order, samples=samples, seed=seed)
        for it in items
    }


def score_item(
    item_id: str, planned: Sequence[PlannedRequest], records: Mapping[str, ResponseRecord]
) -> ScoreRow:
    """The item's row once every order has an answer: the core's forced-choice reading,
    under this family's metric name, the two identities' option masses in ``details``."""
    results = [
        read_order(
            p.order, records[p.key].positions, p.options, refusal=is_refusal(records[p.key].text)
        )
        for p in planned
    ]
    row = forced_choice_row(item_id, results)
    ps, pa = row.shares if row.shares is not None else (None, None)
    details = {**row.details, "prob_stereo": ps, "prob_anti": pa}
    mine = {"metric": CHOICE_METRIC, "metric_version": CHOICE_VERSION, "details": details}
    return ScoreRow(**row.core() | mine)


def score_api(metric: str) -> ApiScoring | None:
    """The family's ``score_api`` hook (None for its local metric)."""
    if metric != CHOICE_METRIC:
        return None
    return ApiScoring(
        CHOICE_METRIC,
        logprobs=True,
        fallback=None,
        templates=QUESTIONS,
        plan=plan_requests,
        score=score_item,
    )
