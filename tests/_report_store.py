"""A real store for the report layout tests, built once per session through the CLI.

Two compared pairs, as a reader meets them: the GPT-4o caste study imported from its
April and July result files (four axes, long run ids that name the snapshot), and two
SmolLM2 runs of caste and religion, the first with the metric panel and caste's neutral
control (bhed-neutral), the second with ``--no-panel`` (the run whose religion rate once
went missing from "Bias rates in context"). Then ``bias-monitor report`` writes the
Markdown, HTML and JSON the tests read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _sessions import once_per_session, store_env


@dataclass(frozen=True)
class ReportStore:
    folder: Path  # report.md, report.html, report.json
    env: dict[str, str]
    smol_runs: tuple[str, str]  # (with panel, --no-panel)

    @property
    def html(self) -> Path:
        return self.folder / "report.html"

    @property
    def markdown(self) -> str:
        return (self.folder / "report.md").read_text(encoding="utf-8")

    @property
    def data(self) -> dict:
        return json.loads((self.folder / "report.json").read_text(encoding="utf-8"))


def _cli(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    if proc.returncode != 0:
        raise AssertionError(f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


# Test modules import the fixture below, and pytest keeps a session fixture per module that
# defines it: the store (minutes of SmolLM2 scoring) is built once and kept here.
_BUILT: list[ReportStore] = []


@pytest.fixture(scope="session", name="report_store")
def report_store_fixture(
    tmp_path_factory, session_cache: Path, shared_datasets: Path
) -> ReportStore:
    if not _BUILT:
        root = once_per_session(
            tmp_path_factory,
            "report-store",
            lambda root: _build(root, session_cache, shared_datasets),
        )
        runs = json.loads((root / "runs.json").read_text())
        _BUILT.append(
            ReportStore(
                root / "report", store_env(root, session_cache, shared_datasets), tuple(runs)
            )
        )
    return _BUILT[0]


def _build(root: Path, session_cache: Path, shared_datasets: Path) -> None:
    """Import the study, score the two SmolLM2 runs and write the report into ``root``."""
    env = store_env(root, session_cache, shared_datasets)
    results = shared_datasets / "caste-bias" / "results"
    for month, day in (("april", "2024-04-16"), ("july", "2024-07-18")):
        _cli(env, "import", "caste-bias", str(results / month), "--snapshot",
             "gpt-4o-caste-study", "--date", day)  # fmt: skip
    runs = []
    for extra in ((), ("--no-panel",)):
        out = _cli(
            env, "run", "-b", "bhed-caste", "-b", "bhed-religion", *extra, "--format", "json"
        )
        (run,) = json.loads(out)
        assert run["status"] == "complete", run
        runs.append(run["run_id"])
    folder = root / "report"
    _cli(env, "report", "--out", str(folder), "--since", "2024-01-01")
    (root / "runs.json").write_text(json.dumps(runs))
