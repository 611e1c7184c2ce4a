"""The family's metric spec: what the metric is, which numbers its rows hold, and what it
needs of a backend (every causal-LM snapshot kind offers continuation log-likelihoods)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.families.seegull.frames import (
    CHOICE_METRIC,
    CHOICE_VERSION,
    GLOSSES,
    METRIC,
    METRIC_VERSION,
    QUESTION_GLOSS,
    REVIEW_NOTE,
)
from monitor.families.seegull.measures import no_aggregate
from monitor.metrics.registry import ItemNumbers, MetricSpec

if TYPE_CHECKING:
    from monitor.contract.family import Family

# The attribute's log-likelihood after each identity's frame, on every row (a tie too).
ATTRIBUTE_LOGLIKS = ItemNumbers(
    "log-likelihoods of the attribute after the frames naming S and C",
    ("delta", "lp_stereo", "lp_anti"),
    non_positive=("lp_stereo", "lp_anti"),
)
# Each identity's option mass averaged over the orders; a refusal or another answer has
# none.
OPTION_MASSES = ItemNumbers(
    "option masses of the two identities", ("prob_stereo", "prob_anti"),
    unless_outcome_in=("refusal", "other"),
)  # fmt: skip


def metric_specs(family: Family) -> list[MetricSpec]:
    """The family's metric, naming ``family``."""
    return [
        MetricSpec(
            METRIC,
            METRIC_VERSION,
            "local causal LM: log-likelihood of a SeeGULL attribute after a frame naming the "
            "identity annotators tie it to, against the same frame naming a contrast "
            f"identity of the same kind; two frames per language ({GLOSSES[0]!r}, "
            f"{GLOSSES[1]!r}, in the file's language; {REVIEW_NOTE})",
            family,
            ATTRIBUTE_LOGLIKS,
            no_aggregate,
            "causal-logprobs",
            needs="continuation-logliks",
        ),
        MetricSpec(
            CHOICE_METRIC,
            CHOICE_VERSION,
            "chat API: which of two identities a SeeGULL attribute fits, asked in the "
            f"file's language ({QUESTION_GLOSS!r}; {REVIEW_NOTE.replace('frames', 'questions')}) "
            "at temperature 0, both orders; identity masses from the top log-probs by prefix "
            "matching, ambiguous tokens kept apart, refusals counted",
            family,
            OPTION_MASSES,
            no_aggregate,
            "chat-answers",
            needs="chat-answers",
        ),
    ]
