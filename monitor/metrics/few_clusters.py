"""Intervals and tests that stay honest with a handful of clusters (pure).

A ``--size mini`` choice-question run keeps 4 templates per category; the items of one
template move together, so the run holds about 4 independent pieces of evidence, not 40.
Neither usual interval is right there:

* a **cluster bootstrap** over 4 templates has only 35 distinct resamples and collapses
  to a single point when every template agrees (0.0% [0.0, 0.0]): it undercovers badly;
* a **Wilson** interval over the 40 items treats them as independent: too narrow.

What this module does instead, for a rate k / n summed over G clusters:

* the **design effect** of the clustering, deff = var_CR1(p̂) / var_iid(p̂), the ratio of
  the cluster-robust (CR1) variance of the ratio estimator,
  G / (G − 1) · Σ_g (k_g − p̂ n_g)² / n², to the binomial p̂ (1 − p̂) / n; floored at 1
  (clustering never narrows an interval), 1 when p̂ is 0 or 1 (every cluster agrees);
* the **effective sample size** n_eff = n / deff, kept within [G, n] (no fewer
  independent pieces of evidence than clusters, no more than items);
* a **Wilson interval on n_eff** whose critical value is Student's t with G − 1 degrees
  of freedom instead of the normal z: the degrees-of-freedom adjustment of Korn & Graubard
  (1998) for proportions from clustered samples (Wilson's interval depends on its critical
  value c only through c² / n, so this is Wilson at n_eff · z² / t² with z). Never of
  width zero: at p̂ = 0 its upper end is c² / (n_eff + c²).

``tests/test_few_clusters.py`` simulates four clusters with correlated items and holds
the coverage of these intervals at ≥ 93% for a nominal 95% (the cluster bootstrap's is
far below).

For paired changes with templates as the unit, the exact sign-flip test over T templates
(the choice questions' paired change) cannot give a two-sided p below 2 / 2^T (the
observed pattern and its mirror image are always the two most extreme):
:func:`smallest_sign_flip_p`. With 4 templates that is 0.125, above any usual false
discovery rate, so no change could ever be flagged and the comparison says "too few
templates for a verdict" instead of a verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit

# Below this many clusters a rate's interval is the effective-n Wilson, not the cluster
# bootstrap (the same line ``monitor.metrics.ranking`` draws for its bootstrap).
FEW_CLUSTERS = 10
METHOD = (
    "Wilson on the effective sample size (n / design effect, within [clusters, n]), "
    "t with clusters - 1 df"
)


@dataclass(frozen=True)
class EffectiveRate:
    """k / n over clusters, with its design effect, effective n and interval."""

    k: float
    n: float
    clusters: int
    design_effect: float
    n_effective: float
    ci_low: float
    ci_high: float

    @property
    def value(self) -> float:
        return self.k / self.n


def design_effect(k: np.ndarray, n: np.ndarray) -> float:
    """The design effect of the ratio Σk / Σn over clusters (per-cluster ``k``, ``n``):
    CR1 variance over binomial variance, at least 1 (see the module docstring)."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    keep = n > 0
    k, n = k[keep], n[keep]
    g, total = len(n), float(n.sum())
    if g < 2 or total <= 0:
        return 1.0
    p = float(k.sum()) / total
    var_iid = p * (1 - p) / total
    if var_iid <= 0:
        return 1.0
    var_cr = g / (g - 1) * float(np.sum((k - p * n) ** 2)) / total**2
    return max(1.0, var_cr / var_iid)


def critical_value(clusters: int, confidence: float = 0.95) -> float:
    """Student's t quantile with ``clusters`` − 1 df (the normal z from 30 clusters on, and
    for a single cluster, where no df remain: its interval is then the items' own)."""
    q = 0.5 + 0.5 * confidence
    if clusters < 2 or clusters >= 30:
        return float(ndtri(q))
    return float(stdtrit(clusters - 1, q))


def wilson_float(p: float, n: float, c: float) -> tuple[float, float]:
    """Wilson's score interval for a share ``p`` of ``n`` (any positive real) at critical
    value ``c``; exactly 0 / 1 at p = 0 / 1, as ``monitor.metrics.intervals.wilson``."""
    denom = 1 + c * c / n
    centre = (p + c * c / (2 * n)) / denom
    half = c / denom * math.sqrt(p * (1 - p) / n + c * c / (4 * n * n))
    low = 0.0 if p <= 0 else max(0.0, centre - half)
    high = 1.0 if p >= 1 else min(1.0, centre + half)
    return low, high


def effective_rate(k: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> EffectiveRate | None:
    """Σk / Σn over clusters with the effective-n Wilson interval; None when Σn = 0."""
    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    g = int(np.count_nonzero(n > 0))
    total = float(n.sum())
    if total <= 0:
        return None
    deff = design_effect(k, n)
    n_eff = min(total, max(float(g), total / deff))
    p = float(k.sum()) / total
    low, high = wilson_float(p, n_eff, critical_value(g, confidence))
    return EffectiveRate(float(k.sum()), total, g, deff, n_eff, low, high)


def smallest_sign_flip_p(templates: int, resamples: int = 9_999) -> float:
    """The smallest two-sided p a sign-flip test over ``templates`` clusters can give:
    2 / 2^T when every pattern is enumerated, 1 / (resamples + 1) when they are drawn."""
    if templates <= 0:
        return 1.0
    if 2**templates <= resamples:
        return min(1.0, 2 / 2**templates)
    return 1 / (resamples + 1)
