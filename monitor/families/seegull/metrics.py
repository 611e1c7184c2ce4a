"""The family's metric spec: what the metric is, which numbers its rows hold, and what it
needs of a backend (every causal-LM snapshot kind offers continuation log-likelihoods)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from monitor.families.seegull.frames import GLOSSES, METRIC, METRIC_VERSION, REVIEW_NOTE
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
    ]
