"""What each pair metric asks a local model for (the "solver" half of a scoring task).

A plan (``monitor.scoring.plans.ItemPlan``) lists an item's requests (token-id tuples for
causal LMs, texts for masked LMs) and a ``finish`` that turns the answers, in the same
order, into a ``ScoreRow`` through the pure metric functions (``monitor.families.pairs.cll``,
``cll_reference``, ``aul``). Requests are plain hashable values so that the scoring loop
(``monitor.scoring.score.score_plans``) can deduplicate them across items: a target
word's prior is computed once per benchmark, not once per item that uses it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from monitor.backends.base import CausalLM, MaskedLM
from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.families.pairs import cll, cll_reference
from monitor.families.pairs.aul import AUL, aul_row
from monitor.metrics.registry import get_metric
from monitor.records import ScoreRow
from monitor.scoring.plans import Answers, ItemPlan


def _lp_sum(values: np.ndarray) -> float:
    return float(np.sum(values, dtype=np.float64))


class CLLPlanner:
    """``cll`` and ``ull``: BOS + text for sentences, BOS + target for priors, the target in
    the form it takes in the sentence (``cll.prior_forms``)."""

    def __init__(self, backend: CausalLM, metric: str) -> None:
        bos = backend.bos_token_id
        if bos is None:
            raise UserInputError(
                f"model {backend.name} has no BOS or EOS token; metric {metric!r} conditions "
                "every sentence on one (use cll-reference)"
            )
        self.backend, self.bos, self.with_priors = backend, bos, metric == cll.CLL

    def _seq(self, text: str) -> tuple[int, ...]:
        return (self.bos, *self.backend.encode(text, add_special_tokens=False))

    def plan(self, item: Item) -> ItemPlan:
        sentences = (self._seq(item.text_stereo), self._seq(item.text_anti))
        if not self.with_priors:
            return ItemPlan(item.item_id, sentences, lambda a: self._finish_ull(item, a))
        ts = [t.strip() for t in item.targets_stereo if t.strip()]
        ta = [t.strip() for t in item.targets_anti if t.strip()]
        forms = cll.prior_forms(item.text_stereo, ts, item.template) + cll.prior_forms(
            item.text_anti, ta, item.template
        )
        priors = tuple(self._seq(f) for f in forms)
        return ItemPlan(
            item.item_id,
            sentences + priors,
            lambda a: self._finish_cll(item, a, len(ts), len(ta)),
        )

    @staticmethod
    def _finish_ull(item: Item, a: Answers) -> ScoreRow:
        return cll.ull_row(
            item.item_id,
            lp_stereo=_lp_sum(a[0]),
            lp_anti=_lp_sum(a[1]),
            n_tokens_stereo=len(a[0]),
            n_tokens_anti=len(a[1]),
        )

    @staticmethod
    def _finish_cll(item: Item, a: Answers, n_s: int, n_a: int) -> ScoreRow:
        return cll.cll_row(
            item.item_id,
            lp_stereo=_lp_sum(a[0]),
            lp_anti=_lp_sum(a[1]),
            prior_stereo=cll.prior_logprob(a[2 : 2 + n_s]),
            prior_anti=cll.prior_logprob(a[2 + n_s : 2 + n_s + n_a]),
            n_tokens_stereo=len(a[0]),
            n_tokens_anti=len(a[1]),
            n_targets_stereo=n_s,
            n_targets_anti=n_a,
        )


class ReferencePlanner:
    """``cll-reference``: the original code's texts, tokenisation and target words.

    Items without a template (CrowS-Pairs) have no cells to re-fill; their texts are
    used as the filled sentences, which is what the original code would be given.
    """

    def __init__(self, backend: CausalLM) -> None:
        self.backend = backend
        self._token_text: dict[int, str] = {}

    def _texts(self, token_ids: Sequence[int]) -> list[str]:
        out = []
        for t in token_ids:
            if t not in self._token_text:
                self._token_text[t] = self.backend.decode_token(t)
            out.append(self._token_text[t])
        return out

    def _seq(self, text: str) -> tuple[int, ...]:
        return tuple(self.backend.encode(text, add_special_tokens=True))

    def plan(self, item: Item) -> ItemPlan:
        if item.template is not None and item.raw_stereo_cell is not None:
            try:
                st, an = cll_reference.reference_texts(
                    item.template, item.raw_stereo_cell, item.raw_anti_cell or ""
                )
            except Exception as exc:  # re.sub rejects some targets; so would the original
                row = cll_reference.unscorable_row(
                    item.item_id, f"the original mask filling raises {type(exc).__name__}"
                )
                return ItemPlan(item.item_id, (), lambda _a: row)
        else:
            st, an = item.text_stereo, item.text_anti
        ws, wa = cll_reference.diff_words(st, an)
        words = tuple(self._seq(cll_reference.prior_text(w)) for w in ws + wa)
        return ItemPlan(
            item.item_id,
            (self._seq(st), self._seq(an), *words),
            lambda a: self._finish(item.item_id, words, a, len(ws), len(wa)),
        )

    def _finish(
        self, item_id: str, words: tuple[tuple[int, ...], ...], a: Answers, n_s: int, n_a: int
    ) -> ScoreRow:
        per_word = [(a[2 + k], self._texts(seq)) for k, seq in enumerate(words)]
        try:
            t_s = cll_reference.side_prior(per_word[:n_s])
            t_a = cll_reference.side_prior(per_word[n_s:])
        except cll_reference.ReferenceUnscorable as exc:
            return cll_reference.unscorable_row(item_id, str(exc))
        return cll_reference.cll_reference_row(
            item_id,
            s_stereo=_lp_sum(a[0]),
            s_anti=_lp_sum(a[1]),
            t_stereo=t_s,
            t_anti=t_a,
            n_tokens_stereo=len(a[0]),
            n_tokens_anti=len(a[1]),
            words_stereo=n_s,
            words_anti=n_a,
        )


class AULPlanner:
    """``aul``: the two sentences as texts; the masked-LM backend tokenises them."""

    def plan(self, item: Item) -> ItemPlan:
        return ItemPlan(
            item.item_id,
            (item.text_stereo, item.text_anti),
            lambda a: aul_row(item.item_id, a[0], a[1]),
        )


def make_planner(metric: str, backend) -> CLLPlanner | ReferencePlanner | AULPlanner:
    """The planner for ``metric``, after checking the backend can answer its requests."""
    info = get_metric(metric)
    want = {"causal-logprobs": CausalLM, "masked-logprobs": MaskedLM}.get(info.requests)
    if want is None:
        raise UserInputError(
            f"metric {metric!r} is scored from {info.requests}, not from token log-probs"
        )
    if not isinstance(backend, want):
        raise UserInputError(
            f"metric {metric!r} needs {info.requests} (a {want.__name__} backend); "
            f"{getattr(backend, 'name', type(backend).__name__)} is not one"
        )
    if info.name == AUL:
        return AULPlanner()
    if info.name == cll_reference.CLL_REFERENCE:
        return ReferencePlanner(backend)
    return CLLPlanner(backend, info.name)
