"""Sentences both renderers print, as plain text; each renderer escapes them its own way."""

from __future__ import annotations

from datetime import UTC

from monitor.report.answer import verdict_counts
from monitor.report.model import LakeSnapshot, ReportInput


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


def lake_snapshot_line(at: LakeSnapshot) -> str:
    """Where a report read on a lake came from, and how to build it again (both
    renderers print it; a DuckDB file's report has none)."""
    when = at.committed_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"Read at lake snapshot {at.id} (committed {when}); "
        f"report --as-of {at.id} builds this report again"
    )
