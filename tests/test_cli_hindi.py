"""Hindi sentence pairs through the CLI, added the documented way (a manifest entry in the
Indian-BhED columns with ``language = "hi"``, imported with ``data fetch --from``):
Gemma-3-270m scores them; SmolLM2, whose tokenizer has no Devanagari, refuses with the
reason and nothing is written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from test_cli_run import cli

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
HINDI = REPO / "tests" / "data" / "hindi_pairs.csv"

ENTRY = """
[sources.hindi-test]
repo = "bias-monitor/tests"
commit = "0000000000000000000000000000000000000000"
licence = "written for the tests"
citation = "bias-monitor test data: neutral Hindi sentence pairs"

[benchmarks.hindi-sample]
source = "hindi-test"
format = "indian-bhed"
axis = "neutral-hi"
region = "india"
language = "hi"
path = "hindi/hindi_pairs.csv"
url = "https://example.invalid/hindi_pairs.csv"
sha256 = "{sha}"
rows = 12
"""


@pytest.fixture
def hindi_home(monitor_env: Path, monkeypatch) -> Path:
    """A MONITOR_HOME whose manifest has the Hindi set, and a folder to import it from."""
    home = monitor_env / "home"
    shutil.copytree(REPO / "data", home / "data")
    sha = hashlib.sha256(HINDI.read_bytes()).hexdigest()
    with (home / "data" / "benchmarks.toml").open("a", encoding="utf-8") as fh:
        fh.write(ENTRY.format(sha=sha))
    src = monitor_env / "hindi-src"
    (src / "hindi").mkdir(parents=True)
    shutil.copy(HINDI, src / "hindi" / "hindi_pairs.csv")
    monkeypatch.setenv("MONITOR_HOME", str(home))
    monkeypatch.setenv("MONITOR_SNAPSHOTS_DIR", str(REPO / "snapshots"))
    return src


def _runs(db: Path) -> int:
    if not db.exists():
        return 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        con.close()


def test_hindi_pairs_score_on_gemma_and_smollm2_refuses(hindi_home: Path) -> None:
    db = Path(os.environ["MONITOR_DB"])
    cli("data", "fetch", "-b", "hindi-sample", "--from", str(hindi_home))

    refused = cli("run", "-s", "smollm2-135m-instruct-q4", "-b", "hindi-sample", check=False)
    assert refused.returncode == 3, refused.stderr
    reason = " ".join(refused.stderr.split())
    assert "cannot represent hindi-sample" in reason and "byte fragments" in reason
    assert "language 'hi'" in reason
    assert _runs(db) == 0  # refused before anything is written

    (out,) = json.loads(
        cli(
            "run", "-s", "gemma-3-270m-q4", "-b", "hindi-sample", "--format", "json", timeout=1500
        ).stdout
    )
    assert out["status"] == "complete" and out["n_scored"] == 12
    shown = json.loads(cli("show", out["run_id"], "--format", "json").stdout)
    measures = {m["measure"] for m in shown["measures"]}
    # The default panel (cll and ull); cll-reference only with --metrics cll-reference.
    assert {"bias_rate", "bias_rate:ull", "metric_agreement"} <= measures
    assert "bias_rate:cll-reference" not in measures
    assert shown["run"]["dataset_versions"]["hindi-sample"]["language"] == "hi"
    texts = json.loads(cli("show", out["run_id"], "--items", "--texts", "--format", "json").stdout)[
        "items"
    ]
    assert any("बाज़ार" in r["text_stereo"] for r in texts)  # Devanagari stored as written
