"""Each family's parts of the report, through its section (``report.section``).

Every registered family's section (its own, or its default where the report holds none)
is asked for one part at a time, in the registry's order; the renderers place the parts
(the lead first under the verdict, the answers under the meta line, the blocks after
every answer, the appendices after what changed). An empty part adds nothing, not even a
blank line. The report knows no family: it only calls the section's methods.
"""

from __future__ import annotations

from typing import Any, Literal

from monitor.report.model import ReportInput
from monitor.report.section import Rendering

Part = Literal["lead", "answer", "block", "appendix"]


def family_parts(
    report: ReportInput,
    part: Part,
    fmt: Literal["markdown", "html"],
    *,
    max_rows: int,
    env: Any = None,
) -> list[str]:
    """Each family's ``part`` in ``fmt``, in the registry's order, empty ones left out.
    ``env``: the HTML renderer's Jinja2 environment; ``max_rows``: the Markdown's row
    budget."""
    how = Rendering(fmt, max_rows, env)
    out = []
    for section in report.every_section():
        text = getattr(section, part)(report, how)
        if text:
            out.append(text)
    return out
