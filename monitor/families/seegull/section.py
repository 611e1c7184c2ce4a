"""The family's section of the report: the answer first, then every comparison.

``SeegullSection`` is the family's section model: the core's section over drift's
generic records (``monitor.report.records_section.RecordsSection``), which holds nothing
of its own and draws the family's comparisons in Markdown (PR comment, job summary) and
HTML, every value escaped. This module names only the section's words. Identities and
attributes are never shown.
"""

from __future__ import annotations

from monitor.families.seegull.frames import FAMILY_NAME, REVIEW_NOTE
from monitor.report.records_section import RecordsSection


class SeegullSection(RecordsSection):
    """SeeGULL in the report: drift's records of the family, as its answer."""

    family = FAMILY_NAME
    title = "SeeGULL stereotypes in Indian languages"
    anchor = "seegull"
    subject = "SeeGULL"
    legend = (
        "Stereotype rate (frame 1): items where the attribute is likelier after a frame "
        "naming the identity annotators tie it to than after the same frame naming a "
        "contrast identity of the same kind, over the items both runs decided; Δ with "
        "Newcombe's paired interval widened by the design effect of identities, exact "
        f"McNemar p, values in points; {REVIEW_NOTE}."
    )
