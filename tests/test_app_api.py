"""The application layer as a Python caller uses it (issue 45): ``monitor.app.run`` takes a
typed request, prints nothing, reports progress through its events, and returns what the
CLI renders: the same outcomes ``run --format json`` prints for the same run.

Real parts: the SmolLM2 weights, the pinned Indian-BhED neutral set (55 sentence pairs,
the smallest benchmark), real DuckDB files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import ValidationError

from monitor.app import BackendOptions, RunEvents, RunRequest, ScoringOptions, run
from monitor.errors import UserInputError
from monitor.families.pairs.run_options import PairRunOptions

BENCHMARK = "bhed-neutral"


def _comparable(outcome: dict) -> dict:
    """An outcome without what differs between two runs of the same request."""
    return {k: v for k, v in outcome.items() if k != "run_id"}


@pytest.mark.slow
def test_app_run_matches_the_cli_json(monitor_env: Path, capsys) -> None:
    from monitor.cli.commands_run import _outcome_dict
    from monitor.terminal.output import print_json

    heard: list[str] = []
    bars: dict[str, list[int]] = {}

    @contextmanager
    def progress():
        def factory(label: str, total: int):
            bars[label] = [total]
            return bars[label].append

        yield factory

    request = RunRequest(
        benchmarks=[BENCHMARK],
        db=monitor_env / "app.duckdb",
        scoring=ScoringOptions(controls=False),
        family_options=(PairRunOptions(panel=False),),
    )
    result = run(request, RunEvents(on_event=heard.append, progress=progress))
    assert capsys.readouterr().out == ""  # the app prints nothing; the caller renders
    assert any(m.startswith("loading ") for m in heard), heard
    # One bar for the scored set; its advances add up to its total.
    assert [sum(steps[1:]) == steps[0] > 0 for steps in bars.values()] == [True], bars
    assert [o.status for o in result.outcomes] == ["complete"]
    assert result.snapshots and not result.failed and not result.skipped
    print_json([_outcome_dict(o) for o in result.outcomes])  # as the CLI writes JSON
    from_app = json.loads(capsys.readouterr().out)

    args = ["run", "-b", BENCHMARK, "--no-controls", "--no-panel", "--format", "json"]
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args, "--db", str(monitor_env / "cli.duckdb")],
        capture_output=True,
        text=True,
        timeout=900,
        env=os.environ.copy(),
    )
    assert proc.returncode == 0, proc.stderr
    from_cli = json.loads(proc.stdout)
    assert [_comparable(o) for o in from_app] == [_comparable(o) for o in from_cli]
    assert from_app[0]["n_scored"] > 0 and from_app[0]["measures"]
    # The stored runs record the same configuration (its fingerprint covers the options,
    # the metric panel among them), benchmarks and versions.
    stored = [
        _stored_run(monitor_env / f"{name}.duckdb", outcomes[0]["run_id"])
        for name, outcomes in (("app", from_app), ("cli", from_cli))
    ]
    assert stored[0] == stored[1]


def _stored_run(db: Path, run_id: str) -> dict:
    """``show --format json``'s run row, without what differs between two runs."""
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "show", run_id, "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=True,
    )
    run = json.loads(proc.stdout)["run"]
    differs = ("run_id", "started_at", "finished_at", "environment", "repeat_group")
    return {k: v for k, v in run.items() if k not in differs}


def test_a_refused_request_writes_nothing(monitor_env: Path) -> None:
    """Every input is checked before the store is opened: no file appears."""
    db = monitor_env / "never.duckdb"
    with pytest.raises(UserInputError, match="unknown --errata 'latest'"):
        run(RunRequest(benchmarks=[BENCHMARK], db=db, scoring=ScoringOptions(errata="latest")))
    with pytest.raises(UserInputError, match="--metrics adds to the metric panel"):
        options = PairRunOptions(panel=False, panel_metrics=["cll-reference"])
        run(RunRequest(benchmarks=[BENCHMARK], db=db, family_options=(options,)))
    assert not db.exists()


def test_option_models_validate_like_the_flags() -> None:
    """The models a Python caller builds refuse what the flags refuse."""
    with pytest.raises(ValidationError, match="must be auto, cpu, cuda or cuda:N"):
        BackendOptions(device="tpu")
    with pytest.raises(ValidationError):
        PairRunOptions(indic_partners=0)
    assert BackendOptions(device="cuda:1").device == "cuda:1"
    assert RunRequest().family(PairRunOptions) == PairRunOptions()


def test_options_of_no_family_are_refused_not_ignored(monitor_env: Path) -> None:
    """``family_options`` holds the families' ``run`` option models (found through the
    registry); any other model is named, before anything is read or written."""
    db = monitor_env / "never.duckdb"
    request = RunRequest(benchmarks=[BENCHMARK], db=db, family_options=(BackendOptions(),))
    with pytest.raises(UserInputError, match="BackendOptions is no registered family's run"):
        run(request)
    assert not db.exists()
