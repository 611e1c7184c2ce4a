"""The answer a report leads with, whatever the families: one verdict sentence, and the
verdicts of every comparison to count and list.

Each family says its own part through its section's ``headline`` and ``verdicts``
(``report.section``); a family whose comparisons are drift's generic records
(``ReportInput.family_comparisons``: choice questions) is worded by default from those
records (``section.records_headline``). Families come in the registry's order, as in
``drift``'s output.
"""

from __future__ import annotations

from monitor.report.model import VERDICT_ORDER, ReportInput
from monitor.report.section import FLAGS, VerdictRef

__all__ = ["FLAGS", "VerdictRef", "headline", "verdict_counts", "verdict_refs"]


def verdict_refs(report: ReportInput) -> list[VerdictRef]:
    """Every comparison's verdict, family by family in the registry's order (each
    family's own order inside: the pairs' drifts first)."""
    return [v for section in report.every_section() for v in section.verdicts(report)]


def verdict_counts(report: ReportInput) -> dict[str, int]:
    """Verdicts by kind over every kind of comparison (pair axes, association tests,
    the families' records), controls never counted."""
    refs = verdict_refs(report)
    return {v: sum(r.verdict == v for r in refs) for v in VERDICT_ORDER}


def headline(report: ReportInput) -> str:
    """The verdict in one sentence, plain text: per family, what regressed, what improved,
    or that nothing cleared the test, with how many snapshots were compared."""
    parts = [section.headline(report) for section in report.every_section()]
    text = " ".join(p for p in parts if p)
    return text or "No comparison in this report: no run had a baseline to compare with."
