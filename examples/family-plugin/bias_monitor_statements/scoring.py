"""Score statements with a local causal LM: log-likelihood of " True" and " False".

What a backend must offer is the core's ``CausalLM`` (token ids, per-token
log-probabilities of given sequences): the log-likelihood of a continuation is the sum
of its tokens' log-probs after ``BOS + prompt``, tokenised as lm-evaluation-harness does
(``prompt`` and ``prompt + continuation`` encoded; the continuation's tokens are what the
longer encoding has beyond the prompt's), so both continuations are conditioned on the
same prompt tokens.

Reproducible whatever is already stored: the passes are fixed chunks of the
benchmark's own items in file order (two sequences per item), so a resumed run, or one
scored beside other benchmarks, computes the same forward passes and the same bits; a
chunk whose items are all stored is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

from bias_monitor_statements.frame import (
    CONTINUATIONS,
    METRIC,
    Answer,
    prompt,
    statement_row,
)
from bias_monitor_statements.items import KIND
from monitor.backends.base import CausalLM, TailLogprobs
from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.records import ScoreRow
from monitor.scoring.score import Finished

if TYPE_CHECKING:
    from monitor.contract.capabilities import LocalOptions

DEFAULT_ITEMS_PER_PASS = 16


def sequences(backend: CausalLM, bos: int, item: Item) -> tuple[list[tuple[int, ...]], list[int]]:
    """The item's two sequences (``BOS + prompt + continuation``) and how many tokens at
    the end of each are the continuation's."""
    if item.kind != KIND:
        raise UserInputError(
            f"{METRIC} scores statements; {item.benchmark} has {item.kind!r} items"
        )
    text = prompt(str(item.payload["text"]))
    context = backend.encode(text, add_special_tokens=False)
    seqs, tails = [], []
    for cont in CONTINUATIONS:
        whole = backend.encode(text + cont, add_special_tokens=False)
        tail = whole[len(context) :]
        seqs.append((bos, *context, *tail))
        tails.append(len(tail))
    return seqs, tails


def _logprobs(backend: CausalLM, seqs: Sequence[tuple[int, ...]], tails: Sequence[int]) -> list:
    if isinstance(backend, TailLogprobs):
        return backend.token_logprobs_tail(seqs, tails, batch_size=len(seqs))
    return backend.token_logprobs(seqs, batch_size=len(seqs))


def score_local(
    backend: object, items: list[Item], metric: str, **options: Unpack[LocalOptions]
) -> list[ScoreRow]:
    """Every item not in ``already_scored``, in item order; ``batch_size`` counts
    sequences per forward pass (two per item). ``options`` are the contract's
    (``LocalOptions``); its metric panel (``panel``, ``panel_metrics``) is another
    family's and not read here."""
    if not isinstance(backend, CausalLM):
        raise UserInputError(f"{METRIC} needs a causal LM's log-probabilities")
    if metric != METRIC:
        raise UserInputError(f"this family scores local causal models with {METRIC}")
    bos = backend.bos_token_id
    if bos is None:
        raise UserInputError(f"model {backend.name} has no BOS token; {METRIC} needs one")
    already_scored = options.get("already_scored", frozenset())
    per_pass = max(1, (options.get("batch_size") or 2 * DEFAULT_ITEMS_PER_PASS) // 2)
    finished = Finished(options.get("on_batch"), options.get("progress"))
    for start in range(0, len(items), per_pass):
        chunk = items[start : start + per_pass]
        if all(it.item_id in already_scored for it in chunk):
            continue
        planned = [sequences(backend, bos, it) for it in chunk]
        seqs = [s for ss, _ in planned for s in ss]
        tails = [t for _, ts in planned for t in ts]
        values = _logprobs(backend, seqs, tails)
        rows = []
        for i, (it, (_, (n_true, n_false))) in enumerate(zip(chunk, planned, strict=True)):
            if it.item_id in already_scored:
                continue
            v_true, v_false = values[2 * i], values[2 * i + 1]
            answer = Answer(
                ll_true=float(sum(float(x) for x in v_true[len(v_true) - n_true :])),
                ll_false=float(sum(float(x) for x in v_false[len(v_false) - n_false :])),
            )
            rows.append(statement_row(it.item_id, it.payload["stance"], answer, (n_true, n_false)))
        finished.add(rows)
    return finished.in_order(items)
