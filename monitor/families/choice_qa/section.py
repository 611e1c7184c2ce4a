"""The choice-QA family's part of the report: the answer first, then every comparison.

Markdown (PR comment, job summary) and HTML; every value from a run or a benchmark is
escaped (``report.markdown.md`` for Markdown, Jinja2 autoescape for HTML), so a snapshot
name cannot inject markup. Item texts are never shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from jinja2 import Environment, StrictUndefined

from monitor import fmt as f
from monitor.records import FamilyComparison
from monitor.report.markdown import md

TITLE = "Choice questions (BBQ, BharatBBQ)"

# The HTML part is a Jinja2 template beside this module (autoescaped).
_HTML = Path(__file__).with_name("section.html.j2")


def _num(x: float | None, signed: bool = True) -> str:
    if x is None:
        return f.MISSING
    return f"{100 * x:+.1f}".replace("-", "−") if signed else f"{100 * x:.1f}"


def _delta(c: FamilyComparison) -> str:
    if c.delta is None:
        return f.MISSING
    ci = "" if c.ci_low is None or c.ci_high is None else f" [{_num(c.ci_low)}, {_num(c.ci_high)}]"
    return _num(c.delta) + ci


def report_section(
    comparisons: Sequence[FamilyComparison],
    *,
    fmt: Literal["markdown", "html"],
    level: str,
    alpha: float,
) -> str:
    """The section in ``fmt``: flagged changes in words first, then one row per test."""
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
            level=level,
            note=note or "",
            short=lambda r: f.short_id(r, 16),
            num=_num,
            delta=_delta,
            p=f.pvalue,
        )
    out = [f"### {TITLE}", "", *(f"_{md(w, 400)}_\n" for w in contrasts)]
    if flagged:
        out += [f"- **{md(c.verdict.label)}**: {md(c.change, 300)}" for c in flagged]
    else:
        out.append(f"No flagged change in the choice questions ({len(comparisons)} comparisons).")
    out += [
        "",
        f"| Category | Measure | Baseline → new | Δ [{level}] | MDE | p | p (BH) | Verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        out.append(
            f"| {md(c.axis)} | {md(c.measure)} {md(c.label)} | "
            f"{_num(c.value_old, c.signed)} → {_num(c.value_new, c.signed)} | {_delta(c)} | "
            f"{_num(c.mde, False)} | {f.pvalue(c.p_value)} | {f.pvalue(c.p_adjusted)} | "
            f"{md(c.verdict.label)} |"
        )
    out += ["", f"_Values and Δ in points; {md(note or '', 300)}_", ""]
    return "\n".join(out)
