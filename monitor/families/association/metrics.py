"""Embedding association tests (WEAT, and SEAT, which is WEAT on sentences): pure statistics.

Caliskan, Bryson & Narayanan, "Semantics derived automatically from language corpora
contain human-like biases", Science 356 (2017). For target sets X, Y and attribute sets
A, B of embeddings:

* ``s(w, A, B) = mean_{a∈A} cos(w, a) − mean_{b∈B} cos(w, b)`` for every target word w;
* effect size ``d = (mean_{x∈X} s(x,A,B) − mean_{y∈Y} s(y,A,B)) / SD_{w∈X∪Y} s(w,A,B)``.

The standard deviation convention is not the same everywhere and changes d, so it is a
parameter (``ddof``) and part of the metric's name: ``ddof=1`` (the sample SD) is what
SEAT (May et al. 2019) and bias-bench compute; ``ddof=0`` (the population SD,
``np.std``'s default) is what the SocHindi notebook (Malik et al. 2022) computes.

p is one-sided (H1: X is more associated with A, relative to B, than Y is): the share
of partitions (X', Y') of X ∪ Y with |X'| = |X| whose statistic is at least the
observed one. For any set sizes, ``Σ_{X'} s − Σ_{Y'} s`` and ``mean_{X'} − mean_{Y'}`` are
both increasing functions of ``Σ_{X'} s`` (the total over X ∪ Y is fixed), so the sum
over X' is the test statistic, and unequal sizes need nothing special. When there are at
most ``EXACT_LIMIT`` partitions every one is enumerated (an exact test); otherwise
``MC_DRAWS`` random partitions are drawn from a seeded generator and p = (1 + hits) /
(draws + 1), which never reports an impossible p = 0 (Phipson & Smyth 2010).

The interval for d is a stratified bootstrap over target words: X and Y are resampled
separately, the attribute sets stay fixed (the same conditioning as the permutation
test), BCa (scipy), percentile where BCa is undefined. Uncertainty from the choice of
attribute words is therefore not in the interval; a test with two attribute words per
set (SocHindi 15) should be read with that in mind.

Every random draw comes from a generator seeded by what is tested (benchmark, test and
item ids), so the same rows always give the same p and interval. Nothing here does I/O.

The family's metric specs are :func:`metric_specs` (``FAMILY.metrics``, read by the
registry).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from monitor.metrics.registry import ItemNumbers
from monitor.records import Measure, ScoreRow

if TYPE_CHECKING:
    from monitor.contract.family import Family
    from monitor.metrics.registry import MetricSpec

WEAT = "weat"
WEAT_VERSION = "1"
WEAT_POPULATION_SD = "weat-population-sd"
WEAT_POPULATION_SD_VERSION = "1"

EFFECT_SIZE = "effect_size"
ROLES = ("X", "Y", "A", "B")
TARGET_ROLES = ("X", "Y")
MISSING_OUTCOME = "other"  # a term the model could not embed (out of its vocabulary)

EXACT_LIMIT = 50_000  # enumerate every partition up to this many (C(18, 9) = 48,620)
MC_DRAWS = 20_000  # random partitions otherwise: p resolution 1/20,001
BOOTSTRAP_RESAMPLES = 2_000
CONFIDENCE = 0.95
_CHUNK = 2_000  # partitions evaluated per numpy block (bounded memory)


# --- embeddings to per-word numbers ---------------------------------------------------


def cosine_matrix(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cosine similarity of every row of ``u`` with every row of ``v`` (float64)."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    un = np.linalg.norm(u, axis=1, keepdims=True)
    vn = np.linalg.norm(v, axis=1, keepdims=True)
    if (un == 0).any() or (vn == 0).any():
        raise ValueError("a zero vector has no cosine similarity")
    return (u / un) @ (v / vn).T


def association(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``s(w, A, B)`` for every row ``w``: mean cosine with A minus mean cosine with B."""
    return cosine_matrix(w, a).mean(axis=1) - cosine_matrix(w, b).mean(axis=1)


# --- the statistics ---------------------------------------------------------------


def effect_size(sx: Sequence[float], sy: Sequence[float], ddof: int = 1) -> float | None:
    """WEAT's d from the targets' ``s(w, A, B)`` values; None when undefined (a set is
    empty, or every target has the same association so the SD is 0)."""
    x = np.asarray(sx, dtype=np.float64)
    y = np.asarray(sy, dtype=np.float64)
    if len(x) == 0 or len(y) == 0 or len(x) + len(y) <= ddof:
        return None
    pooled = np.concatenate([x, y])
    sd = float(np.std(pooled, ddof=ddof))
    if not sd > 1e-12 * max(1.0, float(np.abs(pooled).max())):  # equal up to rounding
        return None
    return float((x.mean() - y.mean()) / sd)


@dataclass(frozen=True)
class PermutationTest:
    """One-sided permutation p and how it was obtained."""

    p: float
    method: str  # "exact" | "monte-carlo"
    partitions: int  # C(|X| + |Y|, |X|): how many partitions exist
    evaluated: int  # how many were evaluated (all, or the draws)


def _hits(values: np.ndarray, subsets: np.ndarray, observed: float, tol: float) -> int:
    return int((values[subsets].sum(axis=1) >= observed - tol).sum())


def permutation_test(
    sx: Sequence[float],
    sy: Sequence[float],
    *,
    seed: int,
    exact_limit: int = EXACT_LIMIT,
    draws: int = MC_DRAWS,
) -> PermutationTest:
    """P(statistic of a random equal-size-preserving partition ≥ observed); see the module
    docstring. Ties count as "at least as large" (conservative), with a tolerance of
    1e-12 of the values' scale so two orders of the same float sum never differ."""
    x = np.asarray(sx, dtype=np.float64)
    y = np.asarray(sy, dtype=np.float64)
    nx, n = len(x), len(x) + len(y)
    if nx == 0 or len(y) == 0:
        raise ValueError("both target sets need at least one scored word")
    values = np.concatenate([x, y])
    observed = float(x.sum())
    tol = 1e-12 * (float(np.abs(values).sum()) + 1.0)
    partitions = math.comb(n, nx)
    if partitions <= exact_limit:
        hits = 0
        combos = itertools.combinations(range(n), nx)
        while block := list(itertools.islice(combos, _CHUNK)):
            hits += _hits(values, np.array(block, dtype=np.intp), observed, tol)
        return PermutationTest(hits / partitions, "exact", partitions, partitions)
    rng = np.random.default_rng(seed)
    hits, done = 0, 0
    while done < draws:
        m = min(_CHUNK, draws - done)
        # argpartition of uniform keys: the first nx positions are a uniform random subset.
        subsets = np.argpartition(rng.random((m, n)), nx - 1, axis=1)[:, :nx]
        hits += _hits(values, subsets, observed, tol)
        done += m
    return PermutationTest((1 + hits) / (draws + 1), "monte-carlo", partitions, draws)


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str  # "bca" | "percentile" | ... ; "+widened" when it was stretched to d
    widened: bool = False


def _d_vectorised(ddof: int):
    def statistic(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        pooled = np.concatenate([x, y], axis=axis)
        sd = np.std(pooled, axis=axis, ddof=ddof)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (np.mean(x, axis=axis) - np.mean(y, axis=axis)) / sd

    return statistic


def bootstrap_interval(
    sx: Sequence[float],
    sy: Sequence[float],
    *,
    ddof: int,
    seed: int,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> Interval | None:
    """Stratified bootstrap interval for d (see the module docstring); None when d itself
    is undefined or a set has fewer than two words (nothing to resample)."""
    x = np.asarray(sx, dtype=np.float64)
    y = np.asarray(sy, dtype=np.float64)
    d = effect_size(x, y, ddof)
    if d is None or len(x) < 2 or len(y) < 2:
        return None
    # Imported here, not at the top: this module is on drift's import path (via the metric
    # registry), where scipy.stats would cost every command about 1.4 s.
    from scipy import stats

    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degenerate resamples: judged by the result
            res = stats.bootstrap(
                (x, y),
                _d_vectorised(ddof),
                n_resamples=resamples,
                confidence_level=confidence,
                method=method,
                vectorized=True,
                rng=np.random.default_rng(seed),
            )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            # A bootstrap interval of a bounded, biased statistic can, rarely, miss its own
            # estimate; it is then stretched to reach d, and says so.
            widened = not low <= d <= high
            return Interval(min(low, d), max(high, d), method.lower(), widened)
    return None


class PairedDelta(NamedTuple):
    """Δd with its paired bootstrap interval, two-sided p and the bootstrap SD of Δd (the
    standard error the minimum detectable change is computed from); None where undefined."""

    delta: float | None
    interval: Interval | None
    p_value: float | None
    sd: float | None


MDE_POWER = 0.80
MDE_METHOD = (
    "(z_{1-alpha/2} + z_0.80) x the paired bootstrap SD of the change in d "
    "(normal approximation of the bootstrap test)"
)


def detectable_d_change(sd: float | None, alpha: float, power: float = MDE_POWER) -> float | None:
    """The smallest |Δd| the paired bootstrap test detects with ``power`` at two-sided level
    ``alpha``, in the normal approximation: (z_{1−α/2} + z_power) · SD(Δd*). The test
    rejects when |Δd| clears the spread of the centred replicates, about z_{1−α/2} · SD;
    a true change of this size does so in ``power`` of repeated comparisons. ``alpha`` is
    the false discovery rate used as a per-test level, before BH, as for the pair axes'
    MDE. 0 when the runs' words moved in lockstep (the paired spread is 0): then any
    change is detected."""
    if sd is None or not math.isfinite(sd):
        return None
    z = NormalDist().inv_cdf
    return float((z(1 - alpha / 2) + z(power)) * sd)


def paired_difference(
    old: tuple[Sequence[float], Sequence[float]],
    new: tuple[Sequence[float], Sequence[float]],
    *,
    ddof: int,
    seed: int,
    confidence: float = CONFIDENCE,
    resamples: int = BOOTSTRAP_RESAMPLES,
) -> PairedDelta:
    """Δd = d_new − d_old over the same target words, its paired bootstrap interval, a
    two-sided bootstrap p and the replicates' SD.

    ``old``/``new`` are (X values, Y values) with position i of each naming the same word
    in both runs. Each replicate resamples word indices within X and within Y once and
    applies them to both runs, so what the words share cancels. p = (1 + #{|Δ* − Δ| ≥
    |Δ|}) / (B + 1) (the centred bootstrap test of Δ = 0); identical runs give Δ = 0,
    p = 1 and a zero-width interval.
    """
    ox, oy = (np.asarray(v, dtype=np.float64) for v in old)
    nx_, ny_ = (np.asarray(v, dtype=np.float64) for v in new)
    if len(ox) != len(nx_) or len(oy) != len(ny_):
        raise ValueError("paired runs need the same target words in the same order")
    d_old, d_new = effect_size(ox, oy, ddof), effect_size(nx_, ny_, ddof)
    if d_old is None or d_new is None:
        return PairedDelta(None, None, None, None)
    delta = d_new - d_old
    if len(ox) < 2 or len(oy) < 2:
        return PairedDelta(delta, None, None, None)
    rng = np.random.default_rng(seed)
    ix = rng.integers(0, len(ox), size=(resamples, len(ox)))
    iy = rng.integers(0, len(oy), size=(resamples, len(oy)))
    stat = _d_vectorised(ddof)
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = stat(nx_[ix], ny_[iy], axis=1) - stat(ox[ix], oy[iy], axis=1)
    reps = reps[np.isfinite(reps)]
    if len(reps) < resamples // 2:
        return PairedDelta(delta, None, None, None)
    sd = float(np.std(reps, ddof=1))
    alpha = 1 - confidence
    low, high = (float(v) for v in np.quantile(reps, [alpha / 2, 1 - alpha / 2]))
    widened = not low <= delta <= high
    interval = Interval(min(low, delta), max(high, delta), "paired-percentile", widened)
    if delta == 0:
        return PairedDelta(delta, interval, 1.0, sd)
    extreme = int((np.abs(reps - delta) >= abs(delta)).sum())
    return PairedDelta(delta, interval, (1 + extreme) / (len(reps) + 1), sd)


def seed_for(*parts: object) -> int:
    """A 63-bit seed from what is tested, so the same items always draw the same numbers."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1


# --- aggregation: stored per-term rows -> one effect size per test --------------------


@dataclass
class _Test:
    values: dict[str, list[tuple[str, float]]] = field(default_factory=lambda: defaultdict(list))
    listed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    missing: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    repeats: list[str] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    source_roles: dict[str, str] = field(default_factory=dict)  # scored role -> file's role


def definition(ddof: int) -> str:
    sd = "sample SD (ddof=1; SEAT, bias-bench)" if ddof else "population SD (ddof=0; SocHindi)"
    return (
        "WEAT effect size d = (mean over X of s(x,A,B) - mean over Y of s(y,A,B)) / SD over "
        f"X∪Y of s(w,A,B), {sd}; s(w,A,B) = mean cos(w,a) - mean cos(w,b). One-sided "
        f"permutation p (exact up to {EXACT_LIMIT:,} partitions, else {MC_DRAWS:,} seeded "
        "draws with +1); 95% stratified bootstrap interval over target words (BCa, "
        f"{BOOTSTRAP_RESAMPLES:,} resamples, attribute sets fixed). Terms a model cannot "
        "embed are left out and listed."
    )


def _collect(rows: Iterable[ScoreRow], item_axes: Mapping[str, tuple[str, str]]):
    tests: dict[tuple[str, str], _Test] = defaultdict(_Test)
    for row in sorted(rows, key=lambda r: r.item_id):
        try:
            key = item_axes[row.item_id]
        except KeyError:
            raise ValueError(f"score row for item {row.item_id} has no benchmark/test") from None
        role = row.details.get("role")
        if role not in ROLES:
            raise ValueError(f"score row for item {row.item_id} has no word-set role")
        t = tests[key]
        t.listed[role] += 1
        if row.details.get("occurrence", 0):
            t.repeats.append(row.item_id)
        if row.details.get("shared_with"):
            t.shared.append(row.item_id)
        if row.details.get("source_role", role) != role:
            t.source_roles[role] = row.details["source_role"]
        if row.outcome == MISSING_OUTCOME or row.delta is None:
            t.missing[role].append(row.item_id)
        else:
            t.values[role].append((row.item_id, float(row.delta)))
    return tests


def test_result(
    key: tuple[str, str], t: _Test, *, ddof: int, metric_version: str
) -> tuple[float | None, float | None, Interval | None, dict[str, Any], str]:
    """(d, p, interval, details, method) for one test's collected rows."""
    sx = [v for _, v in t.values["X"]]
    sy = [v for _, v in t.values["Y"]]
    ids = sorted(i for role in TARGET_ROLES for i, _ in t.values[role])
    seed = seed_for(key[0], key[1], metric_version, *ids)
    d = effect_size(sx, sy, ddof)
    details: dict[str, Any] = {
        "ddof": ddof,
        "n_listed": {r: t.listed[r] for r in ROLES},
        "n_used": {r: len(t.values[r]) for r in ROLES},
        "missing": {r: t.missing[r] for r in ROLES if t.missing[r]},
        "n_missing": sum(len(v) for v in t.missing.values()),
        "repeated_terms": t.repeats,
        "shared_terms": t.shared,
        "seed": seed,
    }
    if t.source_roles:  # the file listed these sets in other roles (SocHindi 12-14, 17)
        details["roles_from_file"] = dict(sorted(t.source_roles.items()))
    if d is None:
        details["undefined"] = "a target set has no embedded word, or every s(w,A,B) is equal"
        return None, None, None, details, "undefined"
    perm = permutation_test(sx, sy, seed=seed)
    interval = bootstrap_interval(sx, sy, ddof=ddof, seed=seed)
    details.update(
        {
            "mean_s_X": float(np.mean(sx)),
            "mean_s_Y": float(np.mean(sy)),
            "p_method": perm.method,
            "partitions": perm.partitions if perm.partitions < 2**53 else float(perm.partitions),
            "permutations_evaluated": perm.evaluated,
            "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
        }
    )
    method = f"{perm.method}-permutation"
    if interval is not None:
        details["interval_method"] = interval.method
        if interval.widened:
            details["interval_widened_to_estimate"] = True
        method += f"+{interval.method}-bootstrap"
    return d, perm.p, interval, details, method


def association_measures(
    rows: Iterable[ScoreRow],
    item_axes: Mapping[str, tuple[str, str]],
    *,
    ddof: int,
    metric_version: str,
) -> list[Measure]:
    """One ``effect_size`` measure per (benchmark, test), with Holm- and BH-adjusted p
    across the tests of the run in ``details`` (statsmodels)."""
    tests = _collect(rows, item_axes)
    out: list[Measure] = []
    for key in sorted(tests):
        d, p, interval, details, method = test_result(
            key, tests[key], ddof=ddof, metric_version=metric_version
        )
        out.append(
            Measure(
                benchmark=key[0],
                axis=key[1],
                measure=EFFECT_SIZE,
                k=None,
                n=details["n_used"]["X"] + details["n_used"]["Y"],
                value=d,
                ci_low=interval.low if interval else None,
                ci_high=interval.high if interval else None,
                definition=definition(ddof),
                kind="effect_size",
                p_value=p,
                method=method,
                confidence=CONFIDENCE,
                details=details,
            )
        )
    tested = [i for i, m in enumerate(out) if m.p_value is not None]
    if tested:
        # Imported here for the reason given in bootstrap_interval (statsmodels loads pandas).
        from statsmodels.stats.multitest import multipletests

        raw = [out[i].p_value for i in tested]
        holm = multipletests(raw, method="holm")[1]
        bh = multipletests(raw, method="fdr_bh")[1]
        for i, ph, pb in zip(tested, holm, bh, strict=True):
            out[i].details.update({"p_holm": float(ph), "p_bh": float(pb), "n_tests": len(raw)})
    return out


def weat_measures(rows: Iterable[ScoreRow], item_axes: Mapping[str, tuple[str, str]]):
    """Aggregate of metric ``weat``: sample SD (ddof=1)."""
    return association_measures(rows, item_axes, ddof=1, metric_version=WEAT_VERSION)


def weat_population_sd_measures(rows: Iterable[ScoreRow], item_axes: Mapping[str, tuple[str, str]]):
    """Aggregate of metric ``weat-population-sd``: population SD (ddof=0)."""
    return association_measures(rows, item_axes, ddof=0, metric_version=WEAT_POPULATION_SD_VERSION)


METRIC_DDOF = {WEAT: 1, WEAT_POPULATION_SD: 0}

# Association tests: delta = s(w, A, B) for a target word (mean cosine with A minus mean
# cosine with B), s(a, X, Y) for an attribute word. A term the model cannot embed (out of
# a static vocabulary) is stored with outcome 'other' and no delta, and listed per test.
ASSOCIATION_SCORES = ItemNumbers("association s(w, A, B)", ("delta",), unless_outcome_in=("other",))


def metric_specs(family: Family) -> list[MetricSpec]:
    """The family's metrics, each naming ``family`` (``MetricSpec`` is imported here so
    that this module loads without the metric registry)."""
    from monitor.metrics.registry import MetricSpec

    return [
        MetricSpec(
            WEAT,
            WEAT_VERSION,
            "WEAT/SEAT effect size d with the sample SD (ddof=1, as SEAT and bias-bench), "
            "one-sided permutation p, bootstrap interval over target words",
            family,
            ASSOCIATION_SCORES,
            weat_measures,
            "embeddings",
            needs="embeddings",
        ),
        MetricSpec(
            WEAT_POPULATION_SD,
            WEAT_POPULATION_SD_VERSION,
            "WEAT/SEAT effect size d with the population SD (ddof=0, as the SocHindi "
            "notebook); otherwise as weat",
            family,
            ASSOCIATION_SCORES,
            weat_population_sd_measures,
            "embeddings",
            needs="embeddings",
        ),
    ]
