"""Score SeeGULL items with a local causal LM: the attribute's log-likelihood after a
frame naming the stereotyped identity S and after the same frame naming the contrast C.

Four sequences per item (two frames × two identities), each ``BOS + prompt +
continuation``; the continuation's tokens are what the encoding of ``prompt +
continuation`` has beyond the prompt's, as lm-evaluation-harness tokenises a
loglikelihood request. Items share sequences (one stereotype has several contrasts, an
identity several attributes), so each chunk scores its distinct sequences once.

Reproducible whatever is already stored: the passes are fixed chunks of the benchmark's
own items in file order, so a resumed run, or one scored beside other benchmarks,
computes the same forward passes and the same bits; a chunk whose items are all stored is
skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

from monitor.backends.base import CausalLM, TailLogprobs
from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.families.seegull.frames import METRIC, METRIC_VERSION, continuation, outcome, prompt
from monitor.families.seegull.items import KIND
from monitor.records import ScoreRow

if TYPE_CHECKING:
    from monitor.contract.capabilities import LocalOptions

DEFAULT_ITEMS_PER_PASS = 16
Seq = tuple[tuple[int, ...], int]  # token ids, continuation length


def _sequence(backend: CausalLM, bos: int, text: str, cont: str) -> Seq:
    context = backend.encode(text, add_special_tokens=False)
    whole = backend.encode(text + cont, add_special_tokens=False)
    tail = whole[len(context) :]
    return (bos, *context, *tail), len(tail)


def item_sequences(backend: CausalLM, bos: int, item: Item) -> list[Seq]:
    """Frame 1 naming S, naming C; frame 2 naming S, naming C."""
    if item.kind != KIND:
        raise UserInputError(f"{METRIC} scores SeeGULL items; {item.benchmark} has {item.kind!r}")
    p = item.payload
    lang, cont = str(p["language"]), continuation(str(p["attribute"]))
    return [
        _sequence(backend, bos, prompt(lang, frame, str(p[who])), cont)
        for frame in (0, 1)
        for who in ("identity", "contrast")
    ]


def _logprobs(backend: CausalLM, seqs: Sequence[tuple[int, ...]], tails: Sequence[int]) -> list:
    if isinstance(backend, TailLogprobs):
        return backend.token_logprobs_tail(seqs, tails, batch_size=len(seqs))
    return backend.token_logprobs(seqs, batch_size=len(seqs))


def item_row(item_id: str, lls: Sequence[float], n_tokens: Sequence[int]) -> ScoreRow:
    """One item's stored row: frame 1 is the outcome and ``delta``; its numbers (S's and
    C's log-likelihoods, nats, and continuation token counts) and frame 2 in ``details``
    (the family keeps its numbers there, not in another family's columns)."""
    s1, c1, s2, c2 = lls
    return ScoreRow(
        item_id=item_id,
        metric=METRIC,
        metric_version=METRIC_VERSION,
        outcome=outcome(s1, c1),
        delta=s1 - c1,
        details={
            "lp_stereo": s1,
            "lp_anti": c1,
            "n_tokens_stereo": n_tokens[0],
            "n_tokens_anti": n_tokens[1],
            "frame2_outcome": outcome(s2, c2),
            "frame2_delta": s2 - c2,
            "frame2_lp_stereo": s2,
            "frame2_lp_anti": c2,
        },
    )


def score_local(
    backend: object, items: list[Item], metric: str, **options: Unpack[LocalOptions]
) -> list[ScoreRow]:
    """Every item not in ``already_scored``, in item order. ``options`` are the contract's
    (``LocalOptions``): ``batch_size`` counts sequences per forward pass (four per item);
    ``panel`` and ``panel_metrics`` (another family's metric panel) are not read."""
    batch_size = options.get("batch_size")
    progress = options.get("progress")
    already_scored = options.get("already_scored", frozenset())
    on_batch = options.get("on_batch")
    if not isinstance(backend, CausalLM):
        raise UserInputError(f"{METRIC} needs a causal LM's log-probabilities")
    if metric != METRIC:
        raise UserInputError(f"this family scores local causal models with {METRIC}")
    bos = backend.bos_token_id
    if bos is None:
        raise UserInputError(f"model {backend.name} has no BOS token; {METRIC} needs one")
    per_pass = max(1, (batch_size or 4 * DEFAULT_ITEMS_PER_PASS) // 4)
    done: dict[str, ScoreRow] = {}
    for start in range(0, len(items), per_pass):
        chunk = items[start : start + per_pass]
        if all(it.item_id in already_scored for it in chunk):
            continue
        planned = [item_sequences(backend, bos, it) for it in chunk]
        distinct = list(dict.fromkeys(s for seqs in planned for s in seqs))
        values = _logprobs(backend, [s for s, _ in distinct], [t for _, t in distinct])
        ll = {
            s: float(sum(float(x) for x in v[len(v) - s[1] :]))
            for s, v in zip(distinct, values, strict=True)
        }
        rows = [
            item_row(it.item_id, [ll[s] for s in seqs], [s[1] for s in seqs])
            for it, seqs in zip(chunk, planned, strict=True)
            if it.item_id not in already_scored
        ]
        for r in rows:
            done[r.item_id] = r
        if on_batch is not None:
            on_batch(rows)
        if progress is not None:
            progress(len(rows))
    return [done[it.item_id] for it in items if it.item_id in done]
