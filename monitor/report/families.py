"""The report sections of families that live in their own folder.

Drift's generic comparisons (``ReportInput.family_comparisons``) are grouped by family and
handed to that family's report ``section`` hook, which returns its part of the report as
Markdown or HTML with every value escaped, right under the verdict. A family whose report
data are fields of ``ReportInput`` of their own (association tests) renders them with its
report ``block`` hook, after every family's answer (the pairs' detail, then the association
tests). The report knows no family: a family without either hook has no section.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from monitor.contract.registry import families, find_family
from monitor.report.model import ReportInput

if TYPE_CHECKING:
    from monitor.contract.capabilities import ReportPart
    from monitor.contract.family import Family


def family_sections(report: ReportInput, fmt: Literal["markdown", "html"]) -> list[str]:
    """Each family's section, in the order its comparisons first appear."""
    by_family: dict[str, list] = {}
    for c in report.family_comparisons:
        by_family.setdefault(c.family, []).append(c)
    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    out = []
    for name, comparisons in by_family.items():
        family = find_family(name)
        hook = family.report().section if family else None
        if hook is not None:
            out.append(
                hook(
                    comparisons,
                    fmt=fmt,
                    level=report.level,
                    alpha=report.alpha,
                    snapshot_of=snapshot_of,
                )
            )
    return out


def _parts(
    part: Callable[[Family], ReportPart | None],
    report: ReportInput,
    fmt: Literal["markdown", "html"],
    max_rows: int,
    env: Any,
) -> list[str]:
    """Each family's ``part`` of the report, in the registry's order; empty ones left out
    (an empty part adds no blank line)."""
    out = []
    for family in families():
        hook = part(family)
        if hook is not None and (text := hook(report, fmt=fmt, max_rows=max_rows, env=env)):
            out.append(text)
    return out


def family_leads(
    report: ReportInput, fmt: Literal["markdown", "html"], *, max_rows: int, env: Any = None
) -> list[str]:
    """The ``lead`` parts of families whose report data are fields of ``ReportInput``
    (the pairs' per-pair, per-axis answer), first under the verdict. ``env`` is the HTML
    renderer's Jinja2 environment."""
    return _parts(lambda f: f.report().lead, report, fmt, max_rows, env)


def family_appendices(
    report: ReportInput, fmt: Literal["markdown", "html"], *, max_rows: int, env: Any = None
) -> list[str]:
    """The ``appendix`` parts (a family's reference material, e.g. the pairs'
    repeat groups and methods side by side), which the Markdown places after what
    changed."""
    return _parts(lambda f: f.report().appendix, report, fmt, max_rows, env)


def family_blocks(
    report: ReportInput, fmt: Literal["markdown", "html"], *, max_rows: int, env: Any = None
) -> list[str]:
    """The ``block`` sections of families whose report data are fields of
    ``ReportInput`` (the pairs, the association tests), in the registry's order, where the
    report places them (after every family's answer). ``env`` is the HTML renderer's
    Jinja2 environment."""
    return _parts(lambda f: f.report().block, report, fmt, max_rows, env)
