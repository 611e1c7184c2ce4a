"""The short Markdown report for a GitHub job summary or a pull-request comment.

The answer first: one line of verdict, then per compared pair of runs one row per axis
(verdict, rates, Δ with its interval, MDE, neutral control beside its axis: the pairs'
``lead``) and each family's ``answer``; then each family's ``block`` (the pairs' full
verdict table with the line on multiple-testing control and rates in context; the
association tests), what changed between the compared runs, each family's ``appendix``
(the pairs' repeat groups and methods) and the quarantined runs; every part from the
family's section (``report.section``). Plots and the full tables live in the HTML
report. Every value that came from a file or an API goes through ``md()``, which
neutralises both Markdown and raw HTML (GitHub renders inline HTML in comments).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from monitor import fmt
from monitor.records import FamilyComparison
from monitor.report import answer
from monitor.report.families import family_parts
from monitor.report.model import ReportInput
from monitor.report.text import lake_snapshot_line, summary_line

# GitHub comments are capped at 65,536 characters; leave room for a footer.
MAX_CHARS = 60_000
# Everything CommonMark/GFM gives meaning to mid-line: emphasis, code, links, tables,
# strikethrough, math. Line-start syntax (#, -, +, 1.) cannot occur: a value never starts
# a line here, and "(" or "!" mean nothing without the "[" escaped here. <, > and & become
# HTML entities, so no raw HTML (and no attribute to break out of) can start.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|~$])")
VERDICT_BADGE = {
    "regression": "🔴 **regression**",
    "improvement": "🟢 **improvement**",
    "not comparable": "⚪ not comparable",
    "no significant change": "no significant change",
}
_SHOWN_CATEGORIES = ("model", "measurement", "environment", "other")
# GitHub turns "@name" into a notification and "https://…" or "www.…" into a link even
# in escaped text; a WORD JOINER (U+2060, invisible) after the "@", the scheme's ":" or
# the "www" keeps the text as it reads and stops GitHub matching either.
_ACTIVE = re.compile(r"(?i)@(?=[\w-])|(?<=[a-z0-9]):(?=//)|(?<=\bwww)(?=\.)")


def md(value: object, limit: int = 160) -> str:
    """One untrusted value as inert inline Markdown: one line, escaped, clipped, with no
    active mention or autolink."""
    text = fmt.clip(" ".join(str(value).split()), limit)
    return html.escape(_MD_SPECIAL.sub(r"\\\1", _inert(text)), quote=False)


def flagged_changes(flagged: Sequence[FamilyComparison], otherwise: str) -> list[str]:
    """A family section's Markdown lead: each flagged comparison's verdict and its change
    in words, one bullet each, or ``otherwise`` when nothing was flagged."""
    if not flagged:
        return [otherwise]
    return [f"- **{md(c.verdict.label)}**: {md(c.change, 300)}" for c in flagged]


def _inert(text: str) -> str:
    """``text`` with mentions and bare URLs neutralised (``_ACTIVE``)."""
    return _ACTIVE.sub(lambda m: m.group(0) + "\u2060", text)


def _what_changed(report: ReportInput) -> list[str]:
    """Per compared pair of runs, what else differs between them: the pairs of runs in
    the order of the report's verdicts (family by family, the pairs' drifts first), then
    any other run pair the report holds a diff for."""
    lines: list[str] = []
    diffs = {(d.new_run_id, d.baseline_run_id): d for d in report.provenance}
    keys: dict[tuple[str, str | None], str] = {}  # pair of runs -> snapshot, in order
    for v in answer.verdict_refs(report):
        keys.setdefault((v.new_run_id, v.baseline_run_id), v.snapshot_id)
    for d in report.provenance:
        keys.setdefault((d.new_run_id, d.baseline_run_id), d.snapshot_id)
    for key, snapshot_id in keys.items():
        new_run_id, baseline_run_id = key
        if baseline_run_id is None:
            continue
        diff = diffs.get(key)
        # Whole run ids: runs of several snapshots can share a long prefix.
        head = f"- **{md(snapshot_id, 60)}** {md(baseline_run_id, 120)} → {md(new_run_id, 120)}"
        if diff is None:
            lines.append(f"{head}: provenance not available")
            continue
        if diff.attribution:
            head += f": {md(diff.attribution, 80)}"
        lines.append(head)
        groups = [(cat, ch) for cat, ch in diff.by_category() if cat in _SHOWN_CATEGORIES]
        if not groups:
            lines.append("  - no model, measurement or environment field differs")
        for cat, changes in groups:
            shown = [
                f"{md(ch.field, 80)} {md(ch.old if ch.old is not None else '(absent)', 60)} → "
                f"{md(ch.new if ch.new is not None else '(absent)', 60)}"
                for ch in changes[:8]
            ]
            more = f"; and {len(changes) - 8} more" if len(changes) > 8 else ""
            lines.append(f"  - {cat}: " + "; ".join(shown) + more)
    return lines


def render_markdown(report: ReportInput, *, max_rows: int = 40) -> str:
    """The report as GitHub-flavoured Markdown, at most ``MAX_CHARS`` long: the verdict
    line, the per-axis table, then the detail under the report's title."""
    out = [f"**Verdict:** {md(answer.headline(report), 1200)}", ""]
    out += family_parts(report, "lead", "markdown", max_rows=max_rows)
    out += [f"## {md(report.title, 120)}", ""]
    window = f" · since {fmt.day(report.since)}" if report.since else ""
    out.append(f"Generated {fmt.when(report.generated_at)}{window} · {summary_line(report)}")
    out.append("")
    if report.lake_snapshot is not None:
        out += [md(lake_snapshot_line(report.lake_snapshot), 200), ""]
    # Families in their own folder answer right under the verdict, as in the HTML.
    families = family_parts(report, "answer", "markdown", max_rows=max_rows)
    out += families
    blocks = family_parts(report, "block", "markdown", max_rows=max_rows)
    if not families and not sum(answer.verdict_counts(report).values()):
        out += ["No comparisons in this report.", ""]
    out += blocks
    changed = _what_changed(report)
    if changed:
        out += ["### What changed", "", *changed, ""]
    # Reference material (repeat groups, methods) after what changed: a long history's
    # repeat groups must not push that past the length limit.
    out += family_parts(report, "appendix", "markdown", max_rows=max_rows)

    quarantined = report.quarantined()
    if quarantined:
        out += ["### Quarantined runs", ""]
        for r in quarantined:
            why = r.reason or "; ".join(report.failures_of(r.run_id)) or "reason not recorded"
            out.append(
                f"- {md(r.run_id, 40)} ({md(r.snapshot_id, 60)}, {fmt.day(r.started_at)}): "
                f"{md(why, 200)}"
            )
        out.append("")

    for note in report.notes:
        out.append(f"_{md(note, 300)}_")
    text = "\n".join(out).rstrip() + "\n"
    if len(text) > MAX_CHARS:
        cut = text.rfind("\n", 0, MAX_CHARS)
        text = text[:cut] + "\n\n… truncated; the HTML report has everything.\n"
    return text
