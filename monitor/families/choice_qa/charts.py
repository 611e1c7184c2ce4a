"""The choice-QA family's charts in the HTML report: per compared pair of runs, accuracy
and BBQ's bias scores per category, the new run beside its baseline with intervals.

``run_measures``: the compared runs' own measures (``acc_ambig``, ``acc_disambig``,
``bias_ambig``, ``bias_disambig`` per category, with the template-cluster intervals the
run stored), read through the typed reading protocol for the categories drift compared.
``report_block``: the section's block, the two charts per pair (HTML only; the Markdown
has the tables).
Accuracy matters beside the bias scores: a model that answers "unknown" everywhere has
s_AMB = 0 and is wrong on every disambiguated question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor import fmt as f
from monitor.readmodel.reader import RunReader
from monitor.records import FamilyComparison
from monitor.report import charts
from monitor.report.html import render_folder_template
from monitor.report.model import MeasureValue, ReportInput
from monitor.report.section import Rendering

_HERE = Path(__file__).parent
FAMILY = "choice-qa"

# measure -> the row's label; accuracy on a 0–100% scale, the bias scores on −100..100.
ACCURACY = {"acc_ambig": "accuracy, ambiguous", "acc_disambig": "accuracy, disambiguated"}
BIAS = {"bias_ambig": "s_AMB, ambiguous", "bias_disambig": "s_DIS, disambiguated"}


def run_measures(view: RunReader, comparisons: Sequence[Any]) -> tuple[MeasureValue, ...]:
    """Each compared run's accuracy and bias scores on the (benchmark, category) pairs
    drift compared (the section's ``run_measures``)."""
    subjects = {(c.benchmark, c.axis) for c in comparisons}
    runs = dict.fromkeys(r for c in comparisons for r in (c.baseline_run_id, c.new_run_id))
    out = [
        MeasureValue(
            run_id=rid,
            benchmark=m.benchmark,
            axis=m.axis,
            measure=m.measure,
            value=m.value,
            ci=None if m.ci_low is None or m.ci_high is None else (m.ci_low, m.ci_high),
            n=m.n,
        )
        for rid in runs
        for m in view.measures(rid)
        if (m.benchmark, m.axis) in subjects and m.measure in ACCURACY | BIAS
    ]
    return tuple(out)


@dataclass(frozen=True)
class PairCharts:
    """One compared pair of runs' two charts."""

    anchor: str
    title: str
    sub: str
    accuracy: charts.DotChart
    accuracy_caption: str
    bias: charts.DotChart
    bias_caption: str


def _estimates(
    labels: dict[str, str],
    benchmark: str,
    axis: str,
    runs: dict[charts.Side, str],
    values: dict[tuple[str, str, str, str], MeasureValue],
    compared: dict[tuple[str, str], FamilyComparison],
) -> list[charts.Estimate]:
    """Each measure of ``labels`` in both runs: the run's stored value and interval, or
    (a report read back from an older JSON) drift's paired value without one."""
    out = []
    for measure, label in labels.items():
        for side, rid in runs.items():
            m = values.get((rid, benchmark, axis, measure))
            if m is not None:
                low, high = m.ci or (None, None)
                out.append(charts.Estimate(label, side, m.value, low, high))
                continue
            c = compared.get((axis, measure))
            if c is not None:
                value = c.value_old if side == "baseline" else c.value_new
                out.append(charts.Estimate(label, side, value))
    return out


def pair_charts(report: ReportInput, measures: Sequence[MeasureValue]) -> list[PairCharts]:
    """Per compared pair of runs, accuracy and bias scores per category (``measures``:
    the section's values of the compared runs)."""
    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    values = {(m.run_id, m.benchmark, m.axis, m.measure): m for m in measures}
    by_pair: dict[tuple[str, str], list[FamilyComparison]] = {}
    for c in report.comparisons_of(FAMILY):
        by_pair.setdefault((c.new_run_id, c.baseline_run_id), []).append(c)
    out = []
    for i, ((new, base), comps) in enumerate(by_pair.items()):
        runs: dict[charts.Side, str] = {"baseline": base, "new": new}
        compared = {(c.axis, c.measure): c for c in comps}
        subjects = sorted({(c.benchmark, c.axis) for c in comps}, key=lambda s: (s[1] == "all", s))

        def groups(
            labels: dict[str, str], subjects=subjects, runs=runs, compared=compared
        ) -> list[tuple[str, list[charts.Estimate]]]:
            return [
                (f"{axis} ({bench})", est)
                for bench, axis in subjects
                if (est := _estimates(labels, bench, axis, runs, values, compared))
            ]

        snap = snapshot_of.get(new, f.MISSING)
        base_snap = snapshot_of.get(base, f.MISSING)
        who = f"{snap} {f.short_id(new, 28)} beside its baseline {base_snap} {f.short_id(base, 28)}"
        out.append(
            PairCharts(
                anchor=f"choice-qa-chart-{i}",
                title=f"{snap} — choice questions per category, new run beside its baseline",
                sub=f"new {new} · baseline {base}",
                accuracy=charts.dot_chart(groups(ACCURACY), charts.ACCURACY_SCALE),
                accuracy_caption=f"Accuracy per category, {who}, with {report.level} "
                "template-cluster intervals",
                bias=charts.dot_chart(groups(BIAS), charts.SCORE_SCALE),
                bias_caption=f"BBQ bias scores per category in points (−100 to 100, 0: no "
                f"bias), {who}, with {report.level} template-cluster intervals",
            )
        )
    return out


def report_block(report: ReportInput, measures: Sequence[MeasureValue], how: Rendering) -> str:
    """The section's ``block``: the charts in the HTML (none in the Markdown, whose
    tables say the same in a PR comment's width); empty without choice-question runs."""
    if how.fmt != "html":
        return ""
    pairs = pair_charts(report, measures)
    if not pairs:
        return ""
    return render_folder_template(how.env, _HERE, "charts.html.j2", pairs=pairs, level=report.level)
