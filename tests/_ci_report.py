"""The nightly's issue script (``scripts/ci/github_report.py``), loaded for tests that hold
a real ``drift --format json``: its ``findings`` must read every key it needs from what
the CLI writes, for every kind of result."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ci" / "github_report.py"
_spec = importlib.util.spec_from_file_location("github_report", _SCRIPT)
assert _spec is not None and _spec.loader is not None
github_report = importlib.util.module_from_spec(_spec)
sys.modules["github_report"] = github_report  # dataclasses look their module up there
_spec.loader.exec_module(github_report)
findings = github_report.findings
