"""Template-cluster bootstrap intervals shared by the family's measures and the reference.

Pure numerics: per-cluster sums of per-item indicator counts, and percentile intervals of
any statistic of the summed counts over resamples of whole clusters (Field & Welsh 2007),
drawn by a seeded generator so a rerun and the quality gate's recomputation agree exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from monitor.benchmarks.items import Item
from monitor.metrics.ranking import MIN_BOOTSTRAP_CLUSTERS
from monitor.records import Measure, MeasureKind

RESAMPLES = 2000
CONFIDENCE = 0.95
METHOD = f"cluster-bootstrap-percentile (templates, B={RESAMPLES})"
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
) -> Measure:
    """A measure whose interval is widened to contain its value (recorded in details)."""
    lo, hi = ci if ci is not None else (value, value)
    return Measure(
        benchmark=benchmark,
        axis=axis,
        measure=name,
        k=k,
        n=n,
        value=value,
        ci_low=min(lo, value),
        ci_high=max(hi, value),
        definition=definition,
        kind=kind,
        method=METHOD,
        confidence=CONFIDENCE,
        details={
            "clusters": clusters,
            "few_clusters": clusters < MIN_BOOTSTRAP_CLUSTERS,
            "interval_widened_to_estimate": not (lo <= value <= hi),
        },
    )
