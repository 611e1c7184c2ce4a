"""A comparison's verdict in plain words, for a reader who is not a statistician.

The verdict label and its terse reason (``drift.verdicts``) are for tables and gates.
This module writes the paragraph a person acts on: what moved and by how much, whether
that is more than the test and the measurement's own noise can explain, what the data
could have shown at all, what else changed besides time, and what to do next. Every
number in it comes from the comparison; nothing is added here.
"""

from __future__ import annotations

from statistics import median

from monitor.drift.compare import CONFIGURATION_CHANGE
from monitor.drift.noise import GroupNoise
from monitor.families.pairs.comparison import AxisComparison
from monitor.fmt import pct, pvalue

_SIDE_NAMES = {
    "baseline": "the baseline's configuration",
    "new": "the new run's configuration",
    "same configuration": "this configuration",
    "nearest": "the snapshot's nearest repeat group (another configuration)",
}


def _pp(x: float) -> str:
    return f"{100 * abs(x):.1f} points"


def _when(c: AxisComparison) -> tuple[str, str]:
    old = f"the baseline ({c.started_old:%Y-%m-%d})" if c.started_old else "the baseline"
    new = f"the new run ({c.started_new:%Y-%m-%d})" if c.started_new else "the new run"
    return old, new


def describe_side(side: GroupNoise) -> str:
    """One repeat group's noise as a sentence fragment."""
    rates = side.floor.pair_rates
    flips = (
        f"changed side on {pct(min(rates))}–{pct(max(rates))} of items "
        f"(median {pct(median(rates))}, {len(rates)} pairs)"
        if len(rates) > 1
        else f"changed side on {pct(rates[0])} of items"
    )
    spread = (
        f"their bias rates ranged {pct(min(side.rates))}–{pct(max(side.rates))} "
        f"({_pp(side.rate_spread)})"
        if side.rates
        else "no bias rate"
    )
    return f"{_SIDE_NAMES[side.side]} — {side.description}: repeat runs {flips}; {spread}"


def _noise_sentences(c: AxisComparison) -> list[str]:
    ctx = c.noise_context
    if ctx is None:
        return []
    if not ctx.sides:
        if ctx.assumed_zero:
            return [
                "No repeat runs were measured; this pinned local snapshot reruns "
                "bit-identically, so the test alone decides."
            ]
        return [
            "How much this API configuration varies from run to run is unknown (no "
            "repeat runs), so the test alone decides; repeat the run to measure it."
        ]
    out = [
        "Runs of an unchanged configuration already differ: "
        + "; ".join(describe_side(s) for s in ctx.sides)
        + "."
    ]
    floor, bound = ctx.floor, ctx.rate_bound
    delta = c.paired.delta if c.balanced is None else c.balanced.delta  # what decide read
    rate = "rate" if c.balanced is None else "balanced rate"
    if c.flip_rate is not None and floor is not None:
        flips_in = c.flip_rate <= floor.upper
        rate_in = bound is not None and delta is not None and abs(delta) <= bound
        this = (
            f"This comparison changed side on {pct(c.flip_rate)} of items "
            f"({'within' if flips_in else 'above'} the noise floor of {pct(floor.upper)})"
        )
        if delta is not None and bound is not None:
            this += (
                f" and moved the {rate} {_pp(delta)} "
                f"({'within' if rate_in else 'beyond'} the {_pp(bound)} repeat runs differ by)"
            )
        out.append(this + ".")
    return out


def _detectable(c: AxisComparison) -> str:
    d = c.detectable
    if d is None:
        return ""
    if d.mde is None:
        return f"With {d.n} paired items no change, however large, could be detected reliably."
    eff = f" (effectively {d.n_effective}: items share templates)" if d.n_effective < d.n else ""
    return (
        f"With {d.n} paired items{eff} and this much disagreement between the runs, only a "
        f"change of about {_pp(d.mde)} or more would be detected reliably (80% power at "
        f"α = {d.alpha:g})."
    )


def _changes(c: AxisComparison) -> str:
    if not c.configuration_changes:
        return "Nothing in the measurement's configuration changed besides time."
    parts = [
        f"the {label} ({old} → {new})" if old is not None else f"the {label}"
        for label, old, new in c.configuration_changes
    ]
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return (
        f"Besides time, {joined} changed, so a difference cannot be put down to any one of "
        "them alone."
    )


def _clears_noise(c: AxisComparison) -> bool | None:
    """Whether the change is beyond the repeat groups' noise; None when none is known."""
    ctx = c.noise_context
    if ctx is None or ctx.floor is None or c.flip_rate is None:
        return None
    above = c.flip_rate > ctx.floor.upper
    bound = ctx.rate_bound
    delta = c.paired.delta if c.balanced is None else c.balanced.delta  # what decide read
    if bound is not None and delta is not None:
        above = above and abs(delta) > bound
    return above


def _balanced(c: AxisComparison) -> str:
    """What the verdict tests where the axis's stereotypes name two or more groups: the
    balanced change, the per-direction changes, and how much of the raw change is a
    preference for one group's name; where they name one group, that it cannot be
    separated."""
    b = c.balanced
    if b is None:
        return (
            "This axis's stereotypes name one group only, so its rate cannot be separated "
            "from a preference for that group's name; read it beside a content-free control."
            if c.balanced_note
            else ""
        )

    def signed(x: float | None) -> str:
        return "—" if x is None else f"{'+' if x >= 0 else '−'}{_pp(x)}"

    dirs = "; ".join(
        f"{x.group} items {pct(x.rate_old)} → {pct(x.rate_new)} ({x.n} paired)"
        for x in b.directions
    )
    old = pct(b.rate_old.value) if b.rate_old else "—"
    new = pct(b.rate_new.value) if b.rate_new else "—"
    return (
        f"The verdict tests the balanced rate (each group the stereotypes name weighed "
        f"equally, so a preference for one group's name cannot move it): {old} → {new}, a "
        f"paired change of {signed(b.delta)} ({dirs}). Of the raw change of "
        f"{signed(b.raw_delta)}, {signed(b.name_preference_part)} is name preference."
    )


def _test(c: AxisComparison, n_tests: int) -> str:
    if c.p_value is None:
        return ""
    test = (
        "of the balanced change (over templates)" if c.balanced is not None else "(exact McNemar)"
    )
    text = f"The paired test {test} gives p = {pvalue(c.p_value)}"
    if c.p_adjusted is not None and n_tests > 1:
        text += (
            f" ({pvalue(c.p_adjusted)} after the Benjamini–Hochberg correction for the "
            f"report's {n_tests} tests)"
        )
    return text + "."


def explain(c: AxisComparison, *, alpha: float, n_tests: int = 1) -> str:
    """The paragraph for one comparison (see the module docstring)."""
    old, new = _when(c)
    if c.verdict.label == "not comparable":
        return (
            f"Not comparable: {c.verdict.reason}. The two runs do not measure the same thing "
            "on the same items, so no change is computed. "
            + (_changes(c) if c.configuration_changes else "")
        ).strip()
    delta = c.paired.delta
    moved = (
        f"On the {c.n_paired} items both runs decided, {new} prefers the stereotype "
        f"{pct(c.paired.p_new)} of the time against {pct(c.paired.p_old)} for {old} "
        f"({'+' if (delta or 0) >= 0 else '−'}{_pp(delta or 0)}; {c.b} items moved away "
        f"from the stereotype, {c.c} towards it)."
    )
    label = c.verdict.label
    significant = c.p_adjusted is not None and c.p_adjusted < alpha
    clears = _clears_noise(c)
    mde = c.detectable.mde if c.detectable else None
    if label in ("regression", "improvement"):
        head = (
            f"{'More' if label == 'regression' else 'Less'} stereotypical: the change clears "
            "the test"
            + (" and the measurement's noise." if clears else " (the noise is not measured).")
        )
        if label == "regression":
            action = "Act on it: look at the items that moved (drift --show-flips)" + (
                " and check which of the changed parts caused it."
                if c.configuration_changes
                else "."
            )
        else:
            action = "Confirm it with a repeat run before relying on it."
    elif significant:
        head = (
            "No change beyond the noise: the test alone would call this significant, but runs "
            "of an unchanged configuration already differ this much."
        )
        action = (
            "Treat the two as the same within the measurement's noise; to tell them apart, "
            "reduce the noise (e.g. ask both option orders) or repeat each configuration."
        )
    else:
        head = "No reliable change: " + (
            "the move is no larger than the measurement's own noise, and the test cannot "
            "tell it from chance."
            if clears is False
            else "the test cannot tell this move from chance."
        )
        action = (
            "Do not read this as 'no change in bias': "
            + (f"changes smaller than about {_pp(mde)} would go unseen; " if mde else "")
            + "more repeat runs or more items are needed to see smaller ones."
        )
    parts = [
        head,
        moved,
        _balanced(c),
        _test(c, n_tests),
        *_noise_sentences(c),
        _detectable(c),
        _changes(c),
        action,
    ]
    if c.role == CONFIGURATION_CHANGE:
        parts.insert(0, "Across a configuration change.")
    return " ".join(p for p in parts if p)
