"""Reading and changing a family's section of a ``ReportInput`` in tests.

The report holds each family's data in the family's own section model; these helpers
give the tests the pairs' and association tests' sections, and a report with fields of
one changed (generic fields and the section's alike, as ``model_copy`` would).
"""

from __future__ import annotations

from typing import Any

from monitor.families.association.section import AssociationSection
from monitor.families.pairs.section import PairsSection
from monitor.report.model import ReportInput
from monitor.report.section import FamilySection


def pairs(report: ReportInput) -> PairsSection:
    """The report's pair section (its default where it has none)."""
    return report.section_of(PairsSection)


def associations(report: ReportInput) -> AssociationSection:
    """The report's association section (its default where it has none)."""
    return report.section_of(AssociationSection)


def updated(
    report: ReportInput, kind: type[FamilySection] = PairsSection, **update: Any
) -> ReportInput:
    """``report`` with ``update`` applied: the section ``kind``'s fields to that section,
    the rest to the report."""
    own = {k: v for k, v in update.items() if k in kind.model_fields}
    rest = {k: v for k, v in update.items() if k not in own}
    if own:
        section = report.section_of(kind).model_copy(update=own)
        others = tuple(s for s in report.sections if not isinstance(s, kind))
        rest["sections"] = (*others, section)
    return report.model_copy(update=rest)
