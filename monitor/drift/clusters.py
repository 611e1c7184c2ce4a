"""Items that share a template are not independent: the design effect of clustering (pure).

India_Religious repeats sentences with different anti-stereotype targets (12 templates
used 2–5 times each); a model that changes its mind about a sentence tends to change it
for every copy. Treating such items as independent makes intervals too narrow and
the MDE too small. Items are grouped by the template they were filled from (the
store's ``items.template``; an item without one is its own cluster).

For the paired change Δ = mean of d_i, with d_i = (new stereo) − (old stereo) ∈ {−1, 0,
1} over items decided in both runs, the **design effect** is the ratio of the
cluster-robust variance of the mean (the CR1 sandwich,
G/(G−1) · Σ_g (Σ_{i∈g} (d_i − Δ))² / n²) to the variance that assumes independent items
(s²/n). It is floored at 1 (clustering is never allowed to *narrow* an interval), and is
exactly 1 when no template holds more than one paired item.

What uses it: the paired interval of the rate change is widened by √deff around Δ (each
side's half-width scaled, so Newcombe's asymmetry is kept), and the MDE is computed for
the effective sample size n / deff (``monitor.drift.power``). The exact McNemar p-value
is left as it is and the design effect is shown beside it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ClusterSummary:
    """How the paired items of one comparison cluster by template."""

    n_items: int
    n_clusters: int
    largest: int  # items in the largest cluster
    design_effect: float  # ≥ 1

    @property
    def clustered(self) -> bool:
        return self.largest > 1


def design_effect(d: Mapping[str, int], clusters: Mapping[str, str]) -> ClusterSummary:
    """Design effect of the paired differences ``d`` (item → −1/0/1) clustered by
    ``clusters`` (item → template); items missing from ``clusters`` are singletons."""
    groups: dict[str, list[int]] = defaultdict(list)
    for item, value in d.items():
        groups[clusters.get(item, f"item:{item}")].append(value)
    n, g = len(d), len(groups)
    largest = max((len(v) for v in groups.values()), default=0)
    if n < 2 or g < 2 or largest <= 1:
        return ClusterSummary(n, g, largest, 1.0)
    # fsum: correctly rounded whatever the order, so the figure does not depend on the
    # order the store hands the items out in (a migrated and a fresh store of the same
    # runs gave different last digits with a plain sum).
    mean = sum(d.values()) / n
    var_iid = math.fsum((x - mean) ** 2 for x in d.values()) / (n - 1) / n
    if var_iid == 0:
        return ClusterSummary(n, g, largest, 1.0)
    spread = math.fsum(math.fsum(x - mean for x in v) ** 2 for v in groups.values())
    var_cr = g / (g - 1) * spread / n**2
    return ClusterSummary(n, g, largest, max(1.0, var_cr / var_iid))


def widen(centre: float, low: float, high: float, deff: float) -> tuple[float, float]:
    """An interval around ``centre`` with both half-widths scaled by √deff, within [−1, 1]."""
    k = math.sqrt(max(deff, 1.0))
    return max(-1.0, centre - k * (centre - low)), min(1.0, centre + k * (high - centre))
