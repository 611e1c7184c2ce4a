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

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from monitor.benchmarks.items import Item
from monitor.contract.capabilities import BackendCapability
from monitor.contract.family import Family
from monitor.contract.registry import lookup, metric_specs
from monitor.records import Measure, ScoreRow

ItemAxes = Mapping[str, tuple[str, str]]  # item id -> (benchmark, axis)
Aggregate = Callable[[Iterable[ScoreRow], ItemAxes], list[Measure]]


@dataclass(frozen=True)
class ItemNumbers:
    """Which per-item columns of ``scores`` a metric fills, so the gate can require them.

    ``required`` must be present (not NULL, not NaN) on every row, except rows whose
    outcome is in ``unless_outcome_in`` (an API answer that chose neither option has no
    option probabilities). ``non_positive`` columns are additionally log-probabilities or
    means of them, so never above 0. Wherever any number is present it must be finite and
    in range, whatever the family; that part needs no declaration.
    """

    label: str
    required: tuple[str, ...]
    unless_outcome_in: tuple[str, ...] = ()
    non_positive: tuple[str, ...] = ()


@dataclass(frozen=True)
class MetricSpec:
    """One metric: what it is, what its rows hold and how they aggregate.

    ``family`` decides how the quality gate, drift and the reports treat its results;
    ``numbers`` which per-item columns the gate requires; ``aggregate`` turns stored rows
    into the run's measures; ``requests`` names what it asks of a model (token
    log-probs of a causal LM, of a masked LM, or answers from a chat API), which is
    what the run records; ``needs`` is what a snapshot kind's backend must offer for
    the kind to offer the metric (``monitor.kinds``; None: no kind offers it, e.g.
    imported predictions or a judged task).
    """

    name: str
    version: str
    summary: str
    family: Family
    numbers: ItemNumbers
    aggregate: Aggregate
    requests: str  # "causal-logprobs" | "masked-logprobs" | "chat-answers" | "imported"
    # | "embeddings"
    # Rebuilds a stored row from its stored inputs and names the fields that disagree
    # (the sentence pairs' consistency check); None where rows cannot be rebuilt.
    check_row: Callable[[ScoreRow], list[str]] | None = None
    # Scores the source rows our loader excludes, as the code it reproduces did
    # (``LoadedBenchmark.reference_rows``); the exclusions are still recorded.
    scores_excluded_rows: bool = False
    needs: BackendCapability | None = None


class _Metrics(Mapping[str, MetricSpec]):
    """Every metric by name, read from the registered families on first use (the pairs'
    first, so the causal LMs' default, ``cll``, is the first metric listed)."""

    def __getitem__(self, name: str) -> MetricSpec:
        return metric_specs()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(metric_specs())

    def __len__(self) -> int:
        return len(metric_specs())


METRICS: Mapping[str, MetricSpec] = _Metrics()


def get_metric(name: str) -> MetricSpec:
    """The spec of ``name``; an unknown name is a ``UserInputError`` listing the known."""
    return lookup(METRICS, name, "metric", "metrics")


def metric_info(name: str) -> tuple[str, str, str]:
    """(name, version, what it requests) of a metric; unknown names are a ``UserInputError``."""
    m = get_metric(name)
    return m.name, m.version, m.requests


def run_measures(
    spec: MetricSpec, rows: Iterable[ScoreRow], items: Sequence[Item]
) -> list[Measure]:
    """A run's measures from its stored rows: the spec's own aggregation (per axis), then
    what its family's ``measures`` capability adds or refines from the rows and the
    items' payloads: the pairs' metric panel, identity-pair
    clusters and rankings and the rate without reference-only rows; the choice
    questions' BBQ measures. A family without the hook (association tests, whose spec
    aggregates everything) keeps the spec's measures.
    """
    rows = list(rows)
    by_id = {it.item_id: it for it in items}
    item_axis = {i: (it.benchmark, it.axis) for i, it in by_id.items()}
    aggregate = spec.aggregate(rows, item_axis)
    family_measures = spec.family.metrics().measures
    if family_measures is None:
        return aggregate
    return family_measures(rows, by_id, aggregate=aggregate)
