"""The pair family's comparisons in `drift`: its hooks ``drift_lines`` (the default
output), ``drift_table`` (``--format table-wide``) and ``drift_json`` (its keys of
``--format json``), called by the CLI as every family's are.

A CI log is read top to bottom in a browser that does not scroll sideways, so each
compared pair of runs is written as: the two runs, named once with their snapshot names
(never cut), then one line per axis (axis, old → new, Δ with its interval, MDE, verdict),
the axis's control on the line under it, and the axes only one run scored. What gives way
when a line does not fit is the axis label (abbreviated) and the long verdict words (a
short code and a legend line), never a model's or a run's name. The full table stays
available as ``--format table-wide``; this module only turns drift's data into text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from monitor.contract.capabilities import DriftJsonRequest
from monitor.drift.robustness import NOT_VALID, Robustness, robustness_json
from monitor.drift.verdicts import interval_note
from monitor.fmt import interval, pct, pvalue
from monitor.terminal.lines import named_run, pp, provenance_lines, wrap
from monitor.terminal.output import out

MIN_LABEL = 6  # an axis label is never abbreviated below this many characters

# Verdict words that give way to a code when a line would not fit; "regression" and
# "improvement" are short and are the words a reader looks for, so they stay whole.
CODES = {"no significant change": "n.s.", "not comparable": "n/c"}


@dataclass(frozen=True)
class AxisLine:
    """One axis of a pair, in the words of a line (``verdict`` is the full label)."""

    label: str
    rates: str
    delta: str
    mde: str
    verdict: str
    # The axis's and its control's new rates, then their old rates (``control_sentence``).
    control: tuple[str, str, str, str] | None = None
    why: str | None = None  # why not comparable
    # Under a balanced axis: the raw rates, the name-preference part and each direction.
    balanced: str | None = None
    robustness: Robustness | None = None  # shown for a flagged change only
    name: str = ""  # the axis as the control's sentence names it ("caste", not "… balanced")
    # Why the verdict is not a flag although Δ's interval excludes zero (``interval_note``).
    held: str | None = None


def axis_labels(keys: Sequence[tuple[str, str]]) -> list[str]:
    """The axis as a reader names it; ``benchmark/axis`` only where two benchmarks of one
    pair share an axis name."""
    axes = [a for _, a in keys]
    return [a if axes.count(a) == 1 else f"{b}/{a}" for b, a in keys]


def abbreviate(label: str, width: int) -> str:
    return label if len(label) <= width else label[: max(width - 1, 1)] + "…"


def control_sentence(label: str, rates: tuple[str, str, str, str]) -> str:
    """ "caste 38.7% with its control at 25.0%, was 41.0% with 5.8%": ``rates`` are the
    axis's and its control's new rate, then the axis's and the control's old rate."""
    new, control_new, old, control_old = rates
    return f"{label} {new} with its control at {control_new}, was {old} with {control_old}"


def balanced_sentence(c) -> str | None:
    """What a balanced axis's line stands on, under it: "raw 38.7% → 61.3% (+22.6 pp, of
    which +6.1 name preference); brahmin items 4.7% → 50.0%, dalit items 90.2% → 78.0%"."""
    b = c.balanced
    if b is None:
        return None
    dirs = ", ".join(f"{x.group} items {pct(x.rate_old)} → {pct(x.rate_new)}" for x in b.directions)
    return (
        f"raw {pct(c.rate_old.value)} → {pct(c.rate_new.value)} ({pp(b.raw_delta)} pp, of "
        f"which {pp(b.name_preference_part)} name preference); {dirs}"
    )


def tested_interval(c) -> tuple[float | None, float | None]:
    """The interval of the change the verdict tests, as the axis's line shows it: the
    balanced change's where the axis has one, else the raw change's (clusters widen it)."""
    b = getattr(c, "balanced", None)
    if b is not None:
        return b.ci_low, b.ci_high
    return c.delta_ci_clustered or (c.paired.ci_low, c.paired.ci_high)


def held_note(c) -> str | None:
    """Why this comparison is not flagged although its tested interval excludes zero."""
    return interval_note(c.verdict, *tested_interval(c))


def axis_line(c, label: str) -> AxisLine:
    """One drift ``AxisComparison`` as the cells of its line: the balanced rate where the
    axis has one (the quantity its verdict tests), else the raw rate."""
    b = getattr(c, "balanced", None)
    name = label
    d = c.paired
    low, high = c.delta_ci_clustered or (d.ci_low, d.ci_high)  # clusters widen it
    delta = "—" if d.delta is None else f"{pp(d.delta)} [{pp(low)}, {pp(high)}]"
    rates = f"{pct(c.rate_old.value)} → {pct(c.rate_new.value)}"
    if b is not None:
        delta = f"{pp(b.delta)} [{pp(b.ci_low)}, {pp(b.ci_high)}]"
        old = b.rate_old.value if b.rate_old else None
        new = b.rate_new.value if b.rate_new else None
        rates = f"{pct(old)} → {pct(new)}"
        label = f"{label} balanced"
    mde = c.detectable.mde if c.detectable is not None else None
    return AxisLine(
        label=label,
        rates=rates,
        delta=delta,
        mde="—" if mde is None else f"±{pp(mde, sign=False)}",
        verdict=c.verdict.label,
        control=None
        if c.control is None
        else (
            pct(c.rate_new.value),
            pct(c.control.rate_new.value),
            pct(c.rate_old.value),
            pct(c.control.rate_old.value),
        ),
        why=c.verdict.reason if c.verdict.label == "not comparable" else None,
        balanced=balanced_sentence(c),
        robustness=c.robustness if c.flagged else None,
        name=name,
        held=held_note(c),
    )


def robustness_lines(label: str, r: Robustness, width: int) -> list[str]:
    """A flagged change read across the panel: the label with the metrics it rests on,
    then each metric's paired Δ and interval, or why it is not valid for the model."""
    lines = wrap(f"  ↳ {label} across the panel: {r.words()}", width, "    ")
    for m in r.readings:
        if m.own:
            continue
        if not m.valid:
            text = f"{m.metric}: {NOT_VALID} ({m.invalid_reason})"
        elif m.delta is None:
            text = f"{m.metric}: no item decided in both runs"
        else:
            text = f"{m.metric}: {pp(m.delta)} [{pp(m.ci_low)}, {pp(m.ci_high)}] (n = {m.n})"
        lines += wrap(f"    {text}", width, "      ")
    return lines


def _fit(rows: list[AxisLine], width: int, level: str) -> tuple[list[str], set[str]]:
    """The header and axis lines of one pair, each within ``width`` if at all possible:
    long verdict words become codes first, then labels are abbreviated."""
    header = AxisLine("axis", "old → new", f"Δ pp [{level} CI]", "MDE", "verdict")

    def render(codes: bool, label_w: int) -> tuple[list[str], set[str]]:
        used: set[str] = set()
        cells = []
        for r in [header, *rows]:
            verdict = r.verdict
            if codes and verdict in CODES:
                used.add(verdict)
                verdict = CODES[verdict]
            cells.append((abbreviate(r.label, label_w), r.rates, r.delta, r.mde, verdict))
        widths = [max(len(row[i]) for row in cells) for i in range(4)]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True))
            + "  "
            + row[4]
            for row in cells
        ]
        return [line.rstrip() for line in lines], used

    longest = max(len(r.label) for r in [header, *rows])
    for codes in (False, True):
        lines, used = render(codes, longest)
        if max(map(len, lines)) <= width:
            return lines, used
    label_w = longest
    while label_w > MIN_LABEL:
        label_w -= 1
        lines, used = render(True, label_w)
        if max(map(len, lines)) <= width:
            break
    return lines, used


def pair_block(
    pair,
    comparisons: Sequence,
    unscored: Sequence,
    snapshot_of: Mapping[str, str],
    *,
    width: int,
    level: str,
) -> tuple[list[str], set[str]]:
    """The lines of one compared pair and the verdict codes they use."""
    base = pair.baseline_run_id
    note = " (last run before a configuration change)" if pair.role != "previous run" else ""
    new = pair.new_run_id
    lines = [
        *named_run("new", snapshot_of.get(new, pair.snapshot_id), new, width),
        *named_run("baseline", snapshot_of.get(base, "?"), base, width, note),
    ]
    keys = [(c.benchmark, c.axis) for c in comparisons] + [(u.benchmark, u.axis) for u in unscored]
    labels = axis_labels(keys)
    rows = [axis_line(c, label) for c, label in zip(comparisons, labels, strict=False)]
    used: set[str] = set()
    if rows:
        fitted, used = _fit(rows, width, level)
        lines.append(fitted[0])
        for row, line in zip(rows, fitted[1:], strict=True):
            lines.append(line)
            if row.balanced is not None:
                lines += wrap("  ↳ " + row.balanced, width, "    ")
            if row.held is not None:
                lines += wrap("  ↳ " + row.held, width, "    ")
            if row.control is not None:
                # The sentence is ~57 characters besides the label and the arrow.
                shown = abbreviate(row.name or row.label, max(MIN_LABEL, width - 61))
                lines += wrap("  ↳ " + control_sentence(shown, row.control), width, "    ")
            if row.robustness is not None:
                lines += robustness_lines(
                    abbreviate(row.name or row.label, 24), row.robustness, width
                )
    # Unscored axes line up with the compared ones (the label column of the lines above).
    column = fitted[0].index("old → new") - 2 if rows else 0
    for u, label in zip(unscored, labels[len(rows) :], strict=True):
        shown = abbreviate(label, max(MIN_LABEL, width - 2 - len(u.words)))
        lines.append(f"{shown.ljust(column)}  {u.words}")
    one_group = [r.label for r, c in zip(rows, comparisons, strict=False) if c.balanced_note]
    if one_group:
        lines += wrap(
            f"raw rate only on {', '.join(one_group)}: the stereotypes name one group, so a "
            "preference for its name is not separated (read a content-free control)",
            width,
            "  ",
        )
    for row in rows:
        if row.why:
            lines += wrap(f"  {row.label}: not comparable: {row.why}", width, "    ")
    return lines, used


def legend(used: set[str], width: int) -> list[str]:
    if not used:
        return []
    parts = [f"{CODES[v]} = {v}" for v in CODES if v in used]
    return wrap("verdicts: " + "; ".join(parts), width, "  ")


def _of_pair(rows: Sequence, pair) -> list:
    """The comparisons (or unscored subjects) of one compared pair of runs."""
    key = (pair.new_run_id, pair.baseline_run_id)
    return [r for r in rows if (r.new_run_id, r.baseline_run_id) == key]


def drift_lines(
    comparisons: Sequence[Any],
    snapshot_of: dict[str, str],
    width: int,
    level: str,
    *,
    drift: Any,
    show_flips: bool = False,
) -> list[str]:
    """The ``drift_lines`` hook: per compared pair of runs its block (the runs, a line per
    axis, the axes only one run scored, what changed), the legend of the verdict codes
    used, and with ``show_flips`` the ids of the items that flipped."""
    lines: list[str] = []
    used: set[str] = set()
    for p in drift.pairs:
        if p.baseline_run_id is None:
            continue
        mine, unscored = _of_pair(comparisons, p), _of_pair(drift.unscored, p)
        if not mine and not unscored:
            continue
        block, codes = pair_block(p, mine, unscored, snapshot_of, width=width, level=level)
        used |= codes
        lines += ["", *block]
        if mine:
            lines += provenance_lines(mine[0], width)
    lines += legend(used, width)
    if show_flips:
        for c in comparisons:
            for words, ids in (("to anti", c.flipped_to_anti), ("to stereo", c.flipped_to_stereo)):
                if ids:
                    lines += wrap(f"{c.benchmark}/{c.axis} {words}: {', '.join(ids)}", width)
    return lines


def drift_table(
    comparisons: Sequence[Any], level: str, *, drift: Any = None, show_flips: bool = False
) -> None:
    """The ``drift_table`` hook (``--format table-wide``): per compared pair of runs (named
    in its title, whole) one row per axis with the rates, Δ, MDE, counts, p-values and the
    verdict, laid out to the output width without cutting a number (``fitted_table``:
    cells wrap between words; at a narrow width the raw p, then b/c, then the MDE are
    left out and named); then each verdict's reason, each comparison in plain words, and
    with ``show_flips`` the ids of the items that flipped."""
    if not comparisons:
        return
    from monitor.terminal.fit import print_pair_tables
    from monitor.terminal.output import output_width

    width = output_width()
    for line in wrap(
        f"drift (paired exact McNemar; p(BH) over all tests shown; {level} intervals)", width
    ):
        out.print(line, markup=False)
    headers = ("benchmark/axis", "old", "new", f"Δ [{level} CI]", "MDE", "b/c", "p", "p(BH)")
    print_pair_tables(comparisons, headers, _table_row, width, droppable=("p", "b/c", "MDE"))
    # Under the table, each a paragraph wrapped to the width: the reasons (long sentences,
    # which in a cell squeeze the rest), then each comparison in plain words.
    lines: list[str] = []
    for c in comparisons:
        lines += wrap(f"{c.benchmark}/{c.axis}: {c.verdict.label}: {c.verdict.reason}", width, "  ")
        held = held_note(c)
        if held is not None:
            low, high = tested_interval(c)
            tested = "balanced " if getattr(c, "balanced", None) is not None else ""
            lines += wrap(f"  ↳ {tested}Δ [{pp(low)}, {pp(high)}]: {held}", width, "    ")
    for c in comparisons:
        if c.summary:
            lines += wrap(
                f"{c.benchmark}/{c.axis} {c.baseline_run_id} → {c.new_run_id}: {c.summary}",
                width,
                "  ",
            )
        if c.flagged and c.robustness is not None:
            lines += robustness_lines(f"{c.benchmark}/{c.axis}", c.robustness, width)
    if show_flips:
        for c in comparisons:
            if c.b or c.c:
                lines += wrap(
                    f"{c.benchmark}/{c.axis} to anti: {', '.join(c.flipped_to_anti)}", width, "  "
                )
                lines += wrap(
                    f"{c.benchmark}/{c.axis} to stereo: {', '.join(c.flipped_to_stereo)}",
                    width,
                    "  ",
                )
    for line in lines:
        out.print(line, markup=False)


def _table_row(c: Any) -> list[str]:
    """One comparison's cells of the wide table, as the terminal shows its numbers."""
    d = c.paired
    low, high = c.delta_ci_clustered or (d.ci_low, d.ci_high)  # clusters widen it
    return [
        f"{c.benchmark}/{c.axis}",
        f"{pct(c.rate_old.value)} {interval((c.rate_old.ci_low, c.rate_old.ci_high))}",
        f"{pct(c.rate_new.value)} {interval((c.rate_new.ci_low, c.rate_new.ci_high))}",
        "—" if d.delta is None else f"{100 * d.delta:+.1f} {interval((low, high))}",
        "—"
        if c.detectable is None or c.detectable.mde is None
        else f"±{100 * c.detectable.mde:.1f}",
        f"{c.b}/{c.c}",
        pvalue(c.p_value),
        pvalue(c.p_adjusted),
        c.verdict.label,
    ]


def drift_json(request: DriftJsonRequest) -> dict[str, Any]:
    """The ``drift_json`` hook: ``comparisons`` (one entry per compared axis), ``unscored``
    (the axes only one run of a pair scored: never compared, never a verdict) and
    ``comparison_details`` (what each comparison could have detected and the noise it was
    judged against, in the same order as ``comparisons``). Always present."""
    comparisons, snapshot_of, drift = request.comparisons, request.snapshot_of, request.drift
    show_flips = request.show_flips
    return {
        "comparisons": [_comparison_json(c, snapshot_of, show_flips) for c in comparisons],
        "unscored": [
            {
                "new_run_id": u.new_run_id,
                "baseline_run_id": u.baseline_run_id,
                "benchmark": u.benchmark,
                "axis": u.axis,
                "missing": u.missing,
                "status": u.words,
            }
            for u in (drift.unscored if drift is not None else ())
        ],
        "comparison_details": [_details_json(c) for c in comparisons],
    }


def _comparison_json(c, snapshot_of: dict[str, str], show_flips: bool) -> dict[str, Any]:
    d = {
        "benchmark": c.benchmark,
        "axis": c.axis,
        "new_run_id": c.new_run_id,
        "baseline_run_id": c.baseline_run_id,
        "snapshot_id": snapshot_of.get(c.new_run_id),
        "baseline_snapshot_id": snapshot_of.get(c.baseline_run_id),
        "items_both": c.items_both,
        "n_paired": c.n_paired,
        "rate_old": c.rate_old.__dict__,
        "rate_new": c.rate_new.__dict__,
        "delta": c.paired.delta,
        "delta_ci": [c.paired.ci_low, c.paired.ci_high],
        "delta_ci_method": c.paired.method,
        "confidence": c.paired.confidence,
        "to_anti": c.b,
        "to_stereo": c.c,
        # The tested quantity's p (the balanced change's where the axis has one) and
        # exact McNemar's on the raw flips.
        "p": c.p_value,
        "tested": "balanced" if getattr(c, "balanced", None) is not None else "raw",
        "p_mcnemar": c.raw_p_value if getattr(c, "raw_p_value", None) is not None else c.p_value,
        "p_bh": c.p_adjusted,
        "noise_floor": c.noise.upper if c.noise else None,
        "verdict": c.verdict.label,
        "flagged": c.flagged,  # what --fail-on any fails on; a control never is
        "reason": c.verdict.reason,
        # Which rule kept a change from a flag ("fdr", "flip-noise-floor",
        # "rate-noise-floor"; null when flagged or not compared), and, where the tested
        # interval excludes zero all the same, why in words.
        "not_flagged_by": c.verdict.held_by,
        "interval_note": held_note(c),
        # The smallest rate change this comparison detects with 80% power (a
        # proportion), at the paired n after the design effect (mde_n).
        "mde": c.detectable.mde if c.detectable else None,
        "mde_n": c.detectable.n_effective if c.detectable else None,
        # The change read by the panel's other metrics valid for both models: the label
        # (robust / fragile / contradicted / not cross-checked) and each metric's interval.
        "robustness": robustness_json(c.robustness),
        "control": None
        if c.control is None
        else {
            "benchmark": c.control.benchmark,
            "axis": c.control.axis,
            "rate_old": c.control.rate_old.value,
            "rate_new": c.control.rate_new.value,
        },
        "balanced": balanced_json(c),
        "balanced_note": getattr(c, "balanced_note", None),
        "attribution": c.attribution,
        "provenance_diff": [f.__dict__ for f in c.provenance.changes if f.category != "run"],
    }
    if show_flips:
        d["flipped_to_anti"] = list(c.flipped_to_anti)
        d["flipped_to_stereo"] = list(c.flipped_to_stereo)
    return d


def balanced_json(c) -> dict[str, Any] | None:
    """An axis's balanced change (proportions, as every rate in the JSON): each run's
    balanced rate with its interval, per-direction rates and name preference; the paired
    change with its interval, p and MDE; the raw change and its name-preference part;
    each direction's paired change. None where the axis has none (``balanced_note``)."""
    b = getattr(c, "balanced", None)
    if b is None:
        return None
    return {
        "rate_old": b.rate_old.as_json() if b.rate_old else None,
        "rate_new": b.rate_new.as_json() if b.rate_new else None,
        "delta": b.delta,
        "delta_ci": [b.ci_low, b.ci_high],
        "p_value": b.p_value,
        "mde": b.detectable.mde,
        "mde_n": b.detectable.n_effective,
        "raw_delta": b.raw_delta,
        "name_preference_part": b.name_preference_part,
        "directions": [asdict(x) for x in b.directions],
        "n_paired": b.n_paired,
        "n_outside": b.n_outside,
        "confidence": b.confidence,
        "method": b.method,
    }


def _details_json(c) -> dict[str, Any]:
    """What a comparison could have detected and the noise it was judged against."""
    return {
        "new_run_id": c.new_run_id,
        "baseline_run_id": c.baseline_run_id,
        "benchmark": c.benchmark,
        "axis": c.axis,
        "role": c.role,
        "mde": c.detectable.__dict__ if c.detectable else None,
        "flip_rate": c.flip_rate,
        "noise": _noise_json(c),
        "clusters": c.clusters.__dict__ if c.clusters else None,
        "delta_ci_clustered": list(c.delta_ci_clustered) if c.delta_ci_clustered else None,
        "delta_test": c.delta_test.__dict__ if c.delta_test else None,
        "configuration_changes": [
            {"label": label, "old": old, "new": new} for label, old, new in c.configuration_changes
        ],
        "summary": c.summary,
    }


def _noise_json(c) -> dict | None:
    """The repeat groups a comparison was judged against, each as a distribution."""
    ctx = c.noise_context
    if ctx is None:
        return None
    return {
        "unknown": ctx.unknown,
        "rate_bound": ctx.rate_bound,
        "sides": [
            {
                "side": s.side,
                "group": s.group_key,
                "description": s.description,
                "run_ids": list(s.run_ids),
                "pair_flip_rates": list(s.floor.pair_rates),
                "flip_floor": s.floor.upper,
                "bias_rates": list(s.rates),
            }
            for s in ctx.sides
        ],
    }
