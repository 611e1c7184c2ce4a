"""The short Markdown report for a GitHub job summary or a pull-request comment.

The answer first: one line of verdict, then per compared pair of runs one row per axis
(verdict, rates, Δ with its interval, MDE, neutral control beside its axis); then the
detail: the full verdict table, one line on multiple-testing control, what changed
between the compared runs, and the quarantined runs. Plots and the full tables live in
the HTML report. Every value that came from a file or an API goes through ``md()``, which
neutralises both Markdown and raw HTML (GitHub renders inline HTML in comments).
"""

from __future__ import annotations

import html
import re

from monitor import fmt
from monitor.metrics.panel import PANEL_METRICS
from monitor.report import answer
from monitor.report.families import family_blocks, family_sections
from monitor.report.model import Comparison, ReportInput
from monitor.report.text import fdr_text, summary_line

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


def _inert(text: str) -> str:
    """``text`` with mentions and bare URLs neutralised (``_ACTIVE``)."""
    return _ACTIVE.sub(lambda m: m.group(0) + "\u2060", text)


def _row(c: Comparison) -> str:
    verdict = VERDICT_BADGE[c.verdict]
    if c.verdict == "not comparable" and c.reason:
        verdict += f": {md(c.reason, 100)}"
    cells = [
        md(c.snapshot_id, 60),
        f"{md(c.axis, 40)} ({md(c.benchmark, 40)})",
        f"{fmt.rate_with_ci(c.rate_old, c.ci_old)} → {fmt.rate_with_ci(c.rate_new, c.ci_new)}",
        f"{fmt.pp(c.delta)} {fmt.pp_interval(c.delta_ci)}; MDE {fmt.mde(c.mde)}"
        if c.delta is not None
        else fmt.MISSING,
        fmt.flips(c.b_to_anti, c.c_to_stereo),
        fmt.pvalue(c.p_value),
        fmt.pvalue(c.p_adjusted),
        verdict,
    ]
    return "| " + " | ".join(cells) + " |"


def _context_cell(r) -> str:
    if r is None:
        return fmt.MISSING
    text = fmt.rate_with_ci(r.value, r.ci)
    return text + (f" (ctl {fmt.pct(r.control)})" if r.control is not None else "")


def _contexts(report: ReportInput, limit: int = 40) -> list[str]:
    """Each bias rate beside its neutral control and the metric panel: 50% is not
    automatically unbiased, and the number depends on the metric."""
    if not report.contexts:
        return []
    lines = [
        f"| Snapshot | Axis (benchmark) | Run | Bias rate ({report.level}) | Neutral control | "
        + "".join(f"{m} | " for m in PANEL_METRICS)
        + "All three agree |",
        "|---|---|---|---|---|" + "---|" * len(PANEL_METRICS) + "---|",
    ]
    for c in report.contexts[:limit]:
        panel = {p.label: p for p in c.panel}
        lines.append(
            "| "
            + " | ".join(
                [
                    md(c.snapshot_id, 60),
                    f"{md(c.axis, 40)} ({md(c.benchmark, 40)})",
                    md(fmt.short_id(c.run_id, 20)),
                    f"{fmt.rate_with_ci(c.rate.value, c.rate.ci)} {md(c.metric, 20)}",
                    (
                        f"{fmt.rate_with_ci(c.control.value, c.control.ci)} "
                        f"{md(c.control_benchmark or '', 40)}"
                        if c.control
                        else fmt.MISSING
                    ),
                    *(_context_cell(panel.get(m)) for m in PANEL_METRICS),
                    (
                        f"{fmt.pct(c.agreement.value)} of {c.agreement.n}"
                        if c.agreement
                        else fmt.MISSING
                    ),
                ]
            )
            + " |"
        )
    lines += [
        "",
        "> Neutral control: share of content-free sentence pairs in which the model prefers "
        "the control's first group (bhed-neutral: the Brahmin sentence over the Dalit one); "
        "ctl = the control under that metric.",
    ]
    return lines


def _what_changed(report: ReportInput) -> list[str]:
    """Per compared pair of runs, what else differs between them: the pair axes' pairs
    first (drifts first), then those of the other families' comparisons."""
    lines: list[str] = []
    diffs = {(d.new_run_id, d.baseline_run_id): d for d in report.provenance}
    keys: dict[tuple[str, str | None], str] = {}  # pair of runs -> snapshot, in order
    for c in answer.verdict_comparisons(report):
        keys.setdefault((c.new_run_id, c.baseline_run_id), c.snapshot_id)
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


MAX_SUMMARIES = 12  # comparisons explained in words; drifts and configuration changes first


def _what_it_means(report: ReportInput) -> list[str]:
    """The plain-words verdict of the comparisons a reader should read first: every flag,
    every configuration change, then the rest, up to ``MAX_SUMMARIES``."""
    ranked = sorted(
        (c for c in answer.verdict_comparisons(report) if c.summary),
        key=lambda c: (c.verdict not in ("regression", "improvement"), c.role == "previous run"),
    )
    started = {r.run_id: r.started_at for r in report.runs}

    def label(run_id: str | None) -> str:
        at = started.get(run_id) if run_id else None
        if run_id is None or at is None:
            return md(fmt.short_id(run_id, 20))
        return f"{fmt.day(at)} (…{md(run_id[-8:])})"

    lines = []
    for c in ranked[:MAX_SUMMARIES]:
        head = (
            f"- **{md(c.snapshot_id, 60)}** {md(c.axis, 40)} ({md(c.benchmark, 40)}), "
            f"{label(c.baseline_run_id)} → {label(c.new_run_id)}"
        )
        lines.append(f"{head}: {md(c.summary, 2400)}")
    if len(ranked) > MAX_SUMMARIES:
        lines.append(f"- … {len(ranked) - MAX_SUMMARIES} more in the HTML report.")
    return lines


def _repeat_groups(report: ReportInput) -> list[str]:
    lines = []
    for g in report.repeat_groups:
        for a in g.axes:
            lines.append(
                f"- **{md(g.snapshot_id, 60)}** {md(g.description, 120)}, {md(a.axis, 40)}: "
                f"flip rate per pair of runs {md(fmt.distribution(a.pair_flip_rates), 400)}; "
                f"noise floor {fmt.pct(a.flip_floor)}; bias rate per run "
                f"{md(fmt.pct_list(a.bias_rates), 300)}"
            )
    return lines


def _methods(report: ReportInput) -> list[str]:
    lines = []
    for m in report.methods:
        runs = "; ".join(
            f"{md(r.metric, 60)} {fmt.day(r.started_at)}: {fmt.rate_with_ci(r.value, r.ci)}"
            + (f" (n = {r.n})" if r.n else "")
            for r in m.runs
        )
        lines.append(
            f"- **{md(m.snapshot_id, 60)}** {md(m.axis, 40)} ({md(m.benchmark, 40)}): {runs}. "
            f"{md(m.note, 400)}"
        )
    return lines


def _answer(report: ReportInput, max_rows: int) -> list[str]:
    """Per compared pair: the two runs named once (snapshot names and run ids in full),
    then one row per axis; the neutral control only in its axis's row. Every flagged
    axis is shown; quiet ones fill up to ``max_rows`` rows in all."""
    lines: list[str] = []
    pairs = answer.pairs(report)
    quiet_budget = max(0, max_rows - sum(len(p.flagged) for p in pairs))
    left_out = 0
    for p in pairs:
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
            delta = (
                f"{fmt.pp(c.delta)} {fmt.pp_interval(c.delta_ci)}"
                if c.delta is not None
                else fmt.MISSING
            )
            control = (
                f"{fmt.pct(row.control.old)} → {fmt.pct(row.control.new)} "
                f"({md(row.control.benchmark, 40)})"
                if row.control
                else fmt.MISSING
            )
            lines.append(
                f"| {md(c.axis, 40)} ({md(c.benchmark, 40)}) | {verdict} | "
                f"{fmt.pct(c.rate_old)} → {fmt.pct(c.rate_new)} | {delta} | {fmt.mde(c.mde)} "
                f"| {control} |"
            )
        for text in p.unscored_text():
            lines += ["", f"{md(text[0].upper() + text[1:], 400)} (no verdict)."]
        lines.append("")
    if left_out:
        lines += [f"{left_out} more axis comparisons without a flag are in the HTML report.", ""]
    return lines


def render_markdown(report: ReportInput, *, max_rows: int = 40) -> str:
    """The report as GitHub-flavoured Markdown, at most ``MAX_CHARS`` long: the verdict
    line, the per-axis table, then the detail under the report's title."""
    out = [f"**Verdict:** {md(answer.headline(report), 1200)}", ""]
    out += _answer(report, max_rows)
    out += [f"## {md(report.title, 120)}", ""]
    window = f" · since {fmt.day(report.since)}" if report.since else ""
    out.append(f"Generated {fmt.when(report.generated_at)}{window} · {summary_line(report)}")
    out.append("")
    # Families in their own folder answer right under the verdict, as in the HTML.
    families = family_sections(report, "markdown")
    out += families
    rows = answer.verdict_comparisons(report)
    if rows:
        out += [
            "### Paired comparisons in detail",
            "",
            f"| Snapshot | Axis (benchmark) | Bias rate, baseline → new ({report.level} Wilson) "
            f"| Δ (paired {report.level} CI; MDE at 80% power) | Flips →anti / →stereo | p "
            "| p (BH) | Verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        # Every flag is shown however many there are; quiet rows fill up to max_rows.
        flagged = sum(c.verdict in ("regression", "improvement") for c in rows)
        shown = rows[: max(max_rows, flagged)]
        out += [_row(c) for c in shown]
        if len(rows) > len(shown):
            out.append("")
            out.append(f"{len(rows) - len(shown)} more comparisons are in the HTML report.")
        out += ["", f"> {md(fdr_text(report), 600)}", ""]
    else:
        out += [] if families else ["No comparisons in this report.", ""]

    out += family_blocks(report, "markdown", max_rows=max_rows)
    context = _contexts(report)
    if context:
        out += ["### Bias rates in context", "", *context, ""]
    meaning = _what_it_means(report)
    if meaning:
        out += ["### What the verdicts mean", "", *meaning, ""]

    changed = _what_changed(report)
    if changed:
        out += ["### What changed", "", *changed, ""]

    groups = _repeat_groups(report)
    if groups:
        out += ["### Repeat groups (noise floors)", "", *groups, ""]

    methods = _methods(report)
    if methods:
        out += ["### Methods side by side", "", *methods, ""]

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
