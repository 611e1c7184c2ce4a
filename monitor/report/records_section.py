"""A default section for a family whose comparisons are drift's generic records.

A family whose report shows nothing but its comparisons (``FamilyComparison`` records,
one per compared pair of runs and benchmark; SeeGULL's, the plug-in example's) holds
nothing of its own in its section: the report carries the records
(``ReportInput.family_comparisons``, in the JSON too) and the section reads them with
``comparisons_of``; ``FamilySection``'s defaults word its share of the one-line verdict
and count its verdicts. ``RecordsSection`` is that section's one home: a family subclasses
it naming its ``family``, ``title``, ``anchor``, ``subject`` and ``legend``, and its
``answer`` draws the records in Markdown (PR comment, job summary) and HTML: flagged
changes in words first, then one row per comparison. Every value from a run or a
benchmark is escaped (``markdown.md`` in Markdown; Jinja2 autoescape in HTML), so a
snapshot name cannot inject markup; the records' items are never shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import ClassVar

from jinja2 import Environment, StrictUndefined

from monitor import fmt as f
from monitor.records import FamilyComparison
from monitor.report.markdown import flagged_changes, md
from monitor.report.model import ReportInput
from monitor.report.section import FamilySection, Rendering, ReportFormat


def _num(x: float | None) -> str:
    return f.MISSING if x is None else f"{100 * x:.1f}"


def _delta(c: FamilyComparison) -> str:
    if c.delta is None:
        return f.MISSING
    signed = f"{100 * c.delta:+.1f}".replace("-", f.MINUS)
    if c.ci_low is None or c.ci_high is None:
        return signed
    low, high = (f"{100 * v:+.1f}".replace("-", f.MINUS) for v in (c.ci_low, c.ci_high))
    return f"{signed} [{low}, {high}]"


def _rows(
    comparisons: Sequence[FamilyComparison], snapshot_of: Mapping[str, str]
) -> list[dict[str, str]]:
    return [
        {
            "snapshot": snapshot_of.get(c.new_run_id, f.MISSING),
            "baseline_snapshot": snapshot_of.get(c.baseline_run_id, f.MISSING),
            "new_run_id": c.new_run_id,
            "baseline_run_id": c.baseline_run_id,
            "benchmark": c.benchmark,
            "values": f"{_num(c.value_old)} → {_num(c.value_new)}",
            "delta": _delta(c),
            "mde": f.MISSING if c.mde is None else f"{100 * c.mde:.1f}",
            "p": f.pvalue(c.p_value),
            "p_bh": f.pvalue(c.p_adjusted),
            "verdict": c.verdict.label,
            "reason": c.verdict.reason,
        }
        for c in comparisons
    ]


class RecordsSection(FamilySection):
    """A family's comparisons among drift's records, as its answer.

    ``title`` heads the section (``anchor`` is its HTML id and its table's class);
    ``subject`` names the family in "No flagged change in <subject> (n comparisons).";
    ``legend`` says what the values are, under the table."""

    title: ClassVar[str]
    anchor: ClassVar[str]
    subject: ClassVar[str]
    legend: ClassVar[str]

    def answer(self, report: ReportInput, how: Rendering) -> str:
        comparisons = report.comparisons_of(self.family)
        if not comparisons:
            return ""
        return self.render(
            comparisons,
            fmt=how.fmt,
            level=report.level,
            snapshot_of={r.run_id: r.snapshot_id for r in report.runs},
        )

    def render(
        self,
        comparisons: Sequence[FamilyComparison],
        *,
        fmt: ReportFormat,
        level: str,
        snapshot_of: Mapping[str, str],
    ) -> str:
        """The section in ``fmt``: flagged changes in words first, then one row per
        compared pair of runs and benchmark. ``snapshot_of``: run id -> snapshot name."""
        flagged = [c for c in comparisons if c.flagged]
        rows = _rows(comparisons, snapshot_of)
        if fmt == "html":
            env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True)
            template = files("monitor.report").joinpath("templates/records_section.html.j2")
            return env.from_string(template.read_text("utf-8")).render(
                title=self.title,
                anchor=self.anchor,
                subject=self.subject,
                flagged=flagged,
                rows=rows,
                level=level,
                legend=self.legend,
            )
        out = [f"### {self.title}", ""]
        out += flagged_changes(
            flagged, f"No flagged change in {self.subject} ({len(comparisons)} comparisons)."
        )
        out += [
            "",
            f"| New run | Baseline run | Benchmark | Baseline → new | Δ [{level}] | MDE | p | "
            "p (BH) | Verdict |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            out.append(
                f"| {md(r['snapshot'], 120)} {md(r['new_run_id'], 120)} | "
                f"{md(r['baseline_snapshot'], 120)} {md(r['baseline_run_id'], 120)} | "
                f"{md(r['benchmark'])} | {r['values']} | {r['delta']} | {r['mde']} | "
                f"{r['p']} | {r['p_bh']} | {md(r['verdict'])} |"
            )
        out += ["", f"_{md(self.legend, 400)}_", ""]
        return "\n".join(out)
