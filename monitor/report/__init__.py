"""The report room: Markdown, self-contained HTML and JSON from a ``ReportInput``.

It renders what it is handed and never queries the store; see ``model.py`` for the shape.
"""

from __future__ import annotations

import os
from pathlib import Path

from monitor.errors import UserInputError
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
    "append_summary",
    "from_json",
    "read_json",
    "render_html",
    "render_markdown",
    "to_json",
    "write_report",
]


def write_report(report: ReportInput, folder: Path, stem: str = "report") -> dict[str, Path]:
    """Write ``<stem>.md``, ``<stem>.html`` and ``<stem>.json`` into ``folder``.

    All three are rendered first and written under temporary names, then moved into
    place, so a failure (a full disk, a folder that is a file) leaves no half-written
    report; problems with the folder are one-line ``UserInputError``s.
    """
    texts = {
        "markdown": (folder / f"{stem}.md", render_markdown(report)),
        "html": (folder / f"{stem}.html", render_html(report)),
        "json": (folder / f"{stem}.json", to_json(report)),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise UserInputError(f"--out {folder}: exists and is not a folder") from None
    except OSError as exc:
        raise UserInputError(f"--out {folder}: cannot create it ({exc.strerror})") from None
    staged: list[tuple[Path, Path]] = []
    try:
        for path, text in texts.values():
            if path.is_dir():
                raise UserInputError(f"--out {folder}: {path.name} is a folder")
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            staged.append((tmp, path))
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        raise UserInputError(
            f"--out {folder}: cannot write the report ({exc.strerror or exc})"
        ) from None
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
    return {kind: path for kind, (path, _) in texts.items()}


def append_summary(report: ReportInput, path: Path) -> None:
    """Append the Markdown to ``path`` (a job summary), in one write; a path that cannot
    be written is a one-line ``UserInputError`` and nothing is appended."""
    text = render_markdown(report) + "\n"
    try:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(text)
    except IsADirectoryError:
        raise UserInputError(f"--summary {path}: is a folder, not a file") from None
    except OSError as exc:
        raise UserInputError(f"--summary {path}: cannot append ({exc.strerror})") from None
