"""What a paired comparison could have detected: the minimum detectable change (pure).

"No significant change" is only informative next to the size of change the data could
have shown. For every paired comparison the monitor reports the **minimum detectable
change** (MDE): the smallest change in bias rate, in percentage points over the paired
items, that the comparison's own test would detect with 80% power at its level α.

The test is exact McNemar (``monitor.drift.stats.mcnemar_exact``), so the power is
computed for that test exactly, not from a normal approximation:

* with ``n`` paired items and a discordant proportion ψ (items that change side), a
  true change Δ = p_new − p_old means that among the discordant items a share
  π = (1 + Δ/ψ) / 2 moves towards the stereotype;
* the number of discordant items is M ~ Binomial(n, ψ); given M = m, the exact test
  rejects when the smaller of the two counts is at most k*(m), the largest k with
  2·P(Bin(m, ½) ≤ k) < α; the power given m is P(X ≤ k*) + P(X ≥ m − k*), X ~ Bin(m, π);
* the power is the average over M, and the MDE the smallest |Δ| where it reaches 80%.

ψ is the **observed** discordance (b + c)/n of the comparison: how much the two runs
disagree item by item is what makes a change of a given size hard or easy to see. A
change cannot be smaller than the discordance it implies, so ψ = max(observed, |Δ|):
two bit-identical runs (ψ = 0) could still have shown a change of size Δ, with every
changed item moving one way.

Where items share a template (clusters), the comparison has fewer independent units
than items; ``n`` is then the effective sample size n / design effect
(``monitor.drift.clusters``). α is the report's false discovery rate used as a
two-sided per-test level, before the Benjamini–Hochberg correction over the report's
tests; with BH over m tests, a single change needs somewhat more to be flagged.

``connor_mde`` is the normal-approximation formula of Connor (1987, Biometrics 43:207),
n = [z_{1−α/2}·√ψ + z_{power}·√(ψ − Δ²)]² / Δ², kept as a cross-check for tests and for
readers who know it; the exact figure is the one reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.special import bdtr, bdtrc, bdtrik, gammaln, ndtri, xlog1py, xlogy

POWER = 0.80


@dataclass(frozen=True)
class DetectableChange:
    """The smallest bias-rate change (a proportion; × 100 for pp) the comparison's exact
    McNemar test detects with ``power`` at two-sided level ``alpha``; None when no
    change at all could reach that power with this many items."""

    mde: float | None
    n: int  # paired items
    n_effective: int  # after the design effect of shared templates
    discordance: float  # observed (b + c) / n
    alpha: float
    power: float = POWER
    method: str = (
        "exact McNemar power at the observed discordance, averaged over the binomial "
        "number of discordant items"
    )


# Discordant counts m whose binomial weight is below this share of the largest weight are
# left out of the power's average: their total weight is under 1e-15 (n ≤ 10^6), far
# below any printed digit, and skipping them makes a large n's MDE ~7x cheaper.
NEGLIGIBLE_WEIGHT = 1e-22


@lru_cache(maxsize=64)
def _critical_counts(n: int, alpha: float) -> np.ndarray:
    """k*(m) for m = 0..n: the largest k with 2·P(Bin(m, ½) ≤ k) < α (−1: never rejects).

    Depends on n and α only, so one MDE search (and a report's many searches with the
    same n) compute it once. The binomial quantile from ``scipy.special.bdtrik`` (the
    inverse of the cdf in k), rounded up and stepped down where the cdf allows, as
    ``binom.ppf`` does (the tests hold the two equal): ``scipy.stats`` is not imported on
    the drift path, as it costs each command ~1.4 s.
    """
    q = alpha / 2
    m = np.arange(n + 1)
    with np.errstate(invalid="ignore"):  # m = 0 has no quantile; it never rejects (below)
        k = np.ceil(bdtrik(q, m, 0.5))
        step_down = np.maximum(k - 1, 0)
        k = np.where(bdtr(step_down, m, 0.5) >= q, step_down, k)  # smallest k, cdf(k) ≥ q
    out = np.where(m > 0, k - 1, -1).astype(np.int64)
    out.flags.writeable = False
    return out


@lru_cache(maxsize=256)
def _discordant_weights(n: int, psi: float) -> tuple[np.ndarray, np.ndarray]:
    """(m, P(M = m)) for M ~ Bin(n, ψ), without the negligible tail (see above).

    The pmf in log space (``gammaln``; ``xlogy``/``xlog1py`` make 0·log 0 = 0 at ψ = 1),
    equal to ``binom.pmf`` to about 1e-12 relative, far below what moves an MDE.
    """
    m = np.arange(n + 1)
    log_choose = gammaln(n + 1) - gammaln(m + 1) - gammaln(n - m + 1)
    weights = np.exp(log_choose + xlogy(m, psi) + xlog1py(n - m, -psi))
    keep = weights >= weights.max() * NEGLIGIBLE_WEIGHT
    m, weights = m[keep], weights[keep]
    m.flags.writeable = weights.flags.writeable = False
    return m, weights


def mcnemar_power(n: int, discordance: float, delta: float, alpha: float) -> float:
    """Power of the two-sided exact McNemar test for a true change ``delta`` (|Δ| ≤ 1)."""
    delta = abs(delta)
    psi = min(1.0, max(discordance, delta))
    if n <= 0 or psi == 0:
        return 0.0
    m, weights = _discordant_weights(n, psi)
    k = _critical_counts(n, alpha)[m]
    pi = min(1.0, (1 + delta / psi) / 2)
    # bdtr/bdtrc are binom.cdf/sf as plain ufuncs (equal to 1e-14): an MDE search calls
    # this a dozen times per comparison, where binom's argument checks cost more than the
    # sums themselves.
    with np.errstate(invalid="ignore"):  # k = -1 rows (never reject) are masked below
        conditional = bdtr(k, m, pi) + bdtrc(m - k - 1, m, pi)
    conditional = np.where(k >= 0, conditional, 0.0)
    return float(np.clip(np.sum(weights * conditional), 0.0, 1.0))


def mcnemar_mde(
    n: int,
    b: int,
    c: int,
    *,
    alpha: float = 0.05,
    power: float = POWER,
    design_effect: float = 1.0,
) -> DetectableChange:
    """The minimum detectable change of a paired comparison with ``b`` + ``c`` discordant
    items out of ``n`` (see the module docstring)."""
    n_eff = max(0, math.floor(n / max(design_effect, 1.0))) if n else 0
    return _mde(n, b + c, n_eff, alpha, power)


@lru_cache(maxsize=4096)
def _mde(n: int, discordant: int, n_eff: int, alpha: float, power: float) -> DetectableChange:
    """The MDE depends on the comparison only through these five numbers, and a drift
    session's comparisons repeat them (170 distinct among 432 on the bench's store), so
    each search runs once."""
    discordance = discordant / n if n else 0.0
    if n_eff == 0 or mcnemar_power(n_eff, discordance, 1.0, alpha) < power:
        return DetectableChange(None, n, n_eff, discordance, alpha, power)

    def gap(delta: float) -> float:
        return mcnemar_power(n_eff, discordance, delta, alpha) - power

    lo, hi = 1e-6, 1.0
    if gap(lo) >= 0:
        return DetectableChange(lo, n, n_eff, discordance, alpha, power)
    mde = brentq(gap, lo, hi, xtol=1e-5)
    return DetectableChange(float(mde), n, n_eff, discordance, alpha, power)


def connor_mde(n: int, discordance: float, *, alpha: float = 0.05, power: float = POWER) -> float:
    """Connor's (1987) normal-approximation MDE at a fixed discordance ψ (a cross-check)."""
    za, zb = ndtri(1 - alpha / 2), ndtri(power)
    psi = discordance

    def gap(delta: float) -> float:
        return math.sqrt(n) * delta - za * math.sqrt(psi) - zb * math.sqrt(max(psi - delta**2, 0))

    return float(brentq(gap, 1e-9, math.sqrt(psi)))
