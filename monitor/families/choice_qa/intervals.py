"""Template-cluster intervals shared by the family's measures and the reference.

Pure numerics: per-cluster sums of per-item indicator counts, and

* with at least ``FEW_CLUSTERS`` (10) templates, percentile intervals of any statistic
  of the summed counts over resamples of whole clusters (Field & Welsh 2007), drawn by a
  seeded generator so a rerun and the quality gate's recomputation agree exactly;
* with fewer (a ``--size mini`` run keeps 4 templates per category), where the bootstrap
  undercovers and collapses to a point when every template agrees, the effective-n
  Wilson interval of ``monitor.metrics.few_clusters`` (Wilson on n / design effect, t with
  G − 1 degrees of freedom). Every measure of the family is a rate, a bias score
  2x − 1 of a rate x, or a product of such factors (s_AMB = (1 − accuracy) · s): its
  interval is the range of the product over its factors' interval ends (``Factor``), wider
  than the product's own, never of width zero.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import product
from typing import Any, Literal

import numpy as np

from monitor.benchmarks.items import Item
from monitor.metrics import few_clusters
from monitor.metrics.few_clusters import FEW_CLUSTERS, effective_rate
from monitor.metrics.intervals import estimated_measure
from monitor.records import Measure, MeasureKind

RESAMPLES = 2000
CONFIDENCE = 0.95
METHOD = f"cluster-bootstrap-percentile (templates, B={RESAMPLES})"
FEW_METHOD = (
    f"{few_clusters.METHOD}; factors' interval ends multiplied (fewer than "
    f"{FEW_CLUSTERS} templates)"
)
Stat = Callable[[np.ndarray], np.ndarray]  # (resamples, counts) -> (resamples,), NaN = none


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den where den > 0, NaN elsewhere."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def cluster_sums(
    group: Sequence[tuple[Item, Any]],
    counts: Callable[[Item, Any], Mapping[str, int]],
    names: Sequence[str],
) -> np.ndarray:
    """Per-cluster sums of ``counts`` (clusters = (benchmark, template), sorted)."""
    sums: dict[tuple[str, str], np.ndarray] = {}
    for item, value in group:
        # The payload's template: the quality gate rebuilds items from the stored payload.
        key = (item.benchmark, str(item.payload["template"]))
        c = counts(item, value)
        vec = np.array([c[n] for n in names], dtype=np.float64)
        sums[key] = sums[key] + vec if key in sums else vec
    return np.array([sums[k] for k in sorted(sums)]).reshape(len(sums), len(names))


def bootstrap(
    sums: np.ndarray, stats: Mapping[str, Stat], seed: int
) -> dict[str, tuple[float, float] | None]:
    """Percentile intervals of ``stats`` over cluster resamples (None: no finite draw)."""
    g = sums.shape[0]
    rng = np.random.default_rng(seed)
    draws = sums[rng.integers(0, g, size=(RESAMPLES, g))].sum(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    out: dict[str, tuple[float, float] | None] = {}
    for name, stat in stats.items():
        values = stat(draws)
        values = values[np.isfinite(values)]
        if values.size == 0:
            out[name] = None
            continue
        lo, hi = np.percentile(values, [tail, 100 - tail])
        out[name] = (float(lo), float(hi))
    return out


@dataclass(frozen=True)
class Factor:
    """One factor of a measure, from per-cluster count columns: the rate Σk / Σn read as
    itself (``rate``), as 1 − rate (``one_minus``) or as the score 2 · rate − 1
    (``score``). A factor with no denominator spans its whole range."""

    k: tuple[str, ...]
    n: tuple[str, ...]
    read: Literal["rate", "one_minus", "score"] = "rate"


def _columns(sums: np.ndarray, names: Sequence[str], cols: tuple[str, ...]) -> np.ndarray:
    return sum((sums[:, names.index(c)] for c in cols), np.zeros(sums.shape[0]))


def few_cluster_interval(
    sums: np.ndarray, names: Sequence[str], factors: Sequence[Factor]
) -> tuple[tuple[float, float], dict[str, float]]:
    """The interval of a product of ``factors`` over clusters (rows of ``sums``) with the
    effective-n Wilson interval of each, and the details to record (each rate factor's
    design effect and effective n)."""
    ends: list[tuple[float, float]] = []
    details: dict[str, float] = {}
    for j, f in enumerate(factors):
        rate = effective_rate(_columns(sums, names, f.k), _columns(sums, names, f.n))
        low, high = (0.0, 1.0) if rate is None else (rate.ci_low, rate.ci_high)
        if rate is not None:
            details[f"design_effect_{j}"] = rate.design_effect
            details[f"n_effective_{j}"] = rate.n_effective
        if f.read == "one_minus":
            low, high = 1 - high, 1 - low
        elif f.read == "score":
            low, high = 2 * low - 1, 2 * high - 1
        ends.append((low, high))
    corners = [float(np.prod(c)) for c in product(*ends)]
    return (min(corners), max(corners)), details


@dataclass(frozen=True)
class SubjectIntervals:
    """One subject's count columns summed over all clusters (``total``), how many
    clusters there are, every measure's interval, how it was computed (``method``) and
    what each records besides (``extra``: the few-cluster factors' design effects)."""

    total: np.ndarray
    clusters: int
    intervals: dict[str, tuple[float, float] | None]
    extra: dict[str, dict[str, float]]
    method: str


def subject_intervals(
    group: Sequence[tuple[Item, Any]],
    counts: Callable[[Item, Any], Mapping[str, int]],
    names: Sequence[str],
    stats: Mapping[str, Stat],
    factors: Callable[[str], Sequence[Factor]],
    seed: int,
) -> SubjectIntervals:
    """The intervals of ``stats`` over the template clusters of ``group`` (its
    ``counts`` summed per cluster): with fewer than ``FEW_CLUSTERS`` clusters each
    measure's effective-n Wilson product of its ``factors``, else the cluster bootstrap
    seeded with ``seed``. The family's measures and the reference script's share it."""
    sums = cluster_sums(group, counts, names)
    total, g = sums.sum(axis=0), sums.shape[0]
    if g >= FEW_CLUSTERS:
        return SubjectIntervals(total, g, bootstrap(sums, stats, seed), {}, METHOD)
    intervals: dict[str, tuple[float, float] | None] = {}
    extra: dict[str, dict[str, float]] = {}
    for name in stats:
        intervals[name], extra[name] = few_cluster_interval(sums, names, factors(name))
    return SubjectIntervals(total, g, intervals, extra, FEW_METHOD)


def interval_measure(
    benchmark: str,
    axis: str,
    name: str,
    kind: MeasureKind,
    value: float,
    k: int | None,
    n: int | None,
    ci: tuple[float, float] | None,
    clusters: int,
    definition: str,
    *,
    method: str = METHOD,
    extra: Mapping[str, float] | None = None,
) -> Measure:
    """A measure whose interval is widened to contain its value (recorded in details);
    ``method`` names the interval (the bootstrap, or with few clusters the effective-n
    Wilson), ``extra`` adds to its details."""
    lo, hi = ci if ci is not None else (value, value)
    return estimated_measure(
        benchmark,
        axis,
        name,
        (k, n),
        (value, min(lo, value), max(hi, value)),
        definition=definition,
        kind=kind,
        method=method,
        confidence=CONFIDENCE,
        details={
            "clusters": clusters,
            "few_clusters": clusters < FEW_CLUSTERS,
            "interval_widened_to_estimate": not (lo <= value <= hi),
            **(extra or {}),
        },
    )
