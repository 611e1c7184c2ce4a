"""``mc-loglik`` (the choice-qa family's local scoring) against a plain transformers pass.

Items are built from real rows of BharatBBQ's Caste examples (never printed); SmolLM2 is
the real model. Each option's log-likelihood must equal what one unshared forward pass of
``BOS + prompt + option`` gives, within 1e-4 nats; an item's three options must be
answered in one forward pass; the outcome and details must follow from the numbers.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
import torch
from _models import smollm2, tiny_causal

from monitor.benchmarks.items import Item
from monitor.families.choice_qa.loglik import (
    continuations,
    mc_loglik_row,
    option_role,
    prompt_text,
)
from monitor.families.choice_qa.scoring import OptionPlanner, item_passes, score_local

TOLERANCE = 1e-4


def caste_items(shared_datasets: Path, n: int) -> list[Item]:
    """The first ``n`` rows of BharatBBQ's Caste examples as choice questions (the spec's
    payload; the file's Label/Target are 1-based option numbers)."""
    path = shared_datasets / "bharatbbq" / "Examples" / "Caste_examples.csv"
    items = []
    with path.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            if i == n:
                break
            options = [row["Option1"], row["Option2"], row["Option3"]]
            # The unknown option is the one that names nobody in the context.
            unknown = next(k for k, o in enumerate(options) if o not in row["Context"])
            payload = {
                "source": "bharatbbq",
                "category": "Caste",
                "template": row["Qid"],
                "context": row["Context"],
                "question": row["Question"],
                "options": options,
                "unknown": unknown,
                "label": int(row["Label"]) - 1,
                "target": int(row["Target"]) - 1,
                "polarity": "neg" if row["Question_polarity"] == "neg" else "nonneg",
                "context_condition": "ambig" if row["Context_type"] == "amb" else "disambig",
                "source_id": row["id"],
                "proper_noun": row["Proper_Noun"] == "1",
                "language": "en",
            }
            items.append(
                Item(
                    item_id=f"caste-{i}",
                    benchmark="bharatbbq-caste",
                    axis="caste",
                    region="india",
                    benchmark_version="test",
                    source_row=i,
                    template=row["Qid"],
                    kind="choice-question",
                    payload=payload,
                )
            )
    return items


@torch.inference_mode()
def plain_option_lls(backend, item: Item) -> list[float]:
    """Each option's log-likelihood from its own forward pass (no tree, no batch), fp64."""
    tok, model = backend.tokenizer, backend.model
    prompt = prompt_text(item.payload)
    context = tok.encode(prompt, add_special_tokens=False)
    out = []
    for cont in continuations(item.payload):
        option = tok.encode(prompt + cont, add_special_tokens=False)[len(context) :]
        ids = torch.tensor([[backend.bos_token_id, *context, *option]])
        logprobs = torch.log_softmax(model(input_ids=ids).logits[0].double(), dim=-1)
        start = 1 + len(context)
        out.append(
            sum(float(logprobs[p - 1, ids[0, p]]) for p in range(start, start + len(option)))
        )
    return out


def test_option_logliks_match_a_plain_forward_pass(shared_datasets: Path) -> None:
    backend = smollm2()
    items = caste_items(shared_datasets, 4)
    passes_before = backend.stats.forward_passes
    rows = score_local(backend, items, "mc-loglik", batch_size=6)  # two items a pass
    assert backend.stats.forward_passes - passes_before == 2
    assert [r.item_id for r in rows] == [it.item_id for it in items]
    for item, row in zip(items[:2], rows[:2], strict=True):
        plain = plain_option_lls(backend, item)
        ll = row.details["ll"]
        assert max(abs(a - b) for a, b in zip(ll, plain, strict=True)) < TOLERANCE
    for item, row in zip(items, rows, strict=True):
        p, ll = item.payload, row.details["ll"]
        assert all(v < 0 for v in ll) and len(set(ll)) == 3
        choice = max(range(3), key=ll.__getitem__)
        assert row.details["choice"] == choice
        assert row.outcome == option_role(p, choice)
        assert row.details["correct"] == (choice == p["label"])
        norm = [v / len(o) for v, o in zip(ll, p["options"], strict=True)]
        assert row.details["ll_norm"] == pytest.approx(norm)
        assert row.details["choice_norm"] == max(range(3), key=norm.__getitem__)


def test_an_items_options_are_never_split_across_passes(shared_datasets: Path) -> None:
    planner = OptionPlanner(tiny_causal())  # only the tokenizer is used
    plans = [planner.plan(it) for it in caste_items(shared_datasets, 12)]
    for max_sequences, max_nodes in ((3, 512), (7, 512), (16, 120), (48, 10_000)):
        packs = item_passes(plans, max_sequences, max_nodes)
        assert sorted(p.item.item_id for pack in packs for p in pack) == sorted(
            p.item.item_id for p in plans
        )
        for pack in packs:
            assert len(pack) == 1 or sum(len(p.sequences) for p in pack) <= max_sequences


def test_roles_and_ties() -> None:
    payload = {"options": ["a", "bb", "unknown"], "unknown": 2, "target": 0, "label": 2}
    row = mc_loglik_row("x", payload, [-3.0, -3.0, -30.0], [1, 1, 1])
    assert row.details["choice"] == 0 and row.outcome == "target"  # a tie: the first
    assert row.details["choice_norm"] == 1 and row.details["role_norm"] == "non-target"
    assert row.details["correct"] is False
    assert option_role({**payload, "target": None}, 0) == "non-target"
    assert option_role(payload, 2) == "unknown"
    assert math.isclose(row.details["ll_norm"][2], -30.0 / 7)
