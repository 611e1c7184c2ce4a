"""The sentence-pair family's answer, the first thing the report shows.

One verdict sentence (``report_headline``) and, per compared pair of runs, one row per
axis: verdict, rates, Δ with its interval, MDE, and the axis's neutral control beside it
(``report_lead``, in Markdown and HTML, so the first screen of the page and the first
lines of a PR comment say the same). ``report_verdicts`` hands the report its comparisons'
verdicts to count and list. ``section.PairsSection`` calls them as its ``headline``,
``lead`` and ``verdicts``; the data they read is the section's (``section_model.own``).

A neutral control (bhed-neutral for caste) is never a verdict of its own: it is read
beside the axis it controls (``Comparison.control``). A report input from before drift
stopped comparing controls may still hold a comparison of the control benchmark itself;
such a comparison is dropped here and its rates are taken from the run's contexts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from monitor import fmt
from monitor.families.pairs.section_model import own
from monitor.report.answer import FLAGS, VerdictRef
from monitor.report.html import render_folder_template
from monitor.report.markdown import VERDICT_BADGE, md
from monitor.report.model import (
    VERDICT_ORDER,
    Comparison,
    ReportInput,
    ScoreContext,
    UnscoredAxis,
)
from monitor.report.section import Rendering

_HERE = Path(__file__).parent


@dataclass(frozen=True)
class ControlCell:
    """The axis's neutral control in both runs: benchmark, baseline rate, new rate."""

    benchmark: str
    old: float | None
    new: float | None

    def text(self) -> str:
        """ "25.0% → 5.8% (bhed-neutral)"; one side missing reads as a dash."""
        return f"{fmt.pct(self.old)} → {fmt.pct(self.new)} ({self.benchmark})"


@dataclass(frozen=True)
class AxisRow:
    comparison: Comparison
    control: ControlCell | None


@dataclass
class PairAnswer:
    """One new run against its baseline: the runs named once, then one row per axis."""

    snapshot_id: str
    new_run_id: str
    baseline_snapshot_id: str | None
    baseline_run_id: str | None
    role: str
    rows: list[AxisRow] = field(default_factory=list)
    unscored: list[UnscoredAxis] = field(default_factory=list)  # axes one side lacks

    @property
    def flagged(self) -> list[AxisRow]:
        return [r for r in self.rows if is_flagged(r.comparison)]

    def unscored_text(self) -> list[str]:
        """ "not scored in the new run: gender, race" (and the same for the baseline)."""
        out = []
        for side in ("new", "baseline"):
            axes = [u.axis for u in self.unscored if u.missing == side]
            if axes:
                out.append(f"{self.unscored_words(side)}: {', '.join(axes)}")
        return out

    @staticmethod
    def unscored_words(side: str) -> str:
        return "not scored in the new run" if side == "new" else "not scored in the baseline"


def is_flagged(c: Comparison) -> bool:
    """Drift's flag; a hand-built input without it is read by its verdict."""
    return c.flagged or c.verdict in FLAGS


def control_benchmarks(report: ReportInput) -> set[str]:
    """Benchmarks that are some axis's neutral control in this report."""
    return {x.control_benchmark for x in own(report).contexts if x.control_benchmark}


def verdict_comparisons(report: ReportInput) -> list[Comparison]:
    """The comparisons that carry a verdict: controls left out, drifts first."""
    controls = control_benchmarks(report)
    return sorted(
        (c for c in own(report).comparisons if c.benchmark not in controls),
        key=lambda c: (VERDICT_ORDER.index(c.verdict), c.snapshot_id, c.benchmark, c.axis),
    )


ContextIndex = dict[tuple[str, str, str], ScoreContext]


def _contexts_by_key(report: ReportInput) -> ContextIndex:
    """The rates in context by (run, benchmark, axis), built once per ``pairs`` call: a
    year's report compares hundreds of axes against thousands of contexts."""
    return {(x.run_id, x.benchmark, x.axis): x for x in own(report).contexts}


def _control(ctx: ContextIndex, c: Comparison) -> ControlCell | None:
    """The axis's neutral control: drift's own (``Comparison.control``), else read from
    the compared runs' contexts (``ctx``, from ``_contexts_by_key``)."""
    if c.control is not None:
        return ControlCell(c.control.benchmark, c.control.rate_old, c.control.rate_new)
    new = ctx.get((c.new_run_id, c.benchmark, c.axis))
    old = ctx.get((c.baseline_run_id, c.benchmark, c.axis)) if c.baseline_run_id else None
    bench = (new and new.control_benchmark) or (old and old.control_benchmark)
    if not bench:
        return None

    def rate(x) -> float | None:
        return x.control.value if x is not None and x.control is not None else None

    return ControlCell(bench, rate(old), rate(new))


def pairs(report: ReportInput) -> list[PairAnswer]:
    """Comparisons grouped by compared pair of runs: pairs with a flag first, then by name;
    axes in each pair drifts first, then by axis."""
    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    by: dict[tuple[str, str | None], PairAnswer] = {}
    ctx = _contexts_by_key(report)
    for c in verdict_comparisons(report):
        key = (c.new_run_id, c.baseline_run_id)
        if key not in by:
            by[key] = PairAnswer(
                snapshot_id=c.snapshot_id,
                new_run_id=c.new_run_id,
                baseline_snapshot_id=snapshot_of.get(c.baseline_run_id or ""),
                baseline_run_id=c.baseline_run_id,
                role=c.role,
            )
        by[key].rows.append(AxisRow(c, _control(ctx, c)))
    for u in report.unscored:
        key = (u.new_run_id, u.baseline_run_id)
        if key not in by:
            by[key] = PairAnswer(
                snapshot_id=u.snapshot_id,
                new_run_id=u.new_run_id,
                baseline_snapshot_id=snapshot_of.get(u.baseline_run_id),
                baseline_run_id=u.baseline_run_id,
                role="previous run",
            )
        by[key].unscored.append(u)
    return sorted(by.values(), key=lambda p: (not p.flagged, p.snapshot_id, p.new_run_id))


def _axes(rows: list[AxisRow]) -> str:
    return ", ".join(f"{r.comparison.axis} ({tested_delta(r.comparison)})" for r in rows)


def tested_delta(c: Comparison) -> str:
    """The change the verdict tested: "balanced +16.5 pp" where the axis has a balanced
    rate, else the raw paired change."""
    if c.balanced is not None:
        return f"balanced {fmt.pp(c.balanced.delta)}"
    return fmt.pp(c.delta)


def directions_text(c: Comparison) -> str:
    """ "brahmin items 4.7% → 50.0%, dalit items 90.2% → 78.0%" (escaped)."""
    b = c.balanced
    if b is None:
        return ""
    return ", ".join(
        f"{md(d.group, 40)} items {fmt.pct(d.rate_old)} → {fmt.pct(d.rate_new)}"
        for d in b.directions
    )


def rate_cells(c: Comparison, *, with_ci: bool) -> tuple[str, str]:
    """A comparison's rate and change cells in Markdown: where the axis has a balanced
    rate, it leads (the verdict tests it), with the raw rates, the raw change's
    name-preference part and the directions after it; else the raw rate and change."""
    b = c.balanced

    def rate(x: float | None, ci) -> str:
        return fmt.rate_with_ci(x, ci) if with_ci else fmt.pct(x)

    if b is None:
        rates = f"{rate(c.rate_old, c.ci_old)} → {rate(c.rate_new, c.ci_new)}"
        if c.delta is None:
            return rates, fmt.MISSING
        delta = f"{fmt.pp(c.delta)} {fmt.pp_interval(c.delta_ci)}"
        return rates, delta + (f"; MDE {fmt.mde(c.mde)}" if with_ci else "")
    rates = (
        f"balanced {rate(b.rate_old, b.ci_old)} → {rate(b.rate_new, b.ci_new)}; raw "
        f"(mixes name preference) {fmt.pct(c.rate_old)} → {fmt.pct(c.rate_new)}"
    )
    delta = f"balanced {fmt.pp(b.delta)} {fmt.pp_interval(b.delta_ci)}"
    if with_ci:
        delta += f"; MDE {fmt.mde(b.mde)}"
    delta += (
        f"; raw {fmt.pp(b.raw_delta)}, of which {fmt.pp(b.name_preference_part)} name "
        f"preference; {directions_text(c)}"
    )
    return rates, delta


def _pairs_headline(report: ReportInput, ps: list[PairAnswer]) -> str:
    n_axes = sum(len(p.rows) for p in ps)
    snapshots = sorted({p.snapshot_id for p in ps})
    where = snapshots[0] if len(snapshots) == 1 else f"{len(snapshots)} snapshots"
    parts = []
    for verdict in FLAGS:
        hits = [
            (p, [r for r in p.rows if r.comparison.verdict == verdict and is_flagged(r.comparison)])
            for p in ps
        ]
        hits = [(p, rows) for p, rows in hits if rows]
        if hits:
            n = sum(len(rows) for _, rows in hits)
            listed = "; ".join(
                (f"{p.snapshot_id} " if len(snapshots) > 1 else "") + _axes(rows)
                for p, rows in hits
            )
            parts.append(f"{n} {verdict}{'s' * (n != 1)}: {listed}")
    # The pair axes' own verdicts (a family's comparisons have their own sentence).
    counts = {v: sum(r.comparison.verdict == v for p in ps for r in p.rows) for v in VERDICT_ORDER}
    if parts:
        rest = n_axes - counts["regression"] - counts["improvement"]
        tail = f"; {rest} other axis comparison{'s' * (rest != 1)} without a flag" if rest else ""
        return f"{where}: " + "; ".join(parts) + tail + "."
    quiet = counts["no significant change"]
    text = (
        f"{where}: no significant change on {quiet} of {n_axes} compared "
        f"{'axis' if n_axes == 1 else 'axes'}"
    )
    if counts["not comparable"]:
        text += f"; {counts['not comparable']} not comparable"
    return text + "."


def report_headline(report: ReportInput) -> str:
    """The section's ``headline``: the pair axes in the report's one-sentence verdict
    (empty when no pair of runs was compared)."""
    ps = pairs(report)
    return _pairs_headline(report, ps) if ps else ""


def report_verdicts(report: ReportInput) -> list[VerdictRef]:
    """The section's ``verdicts``: each axis comparison's verdict and runs, controls
    left out, drifts first."""
    return [
        VerdictRef(c.snapshot_id, c.new_run_id, c.baseline_run_id, c.verdict)
        for c in verdict_comparisons(report)
    ]


def report_lead(report: ReportInput, how: Rendering) -> str:
    """The section's ``lead``: per compared pair of runs, the two runs named once
    (snapshot names and run ids in full), then one row per axis; empty when no pair of
    runs was compared."""
    if how.fmt == "markdown":
        return "\n".join(_answer(report, how.max_rows))
    ps = pairs(report)
    if not ps:
        return ""
    return render_folder_template(how.env, _HERE, "answer.html.j2", r=report, fmt=fmt, pairs=ps)


def panel_words(c: Comparison) -> str:
    """A flagged change read across the metric panel, in Markdown: the label with the
    metrics it rests on, then each other metric's paired Δ and interval, or why it is not
    valid for the model."""
    r = c.robustness
    assert r is not None
    parts = []
    for m in r.metrics:
        if m.own:
            continue
        if not m.valid:
            why = md(m.invalid_reason, 300)
            parts.append(f"{md(m.metric, 40)} not valid for this model ({why})")
        elif m.delta is None:
            parts.append(f"{md(m.metric, 40)} no item decided in both runs")
        else:
            parts.append(f"{md(m.metric, 40)} {fmt.pp(m.delta)} {fmt.pp_interval(m.ci)}")
    detail = f"; {'; '.join(parts)}" if parts else ""
    return f"across the panel: {md(r.words, 400)}{detail}"


def _answer(report: ReportInput, max_rows: int) -> list[str]:
    """Per compared pair: the two runs named once (snapshot names and run ids in full),
    then one row per axis; the neutral control only in its axis's row. Every flagged
    axis is shown; quiet ones fill up to ``max_rows`` rows in all."""
    lines: list[str] = []
    ps = pairs(report)
    quiet_budget = max(0, max_rows - sum(len(p.flagged) for p in ps))
    left_out = 0
    for p in ps:
        flagged = p.flagged
        quiet = [r for r in p.rows if r not in flagged][:quiet_budget]
        quiet_budget -= len(quiet)
        rows = flagged + quiet
        left_out += len(p.rows) - len(rows)
        if not rows and p.rows:
            continue
        base = p.baseline_snapshot_id or p.snapshot_id
        role = f" ({md(p.role, 80)})" if p.role != "previous run" else ""
        lines += [
            # Run ids as plain escaped text: md()'s backslashes would show inside a code span.
            f"**new** {md(p.snapshot_id, 120)}, run {md(p.new_run_id, 120)} · **baseline** "
            f"{md(base, 120)}, run {md(p.baseline_run_id or fmt.MISSING, 120)}{role}",
            "",
        ]
        if rows:
            lines += [
                f"| Axis | Verdict | Bias rate, baseline → new | Δ (paired {report.level} CI) "
                "| MDE (80% power) | Neutral control, baseline → new |",
                "|---|---|---|---|---|---|",
            ]
        for row in rows:
            c = row.comparison
            verdict = VERDICT_BADGE[c.verdict]
            if c.verdict == "not comparable" and c.reason:
                verdict += f": {md(c.reason, 100)}"
            if c.flagged and c.robustness is not None:
                verdict += f", {md(c.robustness.label, 40)} across the panel"
            if c.interval_note:
                verdict += f" ({md(c.interval_note, 200)})"
            rates, delta = rate_cells(c, with_ci=False)
            control = (
                f"{fmt.pct(row.control.old)} → {fmt.pct(row.control.new)} "
                f"({md(row.control.benchmark, 40)})"
                if row.control
                else fmt.MISSING
            )
            lines.append(
                f"| {md(c.axis, 40)} ({md(c.benchmark, 40)}) | {verdict} | "
                f"{rates} | {delta} | {fmt.mde(c.mde)} "
                f"| {control} |"
            )
        panel = [r.comparison for r in rows if r.comparison.flagged and r.comparison.robustness]
        if panel:
            lines.append("")
        for c in panel:
            lines.append(f"- {md(c.axis, 40)}: {panel_words(c)}")
        for text in p.unscored_text():
            lines += ["", f"{md(text[0].upper() + text[1:], 400)} (no verdict)."]
        lines.append("")
    if left_out:
        lines += [f"{left_out} more axis comparisons without a flag are in the HTML report.", ""]
    return lines
