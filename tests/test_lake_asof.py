"""Reproducible reports on a lake (issue 47, item 3), through the commands a user types.

A report built on a lake names the snapshot it read (``lake_snapshot`` in the JSON, a line
in the Markdown and the HTML); after more runs have landed, ``report --as-of`` that
snapshot (its number, or its commit time) writes the same three files again, byte for
byte but for the line that says when the report was generated, while a report without
``--as-of`` shows the new runs. It runs once, on the lake a team runs (``_lake.TEAM``: a
PostgreSQL catalog and an ``s3://`` data path where the lake servers run, as CI requires
them; a SQLite catalog and a local folder elsewhere): what it checks does not depend on
the catalog, and running it on both cost CI 19 s. ``--as-of`` a snapshot the lake does
not have, a time to come, or on a DuckDB file (which has no snapshots) is one line, exit
2, nothing written.
"""

from __future__ import annotations

import json
from pathlib import Path

from _lake import TEAM, cli, cli_env, new_location, refused

SNAPSHOT = "gpt-4o-caste-study"
FORMATS = ("report.json", "report.md", "report.html")


def _import(env: dict[str, str], shared: Path, study: str, date: str, db: list[str]) -> None:
    folder = shared / "caste-bias" / "results" / study
    cli(env, "import", "caste-bias", str(folder), "--snapshot", SNAPSHOT, "--date", date, *db)


def _report(env: dict[str, str], out: Path, db: list[str], *extra: str) -> dict[str, str]:
    cli(env, "report", "--out", str(out), *db, *extra)
    return {name: (out / name).read_text(encoding="utf-8") for name in FORMATS}


def _generation_line(line: str) -> bool:
    """The line that says when a report was generated (JSON, Markdown, HTML)."""
    return '"generated_at": ' in line or line.startswith(
        ("Generated ", '<div class="meta">Generated ')
    )


def _same_but_generation_time(first: dict[str, str], again: dict[str, str]) -> None:
    for name in FORMATS:
        old, new = first[name].splitlines(), again[name].splitlines()
        assert len(old) == len(new), name
        differ = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
        assert all(_generation_line(a) and _generation_line(b) for a, b in differ), (name, differ)


def test_a_report_rebuilt_as_of_its_snapshot_is_the_same(tmp_path, shared_datasets,
                                                         session_cache):  # fmt: skip
    location, extra = new_location(TEAM, tmp_path)
    db = ["--db", location, "--lake-data", extra.pop("MONITOR_LAKE_DATA")]
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    _import(env, shared_datasets, "april", "2024-04-16", db)
    first = _report(env, tmp_path / "first", db)
    read_at = json.loads(first["report.json"])["lake_snapshot"]
    snapshot, committed = read_at["id"], read_at["committed_at"]
    assert isinstance(snapshot, int) and committed.startswith("20")
    line = f"Read at lake snapshot {snapshot} (committed "
    assert line in first["report.md"] and f'<div class="meta">{line}' in first["report.html"]
    april_drift = cli(env, "drift", "--format", "json", *db).stdout

    _import(env, shared_datasets, "july", "2024-07-18", db)  # more runs land
    again = _report(env, tmp_path / "again", db, "--as-of", str(snapshot))
    _same_but_generation_time(first, again)
    by_time = _report(env, tmp_path / "by-time", db, "--as-of", committed)
    _same_but_generation_time(first, by_time)
    assert (
        cli(env, "drift", "--format", "json", "--as-of", str(snapshot), *db).stdout == april_drift
    )

    now = _report(env, tmp_path / "now", db)  # without --as-of: July is in it
    report = json.loads(now["report.json"])
    assert report["lake_snapshot"]["id"] > snapshot
    assert len(report["runs"]) > len(json.loads(first["report.json"])["runs"])
    assert cli(env, "drift", "--format", "json", *db).stdout != april_drift


def test_as_of_what_cannot_be_read_is_one_line(tmp_path, shared_datasets, session_cache):
    """An unknown snapshot number, a time before the lake or still to come, a value that
    is neither, and any --as-of on a DuckDB file: one line, exit 2, no report written."""
    location, extra = new_location("lake-sqlite", tmp_path)
    db = ["--db", location, "--lake-data", extra.pop("MONITOR_LAKE_DATA")]
    env = cli_env(tmp_path, shared_datasets, session_cache, extra)
    _import(env, shared_datasets, "april", "2024-04-16", db)
    out = tmp_path / "report"
    report = ["report", "--out", str(out)]
    line = refused(env, *report, *db, "--as-of", "9999")
    assert f"lake {location} has no snapshot 9999" in line
    line = refused(env, "drift", *db, "--as-of", "9999")
    assert "has no snapshot 9999" in line
    assert "(the lake is younger)" in refused(env, *report, *db, "--as-of", "2001-01-01")
    assert "in the future" in refused(env, *report, *db, "--as-of", "2999-01-01T00:00:00Z")
    assert "give a lake snapshot number" in refused(env, *report, *db, "--as-of", "last week")
    file_db = tmp_path / "m.duckdb"
    line = refused(env, *report, "--db", str(file_db), "--as-of", "1")
    assert f"database {file_db} is a DuckDB file, which has no snapshots" in line
    assert not out.exists() and not file_db.exists()
