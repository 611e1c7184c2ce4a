"""The pair family's records: a sentence pair and its score, beside the core's generic ones.

The core ``Item`` and ``ScoreRow`` hold what every family has (an item's identity, kind
and payload; a score's outcome, delta and details). A sentence pair has more: its two
filled sentences, their target words, the source cells as they were; its score the two
sides' log-probabilities, priors and token counts. Those fields live here, and the
store keeps them in the family's own detail tables (``details.py``: the columns are
these fields, by name), so no other family's record carries them and no core module
names them.

The pair's id (``make_item_id``) hashes its two normalised sentences, so the same pair
in two runs has the same id and an edited pair (an erratum) gets a new one.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from monitor.benchmarks.items import BenchmarkVersion, Item, make_content_id, normalise_text
from monitor.metrics.forced_choice import ChoiceScore
from monitor.records import ScoreRow


def make_item_id(benchmark_version: str, stereo: str, anti: str) -> str:
    """Stable id: sha256 over a benchmark namespace and the normalised pair, 16 hex chars.

    The loader passes ``benchmark@commit:sha256`` *without* the errata version, so an
    erratum changes the ids of exactly the rows it edits and every other item still pairs
    across runs made before and after an errata release.
    """
    payload = json.dumps(
        [benchmark_version, normalise_text(stereo), normalise_text(anti)],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def content_pair_id(benchmark_version: str, kind: str, payload: Any, stereo: str, anti: str) -> str:
    """Id of a sentence pair that carries a payload (an identity pair of the taxonomy, a
    source row kept only for ``cll-reference``): :func:`make_content_id` over the payload
    and the normalised pair, so the same sentences in another role get another id."""
    body = {"payload": payload, "texts": [normalise_text(stereo), normalise_text(anti)]}
    return make_content_id(benchmark_version, kind, body)


@dataclass(frozen=True)
class PairItem(Item):
    """A stereotype / anti-stereotype sentence pair.

    ``text_stereo``/``text_anti`` are the filled sentences (after errata), None for a
    pair-family item scored otherwise (a judged generation keeps its prompt in
    ``payload``). ``template`` (core) and the ``raw_*_cell`` fields keep the source row as
    it was, which the ``reference`` CLL variant needs to reproduce the original paper
    code's own filling. ``direction``: CrowS-Pairs' stereo_antistereo; "stereo" for
    Indian-BhED.
    """

    kind: str = "pair"
    text_stereo: str | None = None
    text_anti: str | None = None
    targets_stereo: tuple[str, ...] = ()
    targets_anti: tuple[str, ...] = ()
    raw_stereo_cell: str | None = None
    raw_anti_cell: str | None = None
    direction: str = "stereo"

    def texts(self) -> tuple[str, ...]:
        """The two sentences a model reads (those present)."""
        return tuple(t for t in (self.text_stereo, self.text_anti) if t)


def file_pair(
    version: BenchmarkVersion,
    row: int,
    texts: tuple[str | None, str | None],
    *,
    item_id: str,
    **fields: Any,
) -> PairItem:
    """Row ``row`` of ``version``'s file as a pair item with ``texts`` (stereotypical,
    anti-stereotypical) and ``item_id``; ``fields``: what the format says besides (axis,
    region, targets, ...). Every loader of the family files its pairs here."""
    return PairItem(
        item_id=item_id,
        benchmark=version.benchmark,
        benchmark_version=version.label,
        source_row=row,
        text_stereo=texts[0],
        text_anti=texts[1],
        **fields,
    )


def payload_pair(
    namespace: str,
    version: BenchmarkVersion,
    row: int,
    kind: str,
    payload: dict[str, Any],
    texts: tuple[str, str | None],
    **fields: Any,
) -> PairItem:
    """Row ``row``'s pair of ``kind`` that carries a ``payload``, its id from its content
    in ``namespace`` (``content_pair_id`` over kind, payload and texts; a missing second
    text counts as empty)."""
    text_s, text_a = texts
    item_id = content_pair_id(namespace, kind, payload, text_s, text_a or "")
    return file_pair(version, row, texts, item_id=item_id, kind=kind, payload=payload, **fields)


def expected_item_id(item: Item, benchmark_version: str) -> str | None:
    """The id the loader must have given ``item`` (what the benchmark suite checks):
    a plain pair hashes its texts, a pair with a payload the payload too."""
    if not isinstance(item, PairItem) or item.text_stereo is None or item.text_anti is None:
        return None
    if item.payload:
        return content_pair_id(
            benchmark_version, item.kind, item.payload, item.text_stereo, item.text_anti
        )
    return make_item_id(benchmark_version, item.text_stereo, item.text_anti)


@dataclass(frozen=True)
class PairScoreRow(ScoreRow):
    """A pair's score: ``delta`` > 0 means the stereotypical sentence was preferred. The
    component numbers are kept so that any printed rate can be traced back to per-item
    log-probabilities."""

    score_stereo: float | None = None
    score_anti: float | None = None
    lp_stereo: float | None = None  # sentence log-prob (nats)
    lp_anti: float | None = None
    prior_stereo: float | None = None  # target-word prior log-prob (CLL only)
    prior_anti: float | None = None
    prob_stereo: float | None = None  # probability mass (forced-choice API metrics)
    prob_anti: float | None = None
    n_tokens_stereo: int | None = None
    n_tokens_anti: int | None = None


def from_choice(row: ChoiceScore) -> PairScoreRow:
    """A chat-answered pair's row (forced or sampled choice) as the pair's record: the
    stereotype's and the anti-stereotype's shares of the answers in ``prob_stereo`` /
    ``prob_anti`` (None with no choice)."""
    ps, pa = row.shares if row.shares is not None else (None, None)
    return PairScoreRow(**row.core(), prob_stereo=ps, prob_anti=pa)  # type: ignore[arg-type]
