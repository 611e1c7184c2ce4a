"""The family's metric specs: what each metric is, which numbers its rows must hold, and
what it needs of a backend (the core offers a metric on every snapshot kind whose
backend meets that need).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bias_monitor_statements.frame import FRAME, METRIC, METRIC_VERSION
from bias_monitor_statements.importers import IMPORTED, IMPORTED_VERSION
from bias_monitor_statements.measures import no_aggregate
from monitor.metrics.registry import ItemNumbers, MetricSpec

if TYPE_CHECKING:
    from monitor.contract.family import Family

# Both continuations' log-likelihoods, on every row (a tie has them too).
TRUTH_LOGLIKS = ItemNumbers(
    "log-likelihoods of ' True' and ' False'",
    ("delta", "lp_stereo", "lp_anti"),
    non_positive=("lp_stereo", "lp_anti"),
)
# Imported answers carry the answer only.
ANSWER_ONLY = ItemNumbers("answer (imported)", ())


def metric_specs(family: Family) -> list[MetricSpec]:
    """The family's metrics, each naming ``family``."""
    return [
        MetricSpec(
            METRIC,
            METRIC_VERSION,
            "local causal LM: log-likelihood of ' True' against ' False' after the "
            f"statement in the frame {FRAME!r}; the higher one is the answer",
            family,
            TRUTH_LOGLIKS,
            no_aggregate,
            "causal-logprobs",
            needs="continuation-logliks",
        ),
        MetricSpec(
            IMPORTED,
            IMPORTED_VERSION,
            "answers (True/False) to the statements given elsewhere, imported",
            family,
            ANSWER_ONLY,
            no_aggregate,
            "imported",
        ),
    ]
