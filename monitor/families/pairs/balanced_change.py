"""The balanced change: the paired change of the balanced rate between two runs (pure).

Where an axis's stereotypes name two or more groups (``balanced``), drift tests the
change of the **balanced rate** instead of the raw rate, so that a model that only came
to like one group's name better is not flagged: items are paired across the runs (the
same item decided in both), each direction's paired change Δ_d = p_new − p_old is
computed over its own paired items, and the balanced change is their mean. Then

* the interval: each direction's Newcombe paired interval (``drift.stats``), widened by
  √(design effect) of its items' shared templates (``drift.clusters``), combined by MOVER
  (square-and-add of the half-widths over the number of directions), as the per-run
  balanced rate is;
* the p-value: the balanced change over its randomisation standard error under no
  change, Σ over templates of (Σ_i w_i d_i)², where w_i = 1 / (K · n_d) is the item's
  weight in the mean and d_i its change (−1, 0, +1): the large-sample form of the
  sign-flip test over templates (a template's changes flip sign together under the
  null), two-sided normal;
* the minimum detectable change: the smallest |Δ| this test detects with 80% power at
  level α, its variance Σ_d deff_d · max(ψ_d, |Δ|) / (K² n_d), ψ_d the direction's
  observed discordance (a change cannot be smaller than the discordance it implies, as
  in ``drift.power``);
* the **name-preference part** of the raw change: raw paired change − balanced change,
  in points: what the raw headline moved that the stereotype did not.

:func:`balanced_change` takes plain outcome maps, so any metric of the panel (cll, ull,
cll-reference) can be read on the same quantity: a robustness label across the panel
calls it once per metric with that metric's outcomes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from monitor.drift.clusters import design_effect, widen
from monitor.drift.power import POWER, DetectableChange
from monitor.drift.stats import paired_difference
from monitor.families.pairs.balanced import (
    MIN_DIRECTION_ITEMS,
    BalancedRate,
    balanced_rate,
    mover,
    split,
)

DECIDED = ("stereo", "anti")


@dataclass(frozen=True)
class DirectionChange:
    """One direction's paired change: ``n`` items decided in both runs, ``b`` stereo→anti
    and ``c`` anti→stereo of them, the rates over those items, Δ with its Newcombe
    interval widened by the template design effect."""

    group: str
    n: int
    b: int
    c: int
    rate_old: float
    rate_new: float
    delta: float
    ci_low: float
    ci_high: float
    design_effect: float = 1.0


@dataclass(frozen=True)
class BalancedChange:
    """The balanced change of one axis between two runs (see the module's docstring).

    ``rate_old``/``rate_new``: each run's balanced rate over all its decided items;
    ``delta``: the paired balanced change (mean of ``directions``' Δ) with its interval
    and ``p_value``; ``raw_delta``: the raw paired change over every paired item;
    ``name_preference_part`` = raw_delta − delta; ``detectable``: the MDE of the test.
    """

    rate_old: BalancedRate | None
    rate_new: BalancedRate | None
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    directions: tuple[DirectionChange, ...]
    raw_delta: float | None
    name_preference_part: float | None
    detectable: DetectableChange
    n_paired: int  # paired items in the counted directions
    n_outside: int  # paired items counted in the raw change only
    confidence: float = 0.95
    method: str = (
        "mean of per-direction paired changes; MOVER over Newcombe intervals widened by "
        "the template design effect; z over the sign-flip variance across templates"
    )

    @property
    def sign(self) -> int:
        """+1 towards the stereotype, −1 away from it, 0 no change."""
        return (self.delta > 0) - (self.delta < 0)


def balanced_change(
    old: Mapping[str, str],
    new: Mapping[str, str],
    direction: Mapping[str, str],
    templates: Mapping[str, str],
    *,
    confidence: float = 0.95,
    alpha: float = 0.05,
    raw_delta: float | None = None,
    minimum: int = MIN_DIRECTION_ITEMS,
) -> BalancedChange | None:
    """The paired balanced change from ``old`` to ``new`` (item id → outcome, one metric's
    outcomes on one axis), or None where the paired items are not separable (fewer than
    two directions with ``minimum`` items decided in both runs).

    ``direction``: item id → the group its stereotype names (``balanced.directions``);
    ``templates``: item id → template (items sharing one are a cluster); ``raw_delta``:
    the raw paired change, for the name-preference part (computed here when None)."""
    paired = [i for i in old if i in new and old[i] in DECIDED and new[i] in DECIDED]
    parts = split(paired, direction, minimum)
    if not parts.separable:
        return None
    if raw_delta is None and paired:
        raw_delta = sum((new[i] == "stereo") - (old[i] == "stereo") for i in paired) / len(paired)
    k = len(parts.by_group)
    changes: list[DirectionChange] = []
    clusters: dict[str, float] = {}
    variance_terms = []  # per direction: (deff, discordance, n) for the MDE
    for group, ids in parts.by_group.items():
        d = {i: int(new[i] == "stereo") - int(old[i] == "stereo") for i in ids}
        both_s = sum(1 for i in ids if old[i] == new[i] == "stereo")
        b = sum(1 for v in d.values() if v < 0)
        c = sum(1 for v in d.values() if v > 0)
        pd = paired_difference(both_s, b, c, len(ids) - both_s - b - c, confidence)
        assert pd.delta is not None and pd.ci_low is not None and pd.ci_high is not None
        assert pd.p_old is not None and pd.p_new is not None
        deff = design_effect(d, templates).design_effect
        low, high = widen(pd.delta, pd.ci_low, pd.ci_high, deff)
        changes.append(
            DirectionChange(group, len(ids), b, c, pd.p_old, pd.p_new, pd.delta, low, high, deff)
        )
        weight = 1.0 / (k * len(ids))
        for i, v in d.items():
            key = templates.get(i, f"item:{i}")
            clusters[key] = clusters.get(key, 0.0) + weight * v
        variance_terms.append((deff, (b + c) / len(ids), len(ids)))
    delta, low, high = mover([(c.delta, c.ci_low, c.ci_high) for c in changes], -1.0, 1.0)
    delta = 0.0 if abs(delta) < 1e-12 else delta  # +x and −x that do not cancel in floats
    null_var = sum(t * t for t in clusters.values())
    p = 1.0 if null_var == 0 else float(2 * ndtr(-abs(delta) / math.sqrt(null_var)))
    n = sum(c.n for c in changes)
    deff_all = sum(c.design_effect * c.n for c in changes) / n
    return BalancedChange(
        rate_old=balanced_rate(old, direction, templates, confidence, minimum),
        rate_new=balanced_rate(new, direction, templates, confidence, minimum),
        delta=delta,
        ci_low=low,
        ci_high=high,
        p_value=min(1.0, p),
        directions=tuple(changes),
        raw_delta=raw_delta,
        name_preference_part=None if raw_delta is None else raw_delta - delta,
        detectable=_detectable(variance_terms, k, n, deff_all, alpha),
        n_paired=n,
        n_outside=len(paired) - n,
        confidence=confidence,
    )


def _detectable(
    terms: list[tuple[float, float, int]], k: int, n: int, deff: float, alpha: float
) -> DetectableChange:
    """The balanced change's MDE at 80% power (normal approximation, see the module)."""
    z = float(ndtri(1 - alpha / 2) + ndtri(POWER))

    def shortfall(delta: float) -> float:
        var = sum(f * max(psi, delta) / (k * k * m) for f, psi, m in terms)
        return delta - z * math.sqrt(var)

    mde = None if shortfall(1.0) < 0 else float(brentq(shortfall, 1e-12, 1.0, xtol=1e-9))
    discordance = sum(psi * m for _, psi, m in terms) / n
    return DetectableChange(
        mde=mde,
        n=n,
        n_effective=max(1, round(n / deff)),
        discordance=discordance,
        alpha=alpha,
        method=(
            "normal approximation of the balanced change's test at each direction's "
            "observed discordance (at least the change), template design effect applied"
        ),
    )
