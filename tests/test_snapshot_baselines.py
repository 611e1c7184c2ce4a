"""The optional `baselines` field of a snapshot TOML (what the pull-request check compares)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.errors import UserInputError
from monitor.snapshots.registry import load_snapshot_file, load_snapshots

REPO = Path(__file__).resolve().parents[1]
SMOLLM2 = REPO / "snapshots" / "smollm2-135m-instruct-q4.toml"


def _variant(tmp_path: Path, snapshot_id: str, extra: str) -> Path:
    text = SMOLLM2.read_text().replace('id = "smollm2-135m-instruct-q4"', f'id = "{snapshot_id}"')
    text = text.replace("default = true", "default = false\n" + extra)
    path = tmp_path / f"{snapshot_id}.toml"
    path.write_text(text)
    return path


def test_baselines_default_to_none_and_are_read_from_the_toml(tmp_path):
    assert load_snapshot_file(SMOLLM2).baselines == ()
    path = _variant(tmp_path, "my-model", 'baselines = ["smollm2-135m-instruct-q4"]')
    assert load_snapshot_file(path).baselines == ("smollm2-135m-instruct-q4",)


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('baselines = ["my-model"]', "own baseline"),
        ('baselines = ["Not An Id"]', "baselines"),
        ('baselines = "smollm2-135m-instruct-q4"', "baselines"),
    ],
)
def test_bad_baselines_are_refused(tmp_path, extra, problem):
    with pytest.raises(UserInputError, match=problem):
        load_snapshot_file(_variant(tmp_path, "my-model", extra))


def test_snapshots_list_json_names_the_baselines(tmp_path):
    folder = tmp_path / "snapshots"
    folder.mkdir()
    _variant(folder, "my-base", "")
    _variant(folder, "my-model", 'baselines = ["smollm2-135m-instruct-q4", "my-base"]')
    assert set(load_snapshots(folder)) == {"my-base", "my-model"}
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "snapshots", "list", "--format", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "MONITOR_SNAPSHOTS_DIR": str(folder)},
        timeout=120,
        check=True,
    )
    listed = {
        s["id"]: s["baselines"]
        for s in json.loads(proc.stdout)
        if Path(s["folder"]) == folder  # the shipped ones follow the user's folder
    }
    assert listed == {"my-base": [], "my-model": ["smollm2-135m-instruct-q4", "my-base"]}
