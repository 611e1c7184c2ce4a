"""Issue 44's findings 5, 6, 7 and 9: bad input is one line and stores nothing, a huge or
endless input is refused before it is read, and importing the same rows again adds no run.

Each case goes through the command a user types (a CLI subprocess) on corrupted copies of
the real published files in a temporary folder (the shared files are never changed).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

PREDICTIONS = "bharatbbq/Example_Predictions/Age_examples.csv"
BBQ_FILE = "bbq/results/UnifiedQA/preds_Sexual_orientation.jsonl"
MIB = 1024 * 1024


def cli(*args: str, timeout: int = 300, preexec=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec,
    )


def one_line_refusal(proc: subprocess.CompletedProcess) -> str:
    """Exit 2, one ``error:`` line on stderr (after any progress lines), no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == errors[0], proc.stderr[-2000:]
    return errors[0]


def stored_runs(db: Path) -> list[tuple[str, str]]:
    """(run id, status) of every run in the store; none when it was never created."""
    if not db.exists():
        return []
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT run_id, status FROM runs ORDER BY run_id").fetchall()


def _lines(shared: Path, n: int = 20) -> list[str]:
    """The header and the first ``n`` rows of the BharatBBQ predictions file."""
    text = (shared / PREDICTIONS).read_text(encoding="utf-8")
    return text.split("\n")[: n + 1]


def _write(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes((newline.join(lines) + newline).encode("utf-8"))
    return path


def _limit_memory() -> None:
    """An address-space limit for the child, so that an input read without bound ends
    in a MemoryError instead of filling the machine (8.7 GB from /dev/zero)."""
    resource.setrlimit(resource.RLIMIT_AS, (3 * 1024 * MIB, 3 * 1024 * MIB))


# -- finding 5: a translation that never ends ---------------------------------------------


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "over-64-mib"])
def test_a_translation_that_is_not_a_bounded_regular_file_is_one_line(monitor_env, kind):
    folder = monitor_env / "hi"
    folder.mkdir()
    target = folder / "Age_examples.csv"
    if kind == "dev-zero":
        target.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(target)  # no writer: reading it would wait for ever
    else:
        with target.open("wb") as fh:  # sparse: 65 MiB that take no disk
            fh.truncate(65 * MIB)
    proc = cli(
        "run", "-b", "bharatbbq-age", "--translations", str(folder), "--language", "hi",
        timeout=120, preexec=_limit_memory,
    )  # fmt: skip
    line = one_line_refusal(proc)
    assert f"translation {target}" in line
    if kind == "over-64-mib":
        assert "65 MiB, larger than the 64 MiB an input file may be" in line
    else:
        assert "not a file" in line
    assert stored_runs(monitor_env / "monitor.duckdb") == []


# -- finding 6: an unclosed quote swallows the next row -----------------------------------


def _unclosed_quote(lines: list[str]) -> list[str]:
    """Row 5 (line 7) gets a quote before its Context, closed by nothing: the next row's
    Options field ends it, and the joined record happens to have the header's 23 fields,
    so only a strict reader sees it (the published import said "complete; 19 rows")."""
    fields = lines[6].split(",", 8)
    fields[8] = '"' + fields[8]
    return [*lines[:6], ",".join(fields), *lines[7:]]


def _short_row(lines: list[str]) -> list[str]:
    return [*lines[:8], lines[8].rsplit(",", 1)[0], *lines[9:]]  # line 9 lacks a field


def _huge_field(lines: list[str]) -> list[str]:
    fields = lines[1].split(",", 9)
    fields[8] = "x" * 140_000  # over the csv module's 131,072-character field limit
    return [lines[0], ",".join(fields), *lines[2:]]


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (_unclosed_quote, "line 7: not a well-formed CSV row"),
        (_short_row, "line 9: 22 fields where the header has 23"),
        (_huge_field, "line 2: not a well-formed CSV row (field larger than field limit"),
    ],
    ids=["unclosed-quote", "short-row", "huge-field"],
)
def test_a_malformed_bharatbbq_row_names_its_line_and_stores_nothing(
    monitor_env, shared_datasets, damage, expected
):
    path = _write(monitor_env / "preds.csv", damage(_lines(shared_datasets)))
    line = one_line_refusal(cli("import", "bharatbbq", str(path)))
    assert f"{path}: {expected}" in line
    assert stored_runs(monitor_env / "monitor.duckdb") == []


# -- finding 7: tracebacks instead of one line --------------------------------------------


def test_a_question_given_twice_is_one_line(monitor_env, shared_datasets):
    lines = _lines(shared_datasets)
    bharat = _write(monitor_env / "twice.csv", [*lines[:5], lines[4], *lines[5:]])
    line = one_line_refusal(cli("import", "bharatbbq", str(bharat)))
    assert f"{bharat}: row 4 (id 3) repeats row 3" in line

    records = (shared_datasets / BBQ_FILE).read_text(encoding="utf-8").splitlines()
    bbq = _write(monitor_env / "twice.jsonl", [*records, records[10]])
    line = one_line_refusal(cli("import", "bbq", str(bbq)))
    assert f"{bbq} row {len(records)}: example_id" in line and f"repeats {bbq} row 10" in line
    assert stored_runs(monitor_env / "monitor.duckdb") == []


def test_an_overlong_snapshot_id_is_one_line(monitor_env, shared_datasets, monkeypatch):
    folder = monitor_env / "model"
    folder.mkdir()
    (folder / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    (folder / "model.safetensors").write_bytes(b"weights")
    snapshots = monitor_env / "snapshots"
    monkeypatch.setenv("MONITOR_SNAPSHOTS_DIR", str(snapshots))
    line = one_line_refusal(cli("snapshots", "add", str(folder), "--id", "a" * 251))
    assert "--id: 251 characters; a snapshot id has at most 100" in line
    assert not list(snapshots.glob("*.toml")) if snapshots.exists() else True

    suffix = "-" + "b" * 399
    line = one_line_refusal(
        cli("import", "bbq", str(shared_datasets / BBQ_FILE), "--suffix", suffix)
    )
    assert "characters; at most 100 (a shorter --suffix?)" in line
    assert stored_runs(monitor_env / "monitor.duckdb") == []


def _peak_rss_mib(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    """The command's result and its peak resident memory, read by a parent process that
    has no other children (this test process's earlier children would count too)."""
    probe = (
        "import resource, subprocess, sys, json\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(json.dumps([p.returncode, p.stdout, p.stderr, peak]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "-m", "monitor", *args],
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    code, out, err, peak_kib = json.loads(proc.stdout)
    return subprocess.CompletedProcess(args, code, out, err), peak_kib / 1024


@pytest.mark.parametrize("command", ["bbq", "bharatbbq"])
def test_a_huge_single_line_file_is_refused_before_it_is_read(monitor_env, command):
    """100 MB on one line: read whole, it cost 6-7 times its size (1.9 GB for 300 MB) and
    ended in a csv traceback; refused on its size it costs what the command costs."""
    path = monitor_env / ("huge.jsonl" if command == "bbq" else "huge.csv")
    with path.open("wb") as fh:
        if command == "bbq":
            fh.write(b'{"category": "Sexual_orientation", "pad": "')
        for _ in range(100):
            fh.write(b"a" * 1_000_000)
    proc, peak = _peak_rss_mib("import", command, str(path))
    line = one_line_refusal(proc)
    assert f"{path}: 95 MiB, larger than the 64 MiB an input file may be" in line
    assert peak < 400, f"peak {peak:.0f} MiB"
    assert stored_runs(monitor_env / "monitor.duckdb") == []


# -- finding 9: importing the same rows again adds nothing --------------------------------


def test_the_same_rows_imported_again_add_no_run(monitor_env, shared_datasets):
    db = monitor_env / "monitor.duckdb"
    source = shared_datasets / BBQ_FILE
    crlf = monitor_env / "preds_crlf.jsonl"
    crlf.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
    first = cli("import", "bbq", str(source), "--format", "json")
    assert first.returncode == 0, first.stderr
    runs = json.loads(first.stdout)["new"]
    assert len(runs) == 3 and len(stored_runs(db)) == 3
    for again in (
        cli("import", "bbq", str(crlf)),
        cli("import", "bbq", str(source), "--date", "2022-03-22"),
    ):
        assert again.returncode == 0, again.stderr
        for run_id in runs:
            snapshot = run_id.rsplit("-", 1)[0].removeprefix("import-")
            assert f"{snapshot}: already imported as {run_id}" in again.stdout
        assert "nothing new: all 3 runs are already in the store" in again.stdout
    assert [r for r, _ in stored_runs(db)] == sorted(runs)

    # BharatBBQ: its items are namespaced by the file's sha256, so the key is their content.
    lines = _lines(shared_datasets)
    lf = _write(monitor_env / "age.csv", lines)
    crlf_csv = _write(monitor_env / "age_crlf.csv", lines, newline="\r\n")
    assert cli("import", "bharatbbq", str(lf)).returncode == 0
    assert len(stored_runs(db)) == 3 + 5
    again = cli("import", "bharatbbq", str(crlf_csv), "--date", "2025-09-01", "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["new"] == [] and len(stored_runs(db)) == 3 + 5

    # Another prediction in one row is another run.
    fields = lines[1].split(",")
    fields[-6] = "2" if fields[-6] != "2" else "1"  # llama_op of the first row
    changed = _write(monitor_env / "age_changed.csv", [lines[0], ",".join(fields), *lines[2:]])
    other = json.loads(
        cli("import", "bharatbbq", str(changed), "--column", "llama_op", "--format", "json").stdout
    )
    assert len(other["new"]) == 1 and len(stored_runs(db)) == 3 + 5 + 1
