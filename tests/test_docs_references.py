"""Code references in the README and the docs pages point at files that exist.

`mkdocs build --strict` (``make docs``) checks links between pages; it does not look inside
code spans, where the docs name the modules, scripts and tests a statement rests on
(`monitor/metrics/ranking.py`, `tests/test_secrets_echoed.py`). A renamed module would
leave such a reference pointing at nothing, so each one is checked here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# A repository path in a code span: a top-level folder of this repository, then a path.
REPO_PATH = re.compile(
    r"`((?:monitor|scripts|tests|bench|data|docker|requirements|snapshots|examples|docs"
    r"|\.github|\.ci)/[A-Za-z0-9_./-]*)`"
)
# Generated or per-run locations, not files of the repository.
NOT_FILES = ("results/", "runs/")


def references(page: Path) -> list[str]:
    return [
        m.group(1).rstrip("/.")
        for m in REPO_PATH.finditer(page.read_text(encoding="utf-8"))
        if not m.group(1).startswith(NOT_FILES)
    ]


def test_the_pages_name_repository_files() -> None:
    """The pattern finds what it is for (a check that finds nothing would pass anyway)."""
    found = {r for page in PAGES for r in references(page)}
    assert "monitor/metrics/ranking.py" in found and "scripts/vllm-serve" in found
    assert len(found) > 20


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_code_references_exist(page: Path) -> None:
    missing = [r for r in references(page) if not (ROOT / r).exists()]
    assert not missing, f"{page.name} names files that do not exist: {missing}"


def test_readme_links_exist() -> None:
    """The README is not part of the mkdocs site, so its links are checked here."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert "docs/index.md" in local
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"
