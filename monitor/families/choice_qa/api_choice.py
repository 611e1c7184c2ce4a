"""The choice-QA family's ``score_api`` hook: how the chat API driver (``monitor.jobs.api``)
plans and reads ``mc-letter`` / ``mc-letter-sampled`` requests.

The driver keeps everything a paid, flaky service needs (budget, start-of-run probe for
log-probabilities with the fallback to sampling, stored answers, resume, retries, model
watch); this module only says what to ask and how to read the answer. Each item becomes
one request per letter rotation (and per sample for the sampled variant), keyed
``<item_id>/rotation-<r>/<sample>``; the options stored with a request list the letters
A, B, C in order, each with the index of the option it showed (``side``), so the prompts
a server received can be checked against the item.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.backends.openai_chat import ResponseRecord
from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.families.choice_qa.letters import (
    LETTERS,
    MC_LETTER,
    MC_LETTER_SAMPLED,
    TEMPLATE_ID,
    TEMPLATES,
    letter_row,
    parse_letter,
    prompt_for,
    read_rotation,
    rotation,
    rotation_name,
    sampled_row,
)
from monitor.metrics.forced_choice import Option
from monitor.records import ScoreRow
from monitor.scoring.api_tasks import ApiScoring, PlannedRequest, request_key

ITEM_KIND = "choice-question"
# What reading an answer needs of the item; kept with each planned request.
_FACTS = ("options", "unknown", "target", "label")


@dataclass(frozen=True)
class RotationRequest(PlannedRequest):
    """A planned request of one letter rotation: ``shown[j]`` is the option index under
    letter j; ``facts`` the item's options, unknown, target and label."""

    rotation: int = 0
    shown: tuple[int, ...] = ()
    facts: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)


def rotations_for(item: Item, option_order: str, seed: int) -> tuple[int, ...]:
    """All three rotations (the default, ``option_order = "both"``: counterbalanced), or
    one drawn from a generator seeded by (seed, item id) for ``"random"``."""
    if option_order == "both":
        return (0, 1, 2)
    return (random.Random(f"{seed}:{item.item_id}").randrange(3),)


def plan_item(item: Item, *, option_order: str, samples: int, seed: int) -> list[RotationRequest]:
    """The requests of one choice question: each rotation x each sample."""
    if item.kind != ITEM_KIND:
        raise UserInputError(
            f"{MC_LETTER} scores {ITEM_KIND} items (BBQ, BharatBBQ); benchmark "
            f"{item.benchmark} has {item.kind} items"
        )
    facts = {k: item.payload.get(k) for k in _FACTS}
    out = []
    for r in rotations_for(item, option_order, seed):
        shown = rotation(r)
        prompt = prompt_for(item.payload, shown)
        options = tuple(Option(str(i), LETTERS[j], "label") for j, i in enumerate(shown))  # type: ignore[arg-type]
        for sample in range(max(1, samples)):
            out.append(
                RotationRequest(
                    key=request_key(item.item_id, rotation_name(r), sample),
                    item_id=item.item_id,
                    order=rotation_name(r),
                    sample=sample,
                    template_id=TEMPLATE_ID,
                    prompt=prompt,
                    options=options,  # type: ignore[arg-type]
                    rotation=r,
                    shown=shown,
                    facts=facts,
                )
            )
    return out


def plan_requests(
    items: Iterable[Item], *, option_order: str, samples: int, seed: int
) -> dict[str, list[PlannedRequest]]:
    """Item id -> its planned requests, in item order."""
    return {
        it.item_id: list(plan_item(it, option_order=option_order, samples=samples, seed=seed))
        for it in items
    }


def _rotations(planned: Sequence[PlannedRequest]) -> list[RotationRequest]:
    out = [p for p in planned if isinstance(p, RotationRequest)]
    if len(out) != len(planned) or not out:
        raise ValueError("choice-QA answers must come from rotation requests")
    return out


def score_letters(
    item_id: str, planned: Sequence[PlannedRequest], records: Mapping[str, ResponseRecord]
) -> ScoreRow:
    """``mc-letter``: letter masses of every rotation, averaged per option."""
    reqs = _rotations(planned)
    reads = [
        read_rotation(p.rotation, p.shown, records[p.key].positions, records[p.key].text)
        for p in reqs
    ]
    return letter_row(item_id, reqs[0].facts, reads)


def score_sampled(
    item_id: str, planned: Sequence[PlannedRequest], records: Mapping[str, ResponseRecord]
) -> ScoreRow:
    """``mc-letter-sampled``: every sampled answer parsed, majority vote."""
    reqs = _rotations(planned)
    answers = [
        (p.rotation, p.shown, parse_letter(records[p.key].text, p.shown, p.facts["options"]))
        for p in reqs
    ]
    return sampled_row(item_id, reqs[0].facts, answers)


def api_scoring(metric: str) -> ApiScoring | None:
    """The family's ``score_api`` hook: how the chat API driver asks for ``metric``."""
    if metric == MC_LETTER:
        return ApiScoring(
            MC_LETTER, True, MC_LETTER_SAMPLED, TEMPLATES, plan_requests, score_letters
        )
    if metric == MC_LETTER_SAMPLED:
        return ApiScoring(MC_LETTER_SAMPLED, False, None, TEMPLATES, plan_requests, score_sampled)
    return None
