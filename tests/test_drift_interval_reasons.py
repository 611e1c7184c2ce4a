"""A verdict that reads against its own interval says why, and `drift --format
table-wide` fits an 80-column log, on the GPT-4o caste study's real history.

Across the April → July configuration change the balanced change reads −14.2 pp
[−25.4, −2.0]: the interval excludes zero, yet the verdict is "no significant change",
because 34.0% of the paired items changed side, within the noise floor of repeat runs
(35.6%). The line says so (``drift``, ``--format table-wide``) and the JSON names the
rule (``not_flagged_by``) and the words (``interval_note``); the July → July comparison,
whose interval includes zero, carries no such note.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.drift.stats import NoiseFloor
from monitor.drift.verdicts import decide, interval_note

SNAPSHOT = "gpt-4o-caste-study"
NOTE = "not flagged although the interval excludes 0"


def cli(env: dict[str, str], *args: str, columns: int = 80) -> subprocess.CompletedProcess:
    """The CLI as a CI log runs it: no TTY, ``COLUMNS`` set."""
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**env, "COLUMNS": str(columns)},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def history(tmp_path_factory, shared_datasets, session_cache) -> dict[str, str]:
    """The ten committed runs imported into a fresh store (two quarantined: exit 1)."""
    base: Path = tmp_path_factory.mktemp("reasons")
    env = {
        **os.environ,
        "MONITOR_DB": str(base / "h.duckdb"),
        "MONITOR_DATA_DIR": str(base / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "MONITOR_CACHE_DIR": str(session_cache),
        "NO_COLOR": "1",
    }
    folder = shared_datasets / "caste-bias" / "history"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "import",
            "caste-bias",
            str(folder),
            "--snapshot",
            SNAPSHOT,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr  # the two broken July 15 runs are quarantined
    return env


def _blocks(text: str) -> list[str]:
    """The default output cut at each compared pair (a block starts at its "new" line)."""
    return text.split("\nnew ")[1:]


def test_the_line_says_why_an_interval_clear_of_zero_is_not_flagged(history):
    text = cli(history, "drift").stdout
    july, april = _blocks(text)
    flat = " ".join(april.split())
    assert "last run before a configuration change" in flat
    assert "−14.2 [−25.4, −2.0]" in flat and "no significant change" in flat
    assert (
        f"↳ {NOTE}: 34.0% of the paired items changed side, no more than repeat runs of an "
        "unchanged configuration change (35.6%, the noise floor)"
    ) in flat, april
    # July → July: −1.6 [−12.4, +9.3] includes zero, nothing to reconcile.
    assert "−1.6 [−12.4, +9.3]" in " ".join(july.split()) and NOTE not in july
    assert all(len(line) <= 80 and not line.endswith(" ") for line in text.splitlines())


def test_json_names_the_rule_and_the_words(history):
    data = json.loads(cli(history, "drift", "--format", "json").stdout)
    july, april = data["comparisons"]
    assert april["balanced"]["delta_ci"][1] < 0 and april["verdict"] == "no significant change"
    assert april["not_flagged_by"] == "flip-noise-floor"
    assert april["interval_note"].startswith(NOTE) and "35.6%" in april["interval_note"]
    low, high = july["balanced"]["delta_ci"]
    assert low < 0 < high
    assert july["not_flagged_by"] == "fdr" and july["interval_note"] is None


def test_table_wide_fits_80_columns_with_the_reason(history):
    text = cli(history, "drift", "--format", "table-wide").stdout
    lines = text.splitlines()
    too_wide = [(len(x), x) for x in lines if len(x) > 80]
    trailing = [x for x in lines if x != x.rstrip()]
    assert not too_wide and not trailing, (too_wide, trailing)
    flat = " ".join(text.split())
    # The reason, the FDR note and what changed are all still there, only wrapped.
    assert f"balanced Δ [−25.4, −2.0]: {NOTE}: 34.0% of the paired items" in flat
    assert flat.count(NOTE) == 1
    assert "p (BH) is Benjamini–Hochberg-adjusted over the 2 paired tests" in flat
    assert "[model] environment.api.model_requested: gpt-4 → gpt-4o" in flat
    # A commit pin is one word longer than a wrapped line allows to start with: it moves
    # to the next line whole.
    assert any(x.strip().startswith("jeqcho/caste-bias@8623a3a71cbbe7535b") for x in lines)


def test_table_wide_title_has_no_trailing_space_at_any_width(history):
    for columns in (80, 140):
        lines = cli(history, "drift", "--format", "table-wide", columns=columns).stdout
        assert [x for x in lines.splitlines() if x.endswith(" ")] == [], columns


def test_the_report_says_why_in_markdown_html_and_json(history, tmp_path):
    """The report shows the same reason beside the verdict, in all three formats, on the
    April → July comparison only."""
    out = tmp_path / "report"
    cli(history, "report", "--out", str(out))
    data = json.loads((out / "report.json").read_text())
    notes = [c["interval_note"] for c in data["comparisons"]]
    assert sum(n is not None for n in notes) == 1 and len(notes) >= 2, notes
    (note,) = [n for n in notes if n]
    assert note.startswith(NOTE) and "35.6%" in note
    markdown = (out / "report.md").read_text()
    rows = [x for x in markdown.splitlines() if NOTE in x]
    assert rows and all("no significant change" in x for x in rows), rows
    assert "−1.6" not in " ".join(rows)  # July → July carries none
    html = (out / "report.html").read_text()
    assert html.count(f'<span class="muted">{NOTE}') == markdown.count(NOTE) == len(rows)


def _noise(upper: float) -> NoiseFloor:
    return NoiseFloor(
        n_runs=3,
        n_pairs=3,
        pair_rates=(upper,) * 3,
        mean=upper,
        max=upper,
        pooled_flips=0,
        pooled_n=300,
        upper=upper,
    )


@pytest.mark.parametrize(
    ("kwargs", "held_by", "words"),
    [
        # The unadjusted interval can clear zero while the BH-adjusted p does not.
        ({"p_adjusted": 0.08, "noise": None}, "fdr", "after the Benjamini–Hochberg correction"),
        ({"p_adjusted": 0.01, "noise": _noise(0.30)}, "flip-noise-floor", "noise floor"),
        (
            {"p_adjusted": 0.01, "noise": _noise(0.10), "delta": -0.08, "rate_noise": 0.12},
            "rate-noise-floor",
            "the change of 8.0 pp is no larger than repeat runs",
        ),
    ],
)
def test_each_rule_that_holds_a_change_back_is_named(kwargs, held_by, words):
    verdict = decide(b=20, c=5, n_paired=100, alpha=0.05, **kwargs)
    assert verdict.label == "no significant change" and verdict.held_by == held_by
    note = interval_note(verdict, -0.2, -0.01)
    assert note is not None and note.startswith(NOTE) and words in note
    assert interval_note(verdict, -0.2, 0.01) is None  # the interval includes zero
    assert interval_note(verdict, None, None) is None


def test_a_flagged_change_needs_no_note():
    verdict = decide(b=30, c=2, n_paired=100, p_adjusted=0.001, alpha=0.05, noise=_noise(0.1))
    assert verdict.flagged and verdict.held_by is None
    assert interval_note(verdict, -0.3, -0.1) is None
