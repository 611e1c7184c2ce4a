"""The report room: Markdown, self-contained HTML and JSON from a ``ReportInput``.

It renders what it is handed and never queries the store; see ``model.py`` for the shape.
"""

from __future__ import annotations

from pathlib import Path

from monitor.report.html import render_html
from monitor.report.json_out import from_json, read_json, to_json
from monitor.report.markdown import render_markdown
from monitor.report.model import (
    SCHEMA_VERSION,
    AssociationResult,
    Comparison,
    EffectComparison,
    ProvenanceChange,
    ProvenanceDiff,
    QualityResult,
    ReportInput,
    RunSummary,
    Trend,
    TrendPoint,
)

__all__ = [
    "SCHEMA_VERSION",
    "AssociationResult",
    "Comparison",
    "EffectComparison",
    "ProvenanceChange",
    "ProvenanceDiff",
    "QualityResult",
    "ReportInput",
    "RunSummary",
    "Trend",
    "TrendPoint",
    "from_json",
    "read_json",
    "render_html",
    "render_markdown",
    "to_json",
    "write_report",
]


def write_report(report: ReportInput, folder: Path, stem: str = "report") -> dict[str, Path]:
    """Write ``<stem>.md``, ``<stem>.html`` and ``<stem>.json`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {
        "markdown": folder / f"{stem}.md",
        "html": folder / f"{stem}.html",
        "json": folder / f"{stem}.json",
    }
    out["markdown"].write_text(render_markdown(report), encoding="utf-8")
    out["html"].write_text(render_html(report), encoding="utf-8")
    out["json"].write_text(to_json(report), encoding="utf-8")
    return out
