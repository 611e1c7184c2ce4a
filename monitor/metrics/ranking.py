"""Bradley–Terry strengths, the Indic-Bias paper's Elo, and cluster-bootstrap intervals.

Pure numerics over comparisons (winner, loser) with weights; no I/O.

**Bradley–Terry** (Bradley & Terry 1952): P(i beats j) = σ(θ_i − θ_j). We fit θ by
maximum likelihood with a weak ridge (``RIDGE`` = 0.01, i.e. a N(0, 10²) prior on each
θ), which keeps the estimate finite when an identity wins or loses every comparison and
moves it by a negligible amount otherwise; with the ridge the optimum has Σθ = 0, so no
reference identity is needed. Minimised with L-BFGS (scipy) on the exact gradient.

**The paper's Elo.** AI4Bharat's ``compute_elo_ranking`` fits a logistic regression
without intercept (scikit-learn's default L2 penalty, C = 1) on a design of +ln 10 for
the first identity and −ln 10 for the second and reports 400·β + 1000. Substituting
θ = β·ln 10 that is this same Bradley–Terry objective with ridge 1/ln(10)² and
Elo = 1000 + 400·θ / ln 10, so :func:`paper_elo` computes it exactly, without
scikit-learn. The paper gives no interval; we show it beside ours for comparison.

**Intervals.** Comparisons that share a stereotype are not independent (the same
stereotype is paired with several partners and templates), so intervals resample whole
stereotypes (clusters) with replacement: a cluster bootstrap (Field & Welsh 2007), with
percentile intervals from a generator seeded per subject, so a rerun gives identical
numbers. Rates use ``scipy.stats.bootstrap`` over cluster (wins, decided) totals; the
ranking refits Bradley–Terry on each resample.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_expit, ndtri

from monitor.metrics.intervals import estimated_measure
from monitor.records import Measure

RIDGE = 0.01
PAPER_RIDGE = 1.0 / math.log(10.0) ** 2
ELO_SCALE, ELO_BASE, ELO_INIT = 400.0, 10.0, 1000.0
RATE_RESAMPLES = 2000
RANKING_RESAMPLES = 200
# Fewer clusters than this and a bootstrap over them says little (percentile intervals of
# few clusters undercover, and a handful of identical clusters give a zero-width interval);
# the rate then gets a Wilson interval over the clusters' own rates instead.
MIN_BOOTSTRAP_CLUSTERS = 10


def subject_seed(*parts: str) -> int:
    """A stable 32-bit seed for one subject (benchmark, type, identity): the same subject
    gets the same bootstrap draws in every run, whatever else the run holds."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def bradley_terry(
    n_players: int,
    winners: np.ndarray,
    losers: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    ridge: float = RIDGE,
    start: np.ndarray | None = None,
) -> np.ndarray:
    """θ (length ``n_players``) maximising Σ w·log σ(θ_win − θ_lose) − ridge/2·Σθ².

    ``ridge`` must be > 0 unless every player has both a win and a loss inside one
    connected comparison graph (then the plain MLE exists; it is centred to Σθ = 0).
    """
    winners = np.asarray(winners, dtype=np.int64)
    losers = np.asarray(losers, dtype=np.int64)
    w = np.ones(len(winners)) if weights is None else np.asarray(weights, dtype=np.float64)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d = theta[winners] - theta[losers]
        value = -float(np.dot(w, log_expit(d))) + 0.5 * ridge * float(theta @ theta)
        g = w * expit(-d)  # d/dd of −log σ(d) is −σ(−d)
        grad = ridge * theta
        grad -= np.bincount(winners, weights=g, minlength=n_players)
        grad += np.bincount(losers, weights=g, minlength=n_players)
        return value, grad

    x0 = np.zeros(n_players) if start is None else np.asarray(start, dtype=np.float64)
    res = minimize(
        objective, x0, jac=True, method="L-BFGS-B", options={"maxiter": 1000, "gtol": 1e-10}
    )
    theta = res.x
    return theta - theta.mean()


def paper_elo(n_players: int, winners: np.ndarray, losers: np.ndarray) -> np.ndarray:
    """The Indic-Bias paper's Elo ratings of the same comparisons (see the module docstring)."""
    theta = bradley_terry(n_players, winners, losers, ridge=PAPER_RIDGE)
    return ELO_INIT + ELO_SCALE * theta / math.log(ELO_BASE)


@dataclass(frozen=True)
class ClusterRate:
    """k of n with a cluster-bootstrap percentile interval; ``clusters`` = G."""

    k: int
    n: int
    value: float | None
    ci_low: float | None
    ci_high: float | None
    clusters: int
    method: str
    widened: bool = False  # the percentile interval was extended to contain the estimate

    def measure(
        self,
        benchmark: str,
        axis: str,
        measure: str,
        *,
        definition: str,
        details: dict[str, object],
        method: str | None = None,
    ) -> Measure:
        """The rate as ``measure`` of ``axis``, with its interval (``method``: this rate's
        own, unless the caller words its clusters otherwise)."""
        return estimated_measure(
            benchmark,
            axis,
            measure,
            (self.k, self.n),
            (self.value, self.ci_low, self.ci_high),
            definition=definition,
            method=self.method if method is None else method,
            details=details,
        )


def cluster_rate(
    wins: Sequence[float],
    decided: Sequence[float],
    *,
    seed: int,
    confidence: float = 0.95,
    resamples: int = RATE_RESAMPLES,
) -> ClusterRate:
    """A share of decided pairs won, with an interval that resamples whole clusters.

    ``wins[g]``/``decided[g]``: cluster g's wins and decided pairs. Clusters with no
    decided pair carry no information and are dropped. With fewer than
    ``MIN_BOOTSTRAP_CLUSTERS`` clusters the interval is a Wilson interval with the number
    of clusters as n and the mean of their rates as the proportion: as if each cluster
    were one observation, which is conservative when pairs within a cluster agree.
    """
    w = np.asarray(wins, dtype=np.float64)
    n = np.asarray(decided, dtype=np.float64)
    keep = n > 0
    w, n = w[keep], n[keep]
    k_total, n_total = int(np.rint(w.sum())), int(np.rint(n.sum()))
    method = f"cluster-bootstrap-percentile (stereotype clusters, B={resamples})"
    if n_total == 0:
        return ClusterRate(0, 0, None, None, None, 0, method)
    value = k_total / n_total
    g = len(w)
    if g < MIN_BOOTSTRAP_CLUSTERS:
        lo, hi = wilson_fraction(float(np.mean(w / n)), g, confidence)
        return ClusterRate(
            k_total,
            n_total,
            value,
            min(lo, value),
            max(hi, value),
            g,
            f"cluster-level Wilson ({g} clusters: too few to bootstrap)",
            not (lo <= value <= hi),
        )
    if np.all(w / n == w[0] / n[0]):  # every cluster the same rate: nothing to resample
        return ClusterRate(k_total, n_total, value, value, value, g, method)
    # Imported here: this module is on drift's import path, where scipy.stats would cost
    # every command about 1.4 s.
    from scipy.stats import bootstrap

    res = bootstrap(
        (w, n),
        lambda a, b, axis=-1: a.sum(axis=axis) / b.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    widened = not (lo <= value <= hi)
    return ClusterRate(
        k_total, n_total, value, min(lo, value), max(hi, value), len(w), method, widened
    )


def wilson_fraction(p: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval for a proportion ``p`` observed over ``n`` units (``p``
    need not be a multiple of 1/n: here it is the mean of the clusters' rates)."""
    z = float(ndtri(0.5 + confidence / 2.0))  # norm.ppf, without importing scipy.stats
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Ranking:
    """Bradley–Terry strengths of ``players`` with cluster-bootstrap intervals, their
    ranks (1 = strongest) with intervals, and the paper's Elo of the same comparisons."""

    players: tuple[str, ...]
    theta: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    rank: np.ndarray
    rank_low: np.ndarray
    rank_high: np.ndarray
    elo: np.ndarray
    wins: np.ndarray
    comparisons: np.ndarray
    resamples: int
    method: str


def _ranks(theta: np.ndarray) -> np.ndarray:
    """1 = largest θ; ties share the better rank."""
    order = (-theta).argsort(kind="stable")
    ranks = np.empty(len(theta), dtype=np.int64)
    ranks[order] = np.arange(1, len(theta) + 1)
    return ranks


def rank_with_intervals(
    players: Sequence[str],
    winners: np.ndarray,
    losers: np.ndarray,
    clusters: np.ndarray,
    *,
    seed: int,
    confidence: float = 0.95,
    resamples: int = RANKING_RESAMPLES,
) -> Ranking:
    """Fit Bradley–Terry, then refit on ``resamples`` cluster-bootstrap resamples.

    ``clusters[c]`` is the cluster (stereotype) of comparison c; a resample draws as many
    clusters as there are, with replacement, and weights each comparison by how often its
    cluster was drawn.
    """
    p = len(players)
    winners, losers = np.asarray(winners), np.asarray(losers)
    labels, cluster_index = np.unique(np.asarray(clusters), return_inverse=True)
    theta = bradley_terry(p, winners, losers)
    rng = np.random.default_rng(seed)
    draws = np.empty((resamples, p))
    rank_draws = np.empty((resamples, p))
    g = len(labels)
    for b in range(resamples):
        counts = np.bincount(rng.integers(0, g, size=g), minlength=g).astype(np.float64)
        t = bradley_terry(p, winners, losers, counts[cluster_index], start=theta)
        draws[b] = t
        rank_draws[b] = _ranks(t)
    alpha = (1.0 - confidence) / 2.0
    lo = np.quantile(draws, alpha, axis=0)
    hi = np.quantile(draws, 1.0 - alpha, axis=0)
    rank_lo = np.floor(np.quantile(rank_draws, alpha, axis=0)).astype(np.int64)
    rank_hi = np.ceil(np.quantile(rank_draws, 1.0 - alpha, axis=0)).astype(np.int64)
    wins = np.bincount(winners, minlength=p)
    comparisons = wins + np.bincount(losers, minlength=p)
    ranks = _ranks(theta)
    return Ranking(
        players=tuple(players),
        theta=theta,
        ci_low=np.minimum(lo, theta),
        ci_high=np.maximum(hi, theta),
        rank=ranks,
        rank_low=np.minimum(rank_lo, ranks),
        rank_high=np.maximum(rank_hi, ranks),
        elo=paper_elo(p, winners, losers),
        wins=wins,
        comparisons=comparisons,
        resamples=resamples,
        method=(
            f"Bradley-Terry MLE (ridge {RIDGE}); cluster-bootstrap-percentile "
            f"(stereotype clusters, B={resamples})"
        ),
    )
