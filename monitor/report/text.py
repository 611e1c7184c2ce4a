"""Sentences both renderers print, as plain text; each renderer escapes them its own way."""

from __future__ import annotations

from monitor.report.answer import verdict_comparisons, verdict_counts
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


def fdr_text(report: ReportInput) -> str:
    """How many tests were corrected together: a reader needs it to weigh any one flag."""
    if report.fdr_note:
        return report.fdr_note
    m = sum(c.p_value is not None for c in verdict_comparisons(report))
    return (
        f"p (BH) is Benjamini–Hochberg-adjusted over the {m} paired tests in this report "
        f"(false discovery rate {report.alpha:g}); a drift is flagged only when p (BH) < "
        f"{report.alpha:g} and the flips clear the snapshot's noise floor."
    )
