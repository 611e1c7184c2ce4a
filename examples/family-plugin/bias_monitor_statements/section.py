"""The family's section of the report: the answer first, then every comparison.

``StatementsSection`` is the family's section model: bias-monitor's section over
drift's generic records (``monitor.report.records_section.RecordsSection``, a public
base a plug-in may subclass), which holds nothing of its own and draws the family's
comparisons in Markdown (PR comment, job summary) and HTML, every value escaped. This
module names only the section's words. Statement texts are never shown.
"""

from __future__ import annotations

from bias_monitor_statements.frame import FAMILY_NAME
from monitor.report.records_section import RecordsSection


class StatementsSection(RecordsSection):
    """The statements in the report: drift's records of the family, as its answer."""

    family = FAMILY_NAME
    title = "True/false statements"
    anchor = "truth-statements"
    subject = "the statements"
    legend = (
        "Share of answers on the stereotype's side (True to a statement that endorses a "
        "stereotype, False to one that rejects it) over the statements both runs answered; "
        "Δ with Newcombe's paired interval, exact McNemar p, values in points."
    )
