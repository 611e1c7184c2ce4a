"""What the sentence-pair family shows in the report: its section's data.

Drift's per-axis comparisons as the report's ``Comparison`` models, each compared run's
bias rates in context, the bias rate over time per snapshot × axis, the repeat groups
and the methods side by side. ``section.PairsSection`` adds how they are drawn; the
modules that draw a part (``answer``, ``charts``) read the data through ``own``.

In the report's JSON (schema 2) the fields keep the places they had before sections
existed: ``comparisons`` first, ``trends`` before ``provenance``, the rest before
``fdr_note``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from monitor.families.pairs import NAME
from monitor.report.model import (
    Comparison,
    MethodComparison,
    RepeatGroup,
    ReportInput,
    ScoreContext,
    Trend,
)
from monitor.report.section import FamilySection


class PairsData(FamilySection):
    """The pairs' data in the report. ``comparisons``: axes both runs of a pair scored
    (controls are not among them); ``contexts``: bias rates of compared runs, in context;
    ``trends``: the bias rate over time; ``repeat_groups``: runs of one configuration,
    with their noise; ``methods``: axes measured by more than one method."""

    family: ClassVar[str] = NAME
    json_before: ClassVar[Mapping[str, str]] = {
        "comparisons": "unscored",
        "trends": "provenance",
        "contexts": "fdr_note",
        "repeat_groups": "fdr_note",
        "methods": "fdr_note",
    }

    comparisons: tuple[Comparison, ...] = ()
    trends: tuple[Trend, ...] = ()
    contexts: tuple[ScoreContext, ...] = ()
    repeat_groups: tuple[RepeatGroup, ...] = ()
    methods: tuple[MethodComparison, ...] = ()

    def shows_trends(self) -> bool:
        return bool(self.trends)


def own(report: ReportInput) -> PairsData:
    """The report's pair section (its default where the report holds none)."""
    return report.section_of(PairsData)
