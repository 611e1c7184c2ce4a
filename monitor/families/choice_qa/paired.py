"""Paired tests for two runs of choice questions, with templates as clusters (pure).

Two runs answered the same questions; per question the answer may have moved. The items
of one template are not independent (a model that changes its mind about a template
tends to do so for every filled copy), so the unit every test and interval resamples is
the **template**, as the family's per-run intervals are.

* **Sign-flip over templates.** Under "nothing changed" the two runs' answers to a
  template are exchangeable: swapping them (the whole template at once) leaves the
  distribution unchanged. A statistic's null distribution is its value over swap
  patterns: all 2^T when there are at most 9,999 of them, else 9,999 random patterns from
  a fixed seed (``+1`` adjustment, as ``monitor.drift.deltas``). Each template's counts
  are summed once, so a pattern costs one matrix product.
* **Bias-score change.** A run's bias score is a function of summed counts (biased,
  counter-biased, unknown answers, items), so Δ = f(new) − f(old) is tested by the
  sign-flip above (two-sided) and gets a paired cluster-bootstrap interval (templates
  drawn with replacement, both runs' counts of a drawn template together; percentile).
* **Where the answers went: Stuart–Maxwell.** The 3 × 3 table of old × new answer role
  (stereotyped group, other group, unknown) has homogeneous margins when nothing changed.
  The Stuart–Maxwell statistic d′S⁻¹d (d: row − column margins of two roles, S their
  covariance under marginal homogeneity) is reported with its asymptotic χ²(2) p, and
  the p the verdict uses is the sign-flip over templates of the same statistic: swapping
  a template transposes its part of the table, which flips its d and leaves S alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.special import chdtrc

N_RESAMPLES = 9_999
N_BOOTSTRAP = 2_000
SEED = 20260126

Statistic = Callable[[np.ndarray], np.ndarray]  # (..., K) summed counts -> (...) values


@cache
def _patterns(t: int) -> tuple[np.ndarray, bool]:
    """0/1 swap patterns over ``t`` templates (1 = swap): all, or 9,999 seeded; exact?"""
    if 2**t <= N_RESAMPLES:
        return ((np.arange(2**t)[:, None] >> np.arange(t)) & 1).astype(np.float64), True
    rng = np.random.default_rng(SEED)
    return rng.integers(0, 2, size=(N_RESAMPLES, t)).astype(np.float64), False


def _two_sided_p(null: np.ndarray, observed: float, *, exact: bool) -> float:
    tol = abs(observed) * 1e-12 + 1e-15
    extreme = int(np.count_nonzero(np.abs(null) >= abs(observed) - tol))
    adjustment = 0 if exact else 1
    return float(min(1.0, (extreme + adjustment) / (len(null) + adjustment)))


@dataclass(frozen=True)
class ScoreChange:
    """Δ of a statistic of summed counts between two runs over the same items."""

    old: float | None
    new: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    null_sd: float | None  # sd of Δ under the sign-flip null (for the MDE)
    n_templates: int


def score_change(
    old: np.ndarray, new: np.ndarray, stat: Statistic, *, confidence: float, seed: int = SEED
) -> ScoreChange:
    """Δ = stat(Σ new) − stat(Σ old) over templates (rows of ``old``/``new``, shape T × K),
    with its sign-flip p and paired cluster-bootstrap interval; None parts where the
    statistic is undefined in a run (e.g. no non-unknown answer)."""
    t = old.shape[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        a, b = float(stat(old.sum(axis=0))), float(stat(new.sum(axis=0)))
    a_ok, b_ok = np.isfinite(a), np.isfinite(b)
    if not (a_ok and b_ok) or t == 0:
        return ScoreChange(
            a if a_ok else None, b if b_ok else None, None, None, None, None, None, t
        )
    delta = b - a
    diff = new - old
    patterns, exact = _patterns(t)
    swapped = patterns @ diff  # how much each pattern moves from new to old
    with np.errstate(invalid="ignore", divide="ignore"):
        null = stat(new.sum(axis=0) - swapped) - stat(old.sum(axis=0) + swapped)
    null = np.where(np.isfinite(null), null, 0.0)
    p = 1.0 if not np.any(diff) else _two_sided_p(null, delta, exact=exact)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, t, size=(N_BOOTSTRAP, t))
    counts = np.zeros((N_BOOTSTRAP, t))
    np.add.at(counts, (np.arange(N_BOOTSTRAP)[:, None], draws), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = stat(counts @ new) - stat(counts @ old)
    boot = boot[np.isfinite(boot)]
    low = high = None
    if len(boot) and t >= 2:
        tail = (1 - confidence) / 2
        low, high = (float(x) for x in np.quantile(boot, [tail, 1 - tail]))
    return ScoreChange(a, b, delta, low, high, p, float(np.std(null)), t)


@dataclass(frozen=True)
class StuartMaxwell:
    """Marginal homogeneity of a 3 × 3 old × new table (see the module docstring)."""

    table: tuple[tuple[int, ...], ...]
    statistic: float
    p_asymptotic: float  # χ²(2), items as independent
    p_value: float  # sign-flip over templates of the same statistic
    n_templates: int
    exact: bool


def _quadratic(d: np.ndarray, s_inv: np.ndarray) -> np.ndarray:
    return np.einsum("...i,ij,...j->...", d, s_inv, d)


def stuart_maxwell(per_template: np.ndarray) -> StuartMaxwell:
    """The test on ``per_template`` (T × 3 × 3 counts: template, old role, new role)."""
    table = per_template.sum(axis=0)
    t = per_template.shape[0]
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    d_t = (per_template.sum(axis=2) - per_template.sum(axis=1))[:, :2]  # T × 2
    d = d_t.sum(axis=0)
    s = np.empty((2, 2))
    for i in range(2):
        for j in range(2):
            s[i, j] = (
                rows[i] + cols[i] - 2 * table[i, i] if i == j else -(table[i, j] + table[j, i])
            )
    frozen = tuple(tuple(int(x) for x in r) for r in table)
    if not np.any(d) or np.linalg.matrix_rank(s) == 0:
        return StuartMaxwell(frozen, 0.0, 1.0, 1.0, t, True)
    s_inv = np.linalg.pinv(s)
    observed = float(_quadratic(d, s_inv))
    rank = int(np.linalg.matrix_rank(s))
    patterns, exact = _patterns(t)
    signs = 1.0 - 2.0 * patterns  # swapping a template flips its d
    null = _quadratic(signs @ d_t, s_inv)
    tol = observed * 1e-12 + 1e-15
    adjustment = 0 if exact else 1
    p = (int(np.count_nonzero(null >= observed - tol)) + adjustment) / (len(null) + adjustment)
    return StuartMaxwell(frozen, observed, float(chdtrc(rank, observed)), float(p), t, exact)
