"""The answer a report leads with: one verdict sentence and, per compared pair of runs, one
row per axis (verdict, change, interval, MDE, control). Shared by the HTML and Markdown
renderers so the first screen of the page and the first lines of a PR comment say the same.

A neutral control (bhed-neutral for caste) is never a verdict of its own: it is read
beside the axis it controls (``Comparison.control``). A report input from before drift
stopped comparing controls may still hold a comparison of the control benchmark itself;
such a comparison is dropped here and its rates are taken from the run's contexts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from monitor import fmt
from monitor.report.model import VERDICT_ORDER, Comparison, ReportInput, UnscoredAxis

FLAGS = ("regression", "improvement")


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
    return {x.control_benchmark for x in report.contexts if x.control_benchmark}


def verdict_comparisons(report: ReportInput) -> list[Comparison]:
    """The comparisons that carry a verdict: controls left out, drifts first."""
    controls = control_benchmarks(report)
    return sorted(
        (c for c in report.comparisons if c.benchmark not in controls),
        key=lambda c: (VERDICT_ORDER.index(c.verdict), c.snapshot_id, c.benchmark, c.axis),
    )


def verdict_counts(report: ReportInput) -> dict[str, int]:
    """Verdicts by kind over every kind of comparison (pair axes, association tests,
    the families), controls never counted."""
    comps = [*verdict_comparisons(report), *report.effect_comparisons]
    family = report.family_comparisons
    return {
        v: sum(c.verdict == v for c in comps) + sum(c.verdict.label == v for c in family)
        for v in VERDICT_ORDER
    }


def _control(report: ReportInput, c: Comparison) -> ControlCell | None:
    if c.control is not None:
        return ControlCell(c.control.benchmark, c.control.rate_old, c.control.rate_new)
    ctx = {(x.run_id, x.benchmark, x.axis): x for x in report.contexts}
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
        by[key].rows.append(AxisRow(c, _control(report, c)))
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
    return ", ".join(f"{r.comparison.axis} ({fmt.pp(r.comparison.delta)})" for r in rows)


def headline(report: ReportInput) -> str:
    """The verdict in one sentence, plain text: what regressed, what improved, or that
    nothing cleared the test, with how many axes and snapshots were compared."""
    ps = pairs(report)
    parts = [
        _pairs_headline(report, ps) if ps else "",
        _family_headline(report),
        *_block_headlines(report),
    ]
    text = " ".join(p for p in parts if p)
    return text or "No comparison in this report: no run had a baseline to compare with."


def _block_headlines(report: ReportInput) -> list[str]:
    """The sentences of families that keep report fields of their own (association tests:
    their ``report_headline`` hook), in the registry's order; empty ones left out."""
    from monitor.metrics.families import FAMILIES

    out = []
    for family in FAMILIES.values():
        hook = family.hook("report_headline")
        if hook is not None and (text := hook(report)):
            out.append(text)
    return out


def _family_headline(report: ReportInput) -> str:
    """The comparisons of families in their own folder, a sentence per family (empty if
    none): what each flag is about, or how many comparisons nothing cleared."""
    from monitor.metrics.families import FAMILIES

    by_family: dict[str, list] = {}
    for c in report.family_comparisons:
        by_family.setdefault(c.family, []).append(c)
    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    sentences = []
    for name, comps in by_family.items():
        snapshots = sorted({snapshot_of.get(c.new_run_id, c.new_run_id) for c in comps})
        where = snapshots[0] if len(snapshots) == 1 else f"{len(snapshots)} snapshots"
        family = FAMILIES.get(name)
        what = (family.words if family else "") or name
        parts = []
        # "difference": a change between runs that differ by design (languages), not drift.
        for verdict in (*FLAGS, "difference"):
            hits = [c for c in comps if c.verdict.label == verdict]
            if hits:
                listed = ", ".join(f"{c.axis} {c.measure} ({fmt.pp(c.delta)})" for c in hits)
                parts.append(f"{len(hits)} {verdict}{'s' * (len(hits) != 1)}: {listed}")
        if parts:
            sentences.append(f"{where} ({what}): " + "; ".join(parts) + ".")
        else:
            sentences.append(f"{where} ({what}): no flagged change in {len(comps)} comparisons.")
    return " ".join(sentences)


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
