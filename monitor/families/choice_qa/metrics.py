"""The choice-QA family's metric specs (:func:`metric_specs`, ``FAMILY.metrics``, read by
the registry).

Pure data. A choice-qa run's accuracy and bias scores need the items' payloads (label,
target, polarity ...), so ``registry.run_measures`` calls the family's ``measures`` hook
(``measures.run_measures``) with the spec's own ``aggregate``, which is empty except
for the chat API metrics' refusal/other/rotation rates (``letter_measures``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from monitor.families.choice_qa.letter_measures import (
    LETTER_CHOICE,
    check_letter_row,
    letter_measures,
)
from monitor.families.choice_qa.letters import (
    MC_LETTER,
    MC_LETTER_SAMPLED,
    MC_LETTER_SAMPLED_VERSION,
    MC_LETTER_VERSION,
)
from monitor.metrics.registry import ItemNumbers
from monitor.records import Measure, ScoreRow

if TYPE_CHECKING:
    from monitor.contract.family import Family
    from monitor.metrics.registry import MetricSpec

MC_IMPORTED = "mc-imported"
MC_IMPORTED_VERSION = "1"
# Bump the version when loglik.py or scoring.py changes what the metric computes.
MC_LOGLIK = "mc-loglik"
MC_LOGLIK_VERSION = "1"
# mc-loglik keeps its numbers (the three options' log-likelihoods) in details, not in the
# pair columns: no pair column to require.
OPTION_LOGLIKS = ItemNumbers("option log-likelihoods (in details)", ())
# Published predictions carry the picked option only: no per-item numbers to require.
PICKED_OPTION = ItemNumbers("picked option (imported)", ())


def no_aggregate(
    rows: Iterable[ScoreRow], item_axis: Mapping[str, tuple[str, str]]
) -> list[Measure]:
    """Nothing from (benchmark, axis) alone: the family's ``measures`` hook aggregates."""
    return []


def metric_specs(family: Family) -> list[MetricSpec]:
    """The family's metrics, each naming ``family`` (``MetricSpec`` is imported here so
    that this module loads without the metric registry)."""
    from monitor.metrics.registry import MetricSpec

    def letter(name: str, version: str, description: str) -> MetricSpec:
        """The lettered chat metrics differ only in how they ask (log-probs or samples):
        the same items, rows, measures and check."""
        return MetricSpec(
            name,
            version,
            description,
            family,
            LETTER_CHOICE,
            letter_measures,
            "chat-answers",
            check_letter_row,
            needs="chat-answers",
        )

    return [
        MetricSpec(
            MC_IMPORTED,
            MC_IMPORTED_VERSION,
            "published per-item predictions of a multiple-choice benchmark (BBQ's UnifiedQA "
            "files, BharatBBQ's example predictions), imported: the picked option per item",
            family,
            PICKED_OPTION,
            no_aggregate,
            "imported",
        ),
        MetricSpec(
            MC_LOGLIK,
            MC_LOGLIK_VERSION,
            "local causal LM on choice questions (BBQ, BharatBBQ): log-likelihood of each "
            "option given lm-eval's BBQ prompt, an item's options as branches of one "
            "forward pass over the shared prompt; argmax choice, the length-normalised "
            "choice (lm-eval's acc_norm) kept beside it",
            family,
            OPTION_LOGLIKS,
            no_aggregate,
            "causal-logprobs",
            needs="continuation-logliks",
        ),
        letter(
            MC_LETTER,
            MC_LETTER_VERSION,
            "chat API multiple choice: the question with its options lettered A/B/C at "
            "temperature 0, in all three rotations; each letter's mass from the top "
            "log-probs credited to the option it showed, averaged over rotations, argmax",
        ),
        letter(
            MC_LETTER_SAMPLED,
            MC_LETTER_SAMPLED_VERSION,
            "mc-letter for models without log-probs: N sampled answers per rotation parsed "
            "to a letter (or refusal/other), majority vote over all answers",
        ),
    ]
