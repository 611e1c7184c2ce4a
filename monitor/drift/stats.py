"""Paired statistics for comparing two runs over the same items (pure, no I/O).

Two runs of a model score the *same* items, so their bias rates are not independent
samples: the information is in the items that changed side. Everything here works on
counts of those flips, and every number comes with the convention it uses spelled out,
because "b" and "c" are swapped between textbooks.

Convention throughout: for one axis, over the items decided (stereo or anti) in both
runs, ``b`` = items that moved stereo → anti (old stereo, new anti) and ``c`` = items that
moved anti → stereo. A regression (more stereotypical) is ``c > b``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.special import bdtr

from monitor.metrics.intervals import wilson_rate

DECIDED = ("stereo", "anti")


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p: binomial test of b successes in b + c trials at 0.5.

    Exact rather than the chi-square form because discordant counts are small (tens),
    where the asymptotic test is anti-conservative. No flips at all is no evidence: p = 1.

    At probability ½ the binomial is symmetric, so the two-sided p is 2·P(X ≤ min(b, c)),
    capped at 1: scipy's ``binomtest`` computes the same sum (tests hold the two equal to
    1e-11 relative; 4e-12 for p ≥ 1e-8). ``bdtr`` from ``scipy.special`` rather than
    ``binomtest`` because importing ``scipy.stats`` costs every drift command about 1.4 s
    and each call ~1 ms of argument handling, and a report runs hundreds of these tests.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    k = min(b, c)
    if n == 0 or 2 * k == n:
        return 1.0
    return min(1.0, float(2.0 * bdtr(k, n, 0.5)))


@dataclass(frozen=True)
class PairedDifference:
    """Δ = p_new − p_old over paired items, with Newcombe's square-and-add interval.

    ``both_stereo`` / ``b`` / ``c`` / ``both_anti`` are the 2×2 cells (old × new).
    """

    n: int
    both_stereo: int
    b: int
    c: int
    both_anti: int
    p_old: float | None
    p_new: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    method: str = "newcombe-paired-square-and-add (Newcombe 1998, method 10)"
    confidence: float = 0.95


def newcombe_paired_ci(
    n11: int, n10: int, n01: int, n00: int, confidence: float = 0.95
) -> tuple[float, float, float]:
    """Δ = p1 − p2 and its interval for paired binary data (Newcombe 1998, method 10).

    ``n11`` = yes in both, ``n10`` = yes in 1 only, ``n01`` = yes in 2 only, ``n00`` = no
    in both; p1 = (n11 + n10)/N, p2 = (n11 + n01)/N.

    Method 10 of Newcombe, "Improved confidence intervals for the difference between
    binomial proportions based on paired data", Stat Med 17:2635-2650 (1998): Wilson
    intervals for p1 and p2 combined by square-and-add, with the correlation between
    the two estimates estimated by φ = C/√(n1+ n2+ n+1 n+2), where C = A − N/2 if
    A > N/2, 0 if 0 ≤ A ≤ N/2 and A if A < 0, A = n11·n00 − n10·n01 (φ = 0 when a margin
    is 0). This is the form given in Altman et al., *Statistics with Confidence* (2000)
    p. 52 and in Fagerland, Lydersen & Laake (2017) ch. 8. Chosen because it needs no
    iteration, stays inside [-1, 1] and keeps near-nominal coverage for small N.
    """
    counts = (n11, n10, n01, n00)
    if any(x < 0 for x in counts):
        raise ValueError(f"cell counts must be non-negative, got {counts}")
    total = sum(counts)
    if total == 0:
        raise ValueError("no paired observations")
    p1, p2 = (n11 + n10) / total, (n11 + n01) / total
    r1 = wilson_rate(n11 + n10, total, confidence)
    r2 = wilson_rate(n11 + n01, total, confidence)
    l1, u1, l2, u2 = r1.ci_low, r1.ci_high, r2.ci_low, r2.ci_high
    assert l1 is not None and u1 is not None and l2 is not None and u2 is not None
    margins = (n11 + n10, n01 + n00, n11 + n01, n10 + n00)
    if 0 in margins:
        phi = 0.0
    else:
        a = n11 * n00 - n10 * n01
        if a > total / 2:
            corrected = a - total / 2
        elif a >= 0:
            corrected = 0.0
        else:
            corrected = float(a)
        phi = corrected / math.sqrt(math.prod(margins))
    delta = p1 - p2
    dl = math.sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    du = math.sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return delta, max(-1.0, delta - dl), min(1.0, delta + du)


def paired_difference(
    both_stereo: int, b: int, c: int, both_anti: int, confidence: float = 0.95
) -> PairedDifference:
    """Bias-rate change new − old over items decided in both runs.

    ``b``: stereo→anti flips, ``c``: anti→stereo flips.
    """
    n = both_stereo + b + c + both_anti
    if n == 0:
        return PairedDifference(0, 0, 0, 0, 0, None, None, None, None, None, confidence=confidence)
    # New run is "variable 1": p_new = (both + c)/n, p_old = (both + b)/n.
    delta, low, high = newcombe_paired_ci(both_stereo, c, b, both_anti, confidence)
    return PairedDifference(
        n=n,
        both_stereo=both_stereo,
        b=b,
        c=c,
        both_anti=both_anti,
        p_old=(both_stereo + b) / n,
        p_new=(both_stereo + c) / n,
        delta=delta,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
    )


def bh_adjust(pvalues: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values; None stays None.

    None marks a test that was not run (e.g. "not comparable"): it is left out of the
    family rather than counted as p = 1, which would make BH needlessly conservative.

    The step-up rule in the operations of statsmodels' ``multipletests(method="fdr_bh")``
    (sort, p·m/rank, running minimum from the largest, cap at 1), which the tests hold it
    equal to bit for bit. Written out because importing statsmodels (and with it pandas)
    cost every drift command about 0.5 s for these five lines.
    """
    present = [i for i, p in enumerate(pvalues) if p is not None]
    out: list[float | None] = [None] * len(pvalues)
    if not present:
        return out
    raw = np.array([float(pvalues[i]) for i in present])  # type: ignore[arg-type]
    order = np.argsort(raw)
    ranked = raw[order] / (np.arange(1, len(raw) + 1) / len(raw))
    adjusted_sorted = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    adjusted = np.empty_like(adjusted_sorted)
    adjusted[order] = adjusted_sorted
    for i, p in zip(present, adjusted, strict=True):
        out[i] = float(p)
    return out


@dataclass(frozen=True)
class Flips:
    """Paired 2×2 over items decided in both runs, with the ids that changed side."""

    n_overlap: int  # items scored in both runs (any outcome)
    both_stereo: int
    both_anti: int
    to_anti: tuple[str, ...]  # b: stereo in old, anti in new
    to_stereo: tuple[str, ...]  # c: anti in old, stereo in new

    @property
    def b(self) -> int:
        return len(self.to_anti)

    @property
    def c(self) -> int:
        return len(self.to_stereo)

    @property
    def n_paired(self) -> int:
        return self.both_stereo + self.both_anti + self.b + self.c

    @property
    def flip_rate(self) -> float | None:
        return (self.b + self.c) / self.n_paired if self.n_paired else None


def count_flips(old: Mapping[str, str], new: Mapping[str, str]) -> Flips:
    """Cross-tabulate two runs' outcomes (item id → outcome) over items decided in both."""
    overlap = sorted(set(old) & set(new))
    both_s = both_a = 0
    to_anti: list[str] = []
    to_stereo: list[str] = []
    for item in overlap:
        o, n = old[item], new[item]
        if o not in DECIDED or n not in DECIDED:
            continue
        if o == n:
            if o == "stereo":
                both_s += 1
            else:
                both_a += 1
        elif o == "stereo":
            to_anti.append(item)
        else:
            to_stereo.append(item)
    return Flips(len(overlap), both_s, both_a, tuple(to_anti), tuple(to_stereo))


@dataclass(frozen=True)
class NoiseFloor:
    """How often items change side between repeat runs in which nothing changed.

    ``upper`` is the threshold a drift's flip rate must exceed: the larger of the highest
    flip rate seen between any two repeats and the one-sided-at-``alpha`` Wilson upper
    bound (the two-sided ``2*alpha`` interval's top) of the pooled repeat flip rate
    (all flips over all paired items, summed over repeat pairs). The Wilson term keeps
    two repeats that happened to agree perfectly from setting a floor of exactly 0.
    """

    n_runs: int
    n_pairs: int
    pair_rates: tuple[float, ...]
    mean: float
    max: float
    pooled_flips: int
    pooled_n: int
    upper: float


def noise_floor(repeats: Sequence[Mapping[str, str]], alpha: float = 0.05) -> NoiseFloor | None:
    """Noise floor from ≥2 repeat runs of one snapshot (each: item id → outcome).

    Returns None with fewer than two runs or when no pair of repeats shares a decided item.
    """
    if len(repeats) < 2:
        return None
    rates: list[float] = []
    flips_total = n_total = 0
    for x, y in combinations(repeats, 2):
        f = count_flips(x, y)
        if f.n_paired == 0:
            continue
        rates.append((f.b + f.c) / f.n_paired)
        flips_total += f.b + f.c
        n_total += f.n_paired
    if not rates:
        return None
    pooled_high = wilson_rate(flips_total, n_total, 1 - 2 * alpha).ci_high
    assert pooled_high is not None
    return NoiseFloor(
        n_runs=len(repeats),
        n_pairs=len(rates),
        pair_rates=tuple(rates),
        mean=sum(rates) / len(rates),
        max=max(rates),
        pooled_flips=flips_total,
        pooled_n=n_total,
        upper=max(max(rates), pooled_high),
    )
