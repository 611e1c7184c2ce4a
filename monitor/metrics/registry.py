"""Every metric the monitor knows, as one spec each: name, version, result family, which
per-item numbers it fills and how its rows aggregate into per-run measures.

A name is one algorithm forever; changing what a metric computes means a new version
(or a new name), so stored scores of two algorithms are never compared as one.

Modelled on lm-evaluation-harness' ``MetricSpec``: per-item computation (the scorers in
``monitor.metrics.*`` and the planners in ``monitor.scoring``) is kept apart from
aggregation (``MetricSpec.aggregate``), so a run's measures are always recomputed from
its *stored* rows. Which snapshot kinds a metric applies to is declared by the kinds
(``monitor.kinds``), not here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from monitor.benchmarks.items import Item
from monitor.errors import UserInputError
from monitor.metrics.families import ItemNumbers, ResultFamily
from monitor.records import Measure, ScoreRow

ItemAxes = Mapping[str, tuple[str, str]]  # item id -> (benchmark, axis)
Aggregate = Callable[[Iterable[ScoreRow], ItemAxes], list[Measure]]


@dataclass(frozen=True)
class MetricSpec:
    """One metric: what it is, what its rows hold and how they aggregate.

    ``family`` decides how the quality gate, drift and the reports treat its results;
    ``numbers`` which per-item columns the gate requires; ``aggregate`` turns stored rows
    into the run's measures; ``requests`` names what it asks of a model (token
    log-probs of a causal LM, of a masked LM, or answers from a chat API), which is
    what a snapshot kind must offer for the metric to apply.
    """

    name: str
    version: str
    summary: str
    family: ResultFamily
    numbers: ItemNumbers
    aggregate: Aggregate
    requests: str  # "causal-logprobs" | "masked-logprobs" | "chat-answers" | "imported"
    # | "embeddings"
    # Rebuilds a stored row from its stored inputs and names the fields that disagree
    # (``monitor.families.pairs.consistency``); None where rows cannot be rebuilt.
    check_row: Callable[[ScoreRow], list[str]] | None = None
    # Scores the source rows our loader excludes, as the code it reproduces did
    # (``LoadedBenchmark.reference_rows``); the exclusions are still recorded.
    scores_excluded_rows: bool = False


# Every metric by name, filled from the families' folders below (pairs first, so the
# causal LMs' default, ``cll``, is the first metric listed).
METRICS: dict[str, MetricSpec] = {}


# Every family's metric specs, in its own folder, as ``"module:function"`` references
# (the function returns the specs), so this room never imports a family folder.
FOLDER_METRICS = (
    "monitor.families.pairs.metrics:metric_specs",
    "monitor.families.association.metrics:metric_specs",
    "monitor.families.choice_qa.metrics:metric_specs",
)
for _ref in FOLDER_METRICS:
    _module, _, _attr = _ref.partition(":")
    METRICS.update({m.name: m for m in getattr(importlib.import_module(_module), _attr)()})


def get_metric(name: str) -> MetricSpec:
    """The spec of ``name``; an unknown name is a ``UserInputError`` listing the known."""
    try:
        return METRICS[name]
    except KeyError:
        known = ", ".join(sorted(METRICS))
        raise UserInputError(f"unknown metric {name!r}; known metrics: {known}") from None


def metric_info(name: str) -> tuple[str, str, str]:
    """(name, version, what it requests) of a metric; unknown names are a ``UserInputError``."""
    m = get_metric(name)
    return m.name, m.version, m.requests


def run_measures(
    spec: MetricSpec, rows: Iterable[ScoreRow], items: Sequence[Item]
) -> list[Measure]:
    """A run's measures from its stored rows: the spec's own aggregation (per axis), then
    what its result family's ``measures`` hook adds or refines from the rows and the
    items' payloads (``ResultFamily.hook``): the pairs' metric panel, identity-pair
    clusters and rankings and the rate without reference-only rows; the choice
    questions' BBQ measures. A family without the hook (association tests, whose spec
    aggregates everything) keeps the spec's measures.
    """
    rows = list(rows)
    by_id = {it.item_id: it for it in items}
    item_axis = {i: (it.benchmark, it.axis) for i, it in by_id.items()}
    aggregate = spec.aggregate(rows, item_axis)
    family_measures = spec.family.hook("measures")
    if family_measures is None:
        return aggregate
    return family_measures(rows, by_id, aggregate=aggregate)
