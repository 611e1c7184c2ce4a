"""Score choice questions with a local causal LM (``mc-loglik``): the family's
``score_local`` hook, called by the local driver (``monitor.jobs.local``) with the
arguments it gives every family's local scorer (the ``ScoreLocal`` Protocol).

Why it is its own loop rather than a planner for ``monitor.scoring.score_plans``: an item's three
options share a long prompt (context and question, ~90% of an item's tokens on
BharatBBQ), and the point of scoring them locally is to compute that prompt once. The
backend lays each forward pass out as a prefix tree (``monitor.backends.prefix_tree``),
so the three sequences of an item share their prompt's nodes when they are in the same
pass; ``score_plans`` cuts requests into length-sorted chunks that can put an item's
options into different calls. Here whole items are packed into passes:

* an item's sequences are ``BOS + prompt + option``, tokenised as lm-evaluation-harness
  does (``prompt`` and ``prompt + option`` encoded, the option's tokens are what the
  longer encoding has beyond the prompt's), so every option is conditioned on the same
  prompt tokens and the log-likelihoods can be compared with lm-eval's;
* items are ordered by their token sequences and packed greedily into passes of at most
  ``batch_size`` sequences and the backend's node budget (prefix-tree nodes, as the
  backend counts them), never splitting an item; each pack is one ``token_logprobs_tail``
  call, which the backend answers in one forward pass (``tree_batches`` cuts the same
  sorted sequences by the same budget). Items of one template share their context, and
  sorting keeps them side by side, so their context is shared too;
* only the options' log-probs are asked for (``TailLogprobs``), so a local backend
  projects onto the vocabulary only the positions they are read from, not the prompt's;
* the packs depend only on the benchmark's own items, so a benchmark scored alone, with
  others, or resumed after a kill gets the same forward passes and the same bits (the
  reproducibility rule of ``monitor.scoring.score``); a resumed run skips packs whose
  items are all stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Unpack

from monitor.backends.base import CausalLM, TailLogprobs
from monitor.backends.hf_causal import DEFAULT_BATCH_SIZE, TREE_MAX_TOKENS
from monitor.backends.prefix_tree import common_prefix
from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.families.choice_qa.loglik import (
    MC_LOGLIK,
    continuations,
    mc_loglik_row,
    prompt_text,
)
from monitor.records import ScoreRow
from monitor.scoring.score import Finished, by_benchmark

if TYPE_CHECKING:
    from monitor.contract.capabilities import LocalOptions

Sequence_ = tuple[int, ...]


@dataclass(frozen=True)
class OptionSequences:
    """One item's requests: ``BOS + prompt + option`` per option, and how many tokens at
    the end of each are the option's (the ones whose log-probs are summed)."""

    item: Item
    sequences: tuple[Sequence_, ...]
    n_option_tokens: tuple[int, ...]

    def nodes(self) -> int:
        """Prefix-tree nodes of the item alone: the shared part once, each option's tail."""
        ordered = sorted(self.sequences)
        return len(ordered[0]) + sum(len(b) - common_prefix(a, b) for a, b in pairwise(ordered))

    def row(self, answers: Sequence[Sequence[float]]) -> ScoreRow:
        lls = [
            float(sum(float(x) for x in values[len(values) - n :])) if n else 0.0
            for values, n in zip(answers, self.n_option_tokens, strict=True)
        ]
        return mc_loglik_row(self.item.item_id, self.item.payload, lls, self.n_option_tokens)


class OptionPlanner:
    """Turns an item into its option sequences with the backend's tokenizer."""

    def __init__(self, backend: CausalLM) -> None:
        bos = backend.bos_token_id
        if bos is None:
            raise UserInputError(
                f"model {backend.name} has no BOS or EOS token; {MC_LOGLIK} conditions every "
                "prompt on one"
            )
        self.backend, self.bos = backend, bos

    def plan(self, item: Item) -> OptionSequences:
        if item.kind != "choice-question":
            raise UserInputError(
                f"{MC_LOGLIK} scores choice questions; benchmark {item.benchmark} has "
                f"{item.kind!r} items"
            )
        prompt = prompt_text(item.payload)
        context = self.backend.encode(prompt, add_special_tokens=False)
        seqs, counts = [], []
        for cont in continuations(item.payload):
            whole = self.backend.encode(prompt + cont, add_special_tokens=False)
            option = whole[len(context) :]  # lm-eval's _encode_pair
            seqs.append((self.bos, *context, *option))
            counts.append(len(option))
        return OptionSequences(item, tuple(seqs), tuple(counts))


def item_passes(
    plans: Sequence[OptionSequences], max_sequences: int, max_nodes: int
) -> list[list[OptionSequences]]:
    """Whole items packed into forward passes, in token order (see the module docstring).

    A pass holds at least one item; one whose own tree exceeds ``max_nodes`` is a pass
    alone (and the backend splits it by its budget).
    """
    ordered = sorted(plans, key=lambda p: min(p.sequences))
    packs: list[list[OptionSequences]] = []
    current: list[OptionSequences] = []
    nodes = n_seqs = 0
    for plan in ordered:
        first = min(plan.sequences)
        shared = common_prefix(max(current[-1].sequences), first) if current else 0
        new = plan.nodes() - shared
        if current and (n_seqs + len(plan.sequences) > max_sequences or nodes + new > max_nodes):
            packs.append(current)
            current, nodes, n_seqs, new = [], 0, 0, plan.nodes()
        current.append(plan)
        nodes += new
        n_seqs += len(plan.sequences)
    if current:
        packs.append(current)
    return packs


def option_logprobs(
    backend: CausalLM, pack: Sequence[OptionSequences], batch_size: int
) -> list[Sequence[float]]:
    """Per sequence of ``pack`` (in order), log-probs ending with its option's tokens.

    Only an option's tokens are read, so a backend that can (``TailLogprobs``) computes
    just those: on the tree path its LM head then runs at the options' positions, not
    at the shared prompt's (~90% of an item's). Others compute every log-prob; ``row``
    reads the last ones either way.
    """
    seqs = [s for p in pack for s in p.sequences]
    if isinstance(backend, TailLogprobs):
        tails = [n for p in pack for n in p.n_option_tokens]
        return backend.token_logprobs_tail(seqs, tails, batch_size=batch_size)
    return backend.token_logprobs(seqs, batch_size=batch_size)


def score_local(
    backend: CausalLM, items: list[Item], metric: str, **options: Unpack[LocalOptions]
) -> list[ScoreRow]:
    """Score every item not in ``already_scored``; rows in item order.

    ``options`` are the contract's (``LocalOptions``); ``panel`` and ``panel_metrics``
    are not read: the metric panel is the pair family's. ``batch_size``: sequences per
    forward pass (three per item), the backend's by default.
    """
    if metric != MC_LOGLIK:
        raise UserInputError(f"the choice-qa family scores local models with {MC_LOGLIK}")
    planner = OptionPlanner(backend)
    batch_size = options.get("batch_size")
    already_scored = options.get("already_scored", frozenset())
    max_sequences = max(3, batch_size or getattr(backend, "batch_size", DEFAULT_BATCH_SIZE))
    max_nodes = getattr(backend, "max_batch_tokens", None) or TREE_MAX_TOKENS
    finished = Finished(options.get("on_batch"), options.get("progress"))
    for group in by_benchmark(items):
        plans = [planner.plan(it) for it in group]  # stored or not: packs must not vary
        for pack in item_passes(plans, max_sequences, max_nodes):
            pending = [p for p in pack if p.item.item_id not in already_scored]
            if not pending:
                continue
            seqs = [s for p in pack for s in p.sequences]
            values = option_logprobs(backend, pack, len(seqs))
            answers = {s: v for s, v in zip(seqs, values, strict=True)}
            finished.add([p.row([answers[s] for s in p.sequences]) for p in pending])
    return finished.in_order(items)
