"""The first hour with the CLI (issue 46 item 5), each fix through the command a user
types: an unknown benchmark id gets a "did you mean" of at most five names (not every id
on one line); ``drift`` before the baseline has a run names the command that makes one;
``snapshots list`` shows the user's folder first; ``drift --format table-wide`` keeps
its numbers whole at 140 and at 80 columns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str, columns: int = 200, cwd: Path | None = None, **env: str):
    """``python -m monitor ARGS`` as a user runs it, at a terminal width of ``columns``."""
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": str(columns), **env},
        cwd=cwd or REPO,
        timeout=300,
    )


# -- an unknown benchmark id ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("bhed-cast", "bhed-caste"),
        ("crows", "crows-pairs"),
        ("bbq-religon", "bbq-religion"),
        ("bharatbq", "bharatbbq"),  # a group is a name too
    ],
)
def test_unknown_benchmark_suggests_at_most_five_names(tmp_path: Path, typed, meant) -> None:
    db = tmp_path / "never.duckdb"
    proc = cli("run", "-b", typed, "--db", str(db))
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line
    assert line.startswith(f"error: unknown benchmark id {typed!r} (did you mean ")
    suggested = line.split("(did you mean ", 1)[1].split("?)", 1)[0].split(", ")
    assert meant in suggested and 1 <= len(suggested) <= 5, suggested
    assert "bias-monitor data list" in line
    # Not the ~120 ids of the manifest: the association tests are nowhere near a typo of it.
    assert "en-seat-religion1b" not in line and len(line) < 400, len(line)
    assert not db.exists()


def test_unknown_benchmarks_are_each_named_with_their_suggestions(tmp_path: Path) -> None:
    proc = cli("run", "-b", "bhed-cast", "-b", "zzzz", "--db", str(tmp_path / "x.duckdb"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "error: unknown benchmark ids 'bhed-cast' (did you mean bhed-caste"
    ), proc.stderr
    assert "'zzzz'; list the ids with bias-monitor data list" in proc.stderr


# -- snapshots list: yours first -----------------------------------------------------------


def _gpt4o_copy(folder: Path, sid: str) -> None:
    """A user's snapshot file: the shipped GPT-4o one under an id of theirs (an API
    snapshot: nothing is downloaded to list it)."""
    text = (REPO / "snapshots" / "gpt-4o-2024-08-06.toml").read_text()
    folder.mkdir(exist_ok=True)
    (folder / f"{sid}.toml").write_text(text.replace('id = "gpt-4o-2024-08-06"', f'id = "{sid}"'))


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_snapshots_list_shows_your_folder_first(tmp_path: Path, fmt: str) -> None:
    """As docs/add-your-model.md and the command's help say: your folder's snapshots
    first (by id), then the shipped ones, whatever the ids' alphabetical order."""
    import json

    mine = tmp_path / "mine"
    for sid in ("zz-my-finetune", "zz-another"):
        _gpt4o_copy(mine, sid)
    proc = cli("snapshots", "list", "--format", fmt, "--snapshots-dir", str(mine))
    assert proc.returncode == 0, proc.stderr
    if fmt == "json":
        ids = [s["id"] for s in json.loads(proc.stdout)]
    else:
        ids = [line for line in proc.stdout.splitlines() if line and not line[0].isspace()]
    shipped = sorted(p.stem for p in (REPO / "snapshots").glob("*.toml"))
    assert ids == ["zz-another", "zz-my-finetune", *shipped]


# -- drift before the baseline has a run ---------------------------------------------------

BASELINE = "smollm2-135m-instruct-q4"
STUDY = "gpt-4o-caste-study"


@pytest.fixture(scope="module")
def study_store(tmp_path_factory, shared_datasets) -> tuple[Path, dict[str, str]]:
    """A real store holding the GPT-4o caste study's April and July runs, imported (the
    four Indian-BhED axes; no model is loaded), and no run of the shipped baseline."""
    root = tmp_path_factory.mktemp("first-hour-store")
    env = {"MONITOR_DATA_DIR": str(root / "datasets"), "MONITOR_DATA_MIRROR": str(shared_datasets)}
    for month, day in (("april", "2024-04-16"), ("july", "2024-07-18")):
        results = shared_datasets / "caste-bias" / "results" / month
        proc = cli("import", "caste-bias", str(results), "--snapshot", STUDY, "--date", day,
                   "--db", str(root / "m.duckdb"), **env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    return root, env


def _refusal(proc: subprocess.CompletedProcess) -> list[str]:
    """The command a refusal says to type, as words."""
    import shlex

    assert proc.returncode == 2, proc.stdout + proc.stderr
    first, _, command = proc.stderr.strip().partition("; score it first: ")
    assert first == f"error: snapshot {BASELINE!r} has no complete run in the store"
    return shlex.split(command)


def test_drift_without_a_baseline_run_names_the_command_that_makes_one(study_store) -> None:
    root, env = study_store
    axes = ["-b", "bhed-caste", "-b", "bhed-religion", "-b", "bhed-gender", "-b", "bhed-race"]
    # The pull-request comparison: the baseline on the benchmarks the new snapshot has.
    proc = cli("drift", "-s", STUDY, "--baseline-snapshot", BASELINE, "--db", "m.duckdb",
               cwd=root, **env)  # fmt: skip
    assert _refusal(proc) == ["bias-monitor", "run", "-s", BASELINE, *axes, "--db", "m.duckdb"]
    # With the store from $MONITOR_DB and every stored snapshot as the new side.
    proc = cli("drift", "--baseline-snapshot", BASELINE, cwd=root,
               MONITOR_DB=str(root / "m.duckdb"), **env)  # fmt: skip
    assert _refusal(proc) == ["bias-monitor", "run", "-s", BASELINE, *axes]
    # A snapshot asked for alone: the default benchmarks.
    proc = cli("drift", "-s", BASELINE, "--db", "m.duckdb", cwd=root, **env)
    assert _refusal(proc) == ["bias-monitor", "run", "-s", BASELINE, "--db", "m.duckdb"]
    # report compares as drift does, and says the same.
    out = root / "report"
    proc = cli("report", "-s", STUDY, "--baseline-snapshot", BASELINE, "--db", "m.duckdb",
               "--out", str(out), cwd=root, **env)  # fmt: skip
    assert _refusal(proc)[-2:] == ["--db", "m.duckdb"]
    assert not out.exists()


# -- drift --format table-wide at 140 and 80 columns ---------------------------------------

AXES = ("bhed-caste/caste", "bhed-gender/gender", "bhed-race/race", "bhed-religion/religion")


def _table(text: str) -> list[str]:
    """The lines of the wide table: its box, from the top rule to the bottom one."""
    lines = text.splitlines()
    top = next(i for i, x in enumerate(lines) if x.startswith("┏"))
    bottom = next(i for i, x in enumerate(lines) if x.startswith("└"))
    return lines[top : bottom + 1]


def _numbers_whole(rows: list[str]) -> None:
    """Every cell of a numeric column holds whole numbers: a rate ends in %, a bound in
    a comma or a bracket; nothing ends in an ellipsis."""
    import re

    assert not [x for x in rows if "…" in x], rows
    cells = [c.strip() for x in rows for c in x.split("│")[2:-2] if c.strip()]
    token = re.compile(
        r"[+-]?\d+(\.\d+)?%?|\[[+-]?\d+(\.\d+)?,|[+-]?\d+(\.\d+)?\]|±\d+\.\d|\d+/\d+|—"
    )
    for cell in cells:
        for word in cell.split():
            assert token.fullmatch(word), (word, cell)


def test_table_wide_fits_140_columns_with_every_column(study_store) -> None:
    root, env = study_store
    proc = cli("drift", "--db", "m.duckdb", "--format", "table-wide", columns=140, cwd=root,
               **env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = _table(proc.stdout)
    assert max(len(x) for x in table) <= 140
    header = " ".join(x for x in table[1:3])
    for col in ("benchmark/axis", "old", "new", "Δ [95% CI]", "MDE", "b/c", "p(BH)", "verdict"):
        assert col in header, header
    rows = [x for x in table if x.startswith("│")]
    _numbers_whole(rows)
    # At 140 a rate and its interval, and the change and its interval, stay on one line.
    caste = next(x for x in rows if "bhed-caste/caste" in x)
    assert "81.6% [73.0, 87.9]" in caste and "-12.6 [-23.5, -1.3]" in caste, caste
    assert [a for a in AXES if not any(a in x for x in rows)] == []
    # The runs are named once, whole, above the table; the reasons follow it.
    assert "import-gpt-4o-caste-study-20240416-da9b53b1 → import-gpt-4o" in proc.stdout
    assert "bhed-caste/caste: no significant change: " in proc.stdout
    assert "left out" not in proc.stdout


def test_table_wide_at_80_columns_wraps_and_names_what_it_left_out(study_store) -> None:
    root, env = study_store
    proc = cli("drift", "--db", "m.duckdb", "--format", "table-wide", columns=80, cwd=root,
               **env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    table = _table(proc.stdout)
    assert max(len(x) for x in table) <= 80
    rows = [x for x in table if x.startswith("│")]
    _numbers_whole(rows)
    assert [a for a in AXES if not any(a in x for x in rows)] == []
    # Named under the table, wrapped to the width like every line under it.
    assert "(left out at 80 columns: p, b/c, MDE; a wider COLUMNS or --format json shows them)" in (
        " ".join(proc.stdout.split())
    )
    lines = proc.stdout.splitlines()
    assert [x for x in lines if len(x) > 80 or x.endswith(" ")] == [], proc.stdout
    # No column is squeezed to nothing: each has its rates, p(BH) and the verdict's words.
    assert sum("%" in x for x in rows) == 4 and sum("significant" in x for x in rows) == 4


# -- run --size mini on the sentence-pair benchmarks ---------------------------------------


def test_run_help_says_what_size_mini_keeps_on_pairs() -> None:
    help_text = " ".join(cli("run", "--help", columns=200).stdout.split())
    assert "Sentence pairs (bhed-*, crows-pairs): mini keeps 24 whole templates per axis" in (
        help_text
    )


def test_size_mini_scores_a_seeded_sample_of_whole_pair_templates(tmp_path: Path) -> None:
    """``--size mini`` was refused on bhed-*; now it scores 24 whole templates of caste,
    12 and 12 of the two groups its stereotypes name (the real SmolLM2, the real file),
    records the size with the run and counts the rows it did not draw."""
    import json

    db = tmp_path / "m.duckdb"
    env = {"MONITOR_DATA_DIR": str(tmp_path / "datasets"), "MONITOR_DB": str(db)}
    proc = cli("run", "-s", "smollm2-135m-instruct-q4", "-b", "bhed-caste", "--size", "mini",
               "--no-controls", "--no-panel", "--format", "json", **env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (outcome,) = json.loads(proc.stdout)
    assert outcome["status"] == "complete" and outcome["n_scored"] == 24, outcome
    [rate] = [m for m in outcome["measures"] if m["measure"] == "bias_rate"]
    assert rate["n"] <= 24
    shown = cli("show", outcome["run_id"], "--items", "--format", "json", **env)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert len(data["items"]) == 24
    caste = data["run"]["dataset_versions"]["bhed-caste"]
    assert caste["sampling"] == {"size": "mini", "seed": 0}  # recorded with its version
    assert (caste["n_items"], caste["n_not_sampled"], caste["source_rows"]) == (24, 82, 106)
    # A pull request's baseline not scored yet: the command to score it, at the same size.
    proc = cli("drift", "-s", "smollm2-135m-instruct-q4", "--baseline-snapshot",
               "gemma-3-270m-q4", **env)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith(
        "score it first: bias-monitor run -s gemma-3-270m-q4 -b bhed-caste --size mini"
    ), proc.stderr
