"""Findings of the adversarial pass, each through the command a user types.

Terminal and Markdown injection, read-only stores, report files that cannot be written,
snapshot files that point outside their package, and the smaller truths (dtype is a
measurement, repeats are not "no baseline", --date is not --since, "yes" is not true,
run-id prefixes and full run ids). Each test fails on the code before its fix.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.drift.provenance_diff import diff_runs
from monitor.families.pairs.cll import cll_row
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.metrics.intervals import axis_measures
from monitor.records import RunRecord
from monitor.store import migrate
from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
VERSION = "synthetic@000000000000:000000000000:errata-none"
ESC = "\x1b]0;owned\x07\x1b[2J\x1b[31m"  # set window title, clear screen, red
C1_BIDI = "\x9b31m\u202eevil\u202c"
LONG_SNAPSHOT = "a-snapshot-with-a-rather-long-identifier-q4"


def _items(n: int = 40) -> list[PairItem]:
    out = []
    for i in range(n):
        s, a = f"person {i} picked red.", f"person {i} picked blue."
        out.append(
            PairItem(
                make_item_id(VERSION, s, a), "synthetic", "caste", "india", VERSION, i,
                text_stereo=s, text_anti=a, targets_stereo=("red",), targets_anti=("blue",),
                template=f"person {i} picked MASK.",
            )
        )  # fmt: skip
    return out


def _write_run(
    store: Store,
    run_id: str,
    snapshot: str,
    day: int,
    *,
    trigger: str = "manual",
    notes: str | None = None,
    revision: str = "pkg==1:file#sha256=aa",
    repeat_group: str | None = None,
    repeat_index: int = 0,
    dtype: str = "float32",
) -> None:
    items = _items()
    rows = [
        cll_row(it.item_id, lp_stereo=-30.0 - (i % 7), lp_anti=-31.0, prior_stereo=-5.0,
                prior_anti=-5.0, n_tokens_stereo=6, n_tokens_anti=6, n_targets_stereo=1,
                n_targets_anti=1)
        for i, it in enumerate(items)
    ]  # fmt: skip
    store.record_run(
        RunRecord(
            run_id=run_id,
            snapshot_id=snapshot,
            snapshot_kind="hf-causal",
            snapshot_revision=revision,
            snapshot_manifest={"id": snapshot},
            metric="cll",
            metric_version="2",
            benchmarks=["synthetic"],
            dataset_versions={"synthetic": {"label": VERSION}},
            fingerprint=f"fp-{run_id}",
            trigger=trigger,
            started_at=datetime(2026, 11, day, tzinfo=UTC),
            repeat_group=repeat_group,
            repeat_index=repeat_index,
            git_commit="abc",
            device="cpu",
            dtype=dtype,
            environment={"packages": {"torch": "2.13.0"}, "api": {"reported_model": ESC}},
            notes=notes,
        ),
        items=items,
        scores=rows,
        exclusions=[],
    )
    axes = {it.item_id: (it.benchmark, it.axis) for it in items}
    store.finish_run(run_id, "complete", axis_measures(rows, axes), len(rows), 0)


def cli(*args: str, env: dict[str, str] | None = None, user: str | None = None):
    cmd = [sys.executable, "-m", "monitor", *args]
    if user == "nobody" and os.geteuid() == 0:  # root ignores file modes: drop to nobody
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
    return subprocess.run(
        cmd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        cwd="/tmp",
    )


@pytest.fixture
def sneaky_db(tmp_path: Path) -> Path:
    """A store whose strings carry terminal escapes, C1 and bidi controls."""
    db = tmp_path / "m.duckdb"
    store = Store(db)
    _write_run(store, f"20261101-{LONG_SNAPSHOT}-aaaaaa", LONG_SNAPSHOT, 1, trigger=ESC,
               notes="note" + C1_BIDI, revision="rev" + ESC)  # fmt: skip
    _write_run(store, f"20261102-{LONG_SNAPSHOT}-bbbbbb", LONG_SNAPSHOT, 2, trigger=ESC)
    return db


def _controls(text: str) -> list[str]:
    return sorted({c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F
                   or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"})  # fmt: skip


def test_control_characters_never_reach_the_terminal_or_the_reports(sneaky_db, tmp_path):
    env = {"MONITOR_DB": str(sneaky_db)}
    for args in (("runs", "list"), ("runs", "list", "--format", "json"),
                 ("show", "20261101"), ("show", "20261101", "--format", "json"),
                 ("drift",), ("drift", "--format", "json")):  # fmt: skip
        proc = cli(*args, env=env)
        assert proc.returncode == 0, proc.stderr
        assert not _controls(proc.stdout + proc.stderr), (args, _controls(proc.stdout))
    shown = cli("show", "20261101", env=env).stdout
    assert "\\x1b]0;owned\\x07" in shown  # made visible, not dropped
    out = tmp_path / "report"
    proc = cli("report", "--out", str(out), "--title", "Nightly" + ESC, env=env)
    assert proc.returncode == 0, proc.stderr
    for name in ("report.md", "report.html", "report.json"):
        text = (out / name).read_text(encoding="utf-8")
        assert not _controls(text), (name, _controls(text))
    # Visible in the Markdown source too (its backslash escaped for Markdown).
    assert "Nightly\\\\x1b" in (out / "report.md").read_text(encoding="utf-8")


def test_run_ids_are_shown_whole_and_prefixes_work_for_drift(sneaky_db):
    env = {"MONITOR_DB": str(sneaky_db)}
    table = cli("runs", "list", env=env).stdout
    for run_id in (f"20261101-{LONG_SNAPSHOT}-aaaaaa", f"20261102-{LONG_SNAPSHOT}-bbbbbb"):
        assert run_id in table  # whole, on one line
    drift = cli("drift", "--run", "20261102", "--baseline", "20261101", "--format", "json",
                env=env)  # fmt: skip
    assert drift.returncode == 0, drift.stderr
    [pair] = json.loads(drift.stdout)["pairs"]
    assert pair["new_run_id"].endswith("bbbbbb") and pair["baseline_run_id"].endswith("aaaaaa")


def test_a_repeat_group_is_not_reported_as_having_no_baseline(tmp_path):
    db = tmp_path / "r.duckdb"
    store = Store(db)
    for i in range(2):
        _write_run(store, f"rep-{i}", "rep", 1, repeat_group="g1", repeat_index=i)
    [pair] = json.loads(cli("drift", "--format", "json", env={"MONITOR_DB": str(db)}).stdout)[
        "pairs"
    ]
    assert pair["baseline_run_id"] is None
    assert "repeat" in pair["reason"] and "no earlier complete run" not in pair["reason"]


def test_a_dtype_change_is_a_measurement_change():
    base = {"run_id": "a", "dtype": "float32", "environment": {"dtype": "float32"}}
    new = {"run_id": "b", "dtype": "bfloat16", "environment": {"dtype": "bfloat16"}}
    diff = diff_runs(base, new)
    assert {c.category for c in diff.changes if "dtype" in c.field} == {"measurement"}
    assert diff.attribution(pinned_local=True) == "measurement change"


@pytest.fixture
def reachable_code():
    """Let the unprivileged user reach the checkout and its virtualenv: a clone in a 0700
    folder (``mktemp -d``) is not. Adds traverse-only permission (o+x, no listing) to the
    ancestors that lack it, for this test only, and puts their modes back afterwards."""
    changed: list[tuple[Path, int]] = []
    for top in {REPO, Path(sys.prefix)}:
        for folder in [top, *top.parents]:
            mode = folder.stat().st_mode & 0o7777
            if not mode & 0o001 and all(f != folder for f, _ in changed):
                changed.append((folder, mode))
                folder.chmod(mode | 0o001)
    try:
        yield
    finally:
        for folder, mode in changed:
            folder.chmod(mode)


@pytest.fixture
def readonly_dir(reachable_code):
    """A world-readable folder, so the unprivileged user can reach it."""
    folder = Path(f"/tmp/bias-monitor-ro-{os.getpid()}")
    folder.mkdir(mode=0o755)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(folder)


def test_a_read_only_store_can_be_listed_shown_compared_and_reported(sneaky_db, readonly_dir):
    archive = readonly_dir / "archive"
    archive.mkdir()
    db = archive / "m.duckdb"
    shutil.copyfile(sneaky_db, db)
    # An older store on read-only media is read through an upgraded temporary copy.
    old = archive / "old.duckdb"
    import duckdb

    with duckdb.connect(str(old)) as con:
        migrate.apply_migrations(con, "old", upto=2)
    reports = readonly_dir / "reports"
    reports.mkdir(mode=0o777)
    reports.chmod(0o777)
    db.chmod(0o444)
    old.chmod(0o444)
    archive.chmod(0o555)
    env = {"MONITOR_DB": str(db), "HOME": str(reports)}
    for args in (("runs", "list", "--format", "json"), ("show", "20261101"), ("drift",),
                 ("report", "--out", str(reports / "r"))):  # fmt: skip
        proc = cli(*args, env=env, user="nobody")
        assert proc.returncode == 0, (args, proc.stderr)
    assert (reports / "r" / "report.html").is_file()
    listed = cli("runs", "list", "--db", str(old), env=env, user="nobody")
    assert listed.returncode == 0, listed.stderr
    assert "upgraded temporary copy" in listed.stderr
    # Writing still needs a writable store: one line, exit 2.
    quality = cli("quality", "20261101", env=env, user="nobody")
    assert quality.returncode == 2 and "Traceback" not in quality.stderr, quality.stderr


def test_report_destinations_that_cannot_be_written_are_one_line_errors(sneaky_db, tmp_path):
    env = {"MONITOR_DB": str(sneaky_db)}
    a_file = tmp_path / "a-file.txt"
    a_file.write_text("keep me")
    cases = [
        ("--out", str(a_file)),
        ("--out", str(tmp_path / "r1"), "--summary", str(a_file / "x.md")),
        ("--out", str(tmp_path / "r2"), "--summary", str(tmp_path)),
    ]
    for args in cases:
        proc = cli("report", *args, env=env)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert a_file.read_text() == "keep me"
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()  # nothing written


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("file", '"/etc/passwd"', "relative path inside its folder"),
        ("file", '"../../../etc/passwd"', "relative path inside its folder"),
        ("default", '"yes"', "valid boolean"),
        ("assemble", '"os:system"', "package's own module"),
    ],
)
def test_malformed_snapshot_files_are_refused_as_bad_input(tmp_path, field, value, message):
    folder = tmp_path / "snapshots"
    folder.mkdir()
    source = {
        "type": '"pypi"', "package": '"p"', "version": '"1"', "module": '"pkg"',
        "file": '"w.gguf"', "sha256": '"' + "a" * 64 + '"',
    }  # fmt: skip
    top = {"id": '"bad"', "kind": '"hf-causal"', "display_name": '"bad"'}
    (source if field in source or field == "assemble" else top)[field] = value
    text = "".join(f"{k} = {v}\n" for k, v in top.items()) + "[source]\n"
    text += "".join(f"{k} = {v}\n" for k, v in source.items())
    (folder / "bad.toml").write_text(text, encoding="utf-8")
    proc = cli("snapshots", "list", env={"MONITOR_SNAPSHOTS_DIR": str(folder)})
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_import_names_its_own_option_in_a_date_error(tmp_path, shared_datasets):
    proc = cli(
        "import", "caste-bias", str(shared_datasets / "caste-bias" / "results" / "april"),
        "--snapshot", "s", "--date", "2024-13-45", "--db", str(tmp_path / "m.duckdb"),
    )  # fmt: skip
    assert proc.returncode == 2 and "--date '2024-13-45'" in proc.stderr
    assert "--since" not in proc.stderr
