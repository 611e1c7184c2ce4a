"""The family's section of the report: the answer first, then every comparison.

``SeegullSection`` is the family's section model (``monitor.report.section``): it
holds nothing of its own, because the family's comparisons are drift's generic records,
which the report carries (``ReportInput.family_comparisons``, in the JSON too) and the
section reads with ``comparisons_of``; the defaults word its share of the one-line
verdict and count its verdicts. Its ``answer`` draws them in Markdown (PR comment, job
summary) and HTML. Every value from a run or a benchmark is escaped
(``monitor.report.markdown.md`` in Markdown; Jinja2 autoescape in HTML), so a snapshot
name cannot inject markup. Identities and attributes are never shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.resources import files
from typing import Literal

from jinja2 import Environment, StrictUndefined

from monitor import fmt as f
from monitor.families.seegull.frames import FAMILY_NAME, REVIEW_NOTE
from monitor.records import FamilyComparison
from monitor.report.markdown import flagged_changes, md
from monitor.report.model import ReportInput
from monitor.report.section import FamilySection, Rendering

TITLE = "SeeGULL stereotypes in Indian languages"
ANCHOR = "seegull"
LEGEND = (
    "Stereotype rate (frame 1): items where the attribute is likelier after a frame naming "
    "the identity annotators tie it to than after the same frame naming a contrast identity "
    "of the same kind, over the items both runs decided; Δ with Newcombe's paired interval "
    "widened by the design effect of identities, exact McNemar p, values in points; "
    f"{REVIEW_NOTE}."
)


class SeegullSection(FamilySection):
    """SeeGULL in the report: drift's records of the family, as its answer."""

    family = FAMILY_NAME

    def answer(self, report: ReportInput, how: Rendering) -> str:
        comparisons = report.comparisons_of(self.family)
        if not comparisons:
            return ""
        return report_section(
            comparisons,
            fmt=how.fmt,
            level=report.level,
            snapshot_of={r.run_id: r.snapshot_id for r in report.runs},
        )


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


def report_section(
    comparisons: Sequence[FamilyComparison],
    *,
    fmt: Literal["markdown", "html"],
    level: str,
    snapshot_of: Mapping[str, str],
) -> str:
    """The section in ``fmt``: flagged changes in words first, then one row per compared
    pair of runs and benchmark."""
    flagged = [c for c in comparisons if c.flagged]
    rows = _rows(comparisons, snapshot_of)
    if fmt == "html":
        env = Environment(autoescape=True, undefined=StrictUndefined, trim_blocks=True)
        template = files("monitor.families.seegull").joinpath("section.html.j2").read_text("utf-8")
        return env.from_string(template).render(
            title=TITLE, anchor=ANCHOR, flagged=flagged, rows=rows, level=level, legend=LEGEND
        )
    out = [f"### {TITLE}", ""]
    out += flagged_changes(
        flagged, f"No flagged change in SeeGULL ({len(comparisons)} comparisons)."
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
            f"{md(r['benchmark'])} | {r['values']} | {r['delta']} | {r['mde']} | {r['p']} | "
            f"{r['p_bh']} | {md(r['verdict'])} |"
        )
    out += ["", f"_{md(LEGEND, 400)}_", ""]
    return "\n".join(out)
