"""The choice-QA family's section of the report (``ChoiceSection``): its answer first,
then every comparison; the charts are its block (``charts``).

Markdown (PR comment, job summary) and HTML; every value from a run or a benchmark is
escaped (``report.markdown.md`` for Markdown, Jinja2 autoescape for HTML), so a snapshot
name cannot inject markup. Item texts are never shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from jinja2 import Environment, StrictUndefined

from monitor import fmt as f
from monitor.contract.capabilities import ReportScope
from monitor.families.choice_qa import NAME, charts
from monitor.readmodel.reader import RunReader
from monitor.records import FamilyComparison
from monitor.report.markdown import flagged_changes, md
from monitor.report.model import MeasureValue, ReportInput
from monitor.report.section import FamilySection, Rendering

TITLE = "Choice questions (BBQ, BharatBBQ)"

# The HTML part is a Jinja2 template beside this module (autoescaped).
_HTML = Path(__file__).with_name("section.html.j2")


def report_answer(report: ReportInput, how: Rendering) -> str:
    """The section's ``answer``: the choice questions' comparison tables ("" for none)."""
    comparisons = report.comparisons_of(NAME)
    if not comparisons:
        return ""
    return report_section(
        comparisons,
        fmt=how.fmt,
        level=report.level,
        alpha=report.alpha,
        snapshot_of={r.run_id: r.snapshot_id for r in report.runs},
    )


class ChoiceSection(FamilySection):
    """The choice questions in the report. Their comparisons are drift's generic records
    (``ReportInput.family_comparisons``), drawn as the section's ``answer`` (the tables)
    and worded by the default headline; ``run_measures``: the compared runs' own accuracy
    and bias scores per category with their intervals, which its ``block`` charts. In the
    JSON (schema 2) ``run_measures`` comes just before ``alpha``."""

    family = NAME

    run_measures: tuple[MeasureValue, ...] = ()

    answer = staticmethod(report_answer)

    def block(self, report: ReportInput, how: Rendering) -> str:
        return charts.report_block(report, self.run_measures, how)


def build_section(
    view: RunReader, comparisons: Sequence[Any], scope: ReportScope
) -> ChoiceSection | None:
    """The ``Report.build`` hook: the compared runs' measures (None where drift compared
    none of the family's runs)."""
    measures = charts.run_measures(view, comparisons)
    return ChoiceSection(run_measures=measures) if measures else None


def _num(x: float | None, signed: bool = True) -> str:
    if x is None:
        return f.MISSING
    return f"{100 * x:+.1f}".replace("-", "−") if signed else f"{100 * x:.1f}"


def _delta(c: FamilyComparison) -> str:
    if c.delta is None:
        return f.MISSING
    ci = "" if c.ci_low is None or c.ci_high is None else f" [{_num(c.ci_low)}, {_num(c.ci_high)}]"
    return _num(c.delta) + ci


def _by_pair(
    comparisons: Sequence[FamilyComparison], snapshot_of: Mapping[str, str]
) -> list[tuple[dict[str, str], list[FamilyComparison]]]:
    """The comparisons per compared pair of runs, in the order they came: each pair's
    snapshots and whole run ids (several snapshots' runs share a prefix such as
    ``import-unifiedqa-…``, so a cut id would not tell them apart)."""
    groups: dict[tuple[str, str], list[FamilyComparison]] = {}
    for c in comparisons:
        groups.setdefault((c.new_run_id, c.baseline_run_id), []).append(c)
    out = []
    for (new, base), comps in groups.items():
        runs = {
            "new_run_id": new,
            "baseline_run_id": base,
            "snapshot": snapshot_of.get(new, f.MISSING),
            "baseline_snapshot": snapshot_of.get(base, f.MISSING),
            "role": comps[0].role,
        }
        out.append((runs, comps))
    return out


def report_section(
    comparisons: Sequence[FamilyComparison],
    *,
    fmt: Literal["markdown", "html"],
    level: str,
    alpha: float,
    snapshot_of: Mapping[str, str],
) -> str:
    """The section in ``fmt``: flagged changes in words first, then a table per compared
    pair of runs (headed by its snapshots and run ids) with one row per test.
    ``snapshot_of``: run id -> snapshot name, for the runs the report covers."""
    # Flagged drifts and, between runs that differ by design (languages), differences.
    flagged = [c for c in comparisons if c.flagged or c.verdict.label == "difference"]
    note = comparisons[0].noise_note if comparisons else ""
    contrasts = list(dict.fromkeys(c.contrast for c in comparisons if c.contrast))
    if fmt == "html":
        env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True)
        return env.from_string(_HTML.read_text(encoding="utf-8")).render(
            title=TITLE,
            flagged=flagged,
            contrasts=contrasts,
            comps=comparisons,
            pairs=_by_pair(comparisons, snapshot_of),
            level=level,
            note=note or "",
            num=_num,
            delta=_delta,
            p=f.pvalue,
        )
    out = [f"### {TITLE}", "", *(f"_{md(w, 400)}_\n" for w in contrasts)]
    out += flagged_changes(
        flagged, f"No flagged change in the choice questions ({len(comparisons)} comparisons)."
    )
    for runs, comps in _by_pair(comparisons, snapshot_of):
        role = f" ({md(runs['role'], 80)})" if runs["role"] != "previous run" else ""
        out += [
            "",
            # Run ids as plain escaped text, as the pair comparisons show them.
            f"**new** {md(runs['snapshot'], 120)}, run {md(runs['new_run_id'], 120)} · "
            f"**baseline** {md(runs['baseline_snapshot'], 120)}, run "
            f"{md(runs['baseline_run_id'], 120)}{role}",
            "",
            f"| Category | Measure | Baseline → new | Δ [{level}] | MDE | p | p (BH) | Verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in comps:
            out.append(
                f"| {md(c.axis)} | {md(c.measure)} {md(c.label)} | "
                f"{_num(c.value_old, c.signed)} → {_num(c.value_new, c.signed)} | "
                f"{_delta(c)} | {_num(c.mde, False)} | {f.pvalue(c.p_value)} | "
                f"{f.pvalue(c.p_adjusted)} | {md(c.verdict.label)} |"
            )
    out += ["", f"_Values and Δ in points; {md(note or '', 300)}_", ""]
    return "\n".join(out)
