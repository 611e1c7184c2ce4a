"""Sentences both renderers print, as plain text; each renderer escapes them its own way."""

from __future__ import annotations

from monitor.report.answer import verdict_counts
from monitor.report.model import ReportInput


def summary_line(report: ReportInput) -> str:
    """Counts of verdicts over every kind of comparison; a neutral control is not a
    comparison of its own here."""
    n = verdict_counts(report)
    total = sum(n.values())
    return (
        f"{total} comparisons: "
        f"{n['regression']} regression{'s' * (n['regression'] != 1)}, "
        f"{n['improvement']} improvement{'s' * (n['improvement'] != 1)}, "
        f"{n['no significant change']} no significant change, "
        f"{n['not comparable']} not comparable"
    )
