#!/usr/bin/env python3
"""Capture the monitor's user-visible outputs on fresh real stores, and compare two captures.

Why: issue 45 redesigns the families into plug-ins and must leave every output unchanged
("Outputs unchanged, compared on real stores before and after the redesign"). This script
makes that check one command each side: capture on the code before, capture on the code
after, compare. Nothing is mocked: each store is a fresh DuckDB file built by the CLI as a
user types it (``python -m monitor ... --db STORE`` subprocesses), from the real benchmark
files, the real SmolLM2 and embedding models and the real published prediction files.

    scripts/golden_outputs.py capture OUTDIR [--only GROUP ...] [--work DIR]
    scripts/golden_outputs.py compare DIR_A DIR_B
    scripts/golden_outputs.py renormalise DIR     # after a change to the rules below

The code under test is whatever ``python -m monitor`` imports in the subprocesses (this
interpreter, ``--python`` to pick another; PYTHONPATH selects a checkout). Environment as
the tests use it: ``MONITOR_DATA_MIRROR`` (default ``../shared/datasets`` beside the repo)
for the benchmark files, ``MONITOR_CACHE_DIR`` for converted model weights;
``MONITOR_DATA_DIR`` is a fresh folder per capture, ``MONITOR_DB`` and
``MONITOR_SNAPSHOTS_DIR`` are unset, ``COLUMNS=100``, ``NO_COLOR=1``, ``TZ=UTC``.

What is captured (one folder per store; ``.txt`` is terminal output, ``.json`` parsed JSON):

* ``make-run/``: ``run`` with its defaults (the ``make run`` job: SmolLM2, the four
  Indian-BhED axes, the neutral control, the default metric panel; 823 items, minutes on
  CPU), its terminal table (``run.txt``), ``runs list``, ``show`` (JSON and table) of each
  run, ``drift`` (JSON and text: a store with one run per snapshot, so "no baseline"),
  and ``report`` (JSON, Markdown, HTML).
* ``caste-history/``: ``import caste-bias`` of ``caste-bias/history`` (ten runs, two
  quarantined: exit 1 is expected), ``show --format json`` of each run, ``drift`` as JSON,
  text and ``table-wide``, ``report`` as JSON, Markdown and HTML.
* ``weat/``: ``run -s all-minilm-l6-v2 -b en-weat`` (the 15 English WEAT tests) and
  ``run -s multilingual-e5-small -b sochindi-weat`` (the 17 SocHindi tests): the run
  tables, ``show`` (JSON and table) of each run, ``report`` JSON.
* ``bbq/``: ``import bharatbbq`` of ``Example_Predictions/Age_examples.csv`` and
  ``import bbq`` of UnifiedQA's ``preds_Sexual_orientation.jsonl`` (as
  tests/test_choice_qa_import.py), ``show --format json`` of each run, ``drift`` gemma
  against llama (JSON and text, as that test) and its ``report`` (JSON, Markdown, HTML).

Every file records the command's exit status (``exit_codes.json`` per folder); a step
whose exit status is not the expected one stops the capture (exit 2) with its stderr.
stderr (progress, fetch notices) is kept under ``_logs/`` and never compared; each output
as printed is kept under ``_raw/``, so that ``renormalise`` can apply changed rules without
a new capture; files and folders whose names start with ``_`` (``_capture.json``: the
code's commit, durations, what the normaliser needs) are not compared.

Normalisations (only what differs between two captures of the same code; every figure
is kept, and each replacement names what it replaced):

* run ids of scored runs (``<UTC start>-<snapshot>-<6 random hex>``) become
  ``<run:SNAPSHOT:N>``, N counting that snapshot's runs of the store in id (time) order;
  imported runs' ids are derived from their files and are kept;
* timestamps at or after the capture's start (ISO 8601 with ``T`` or a space, optional
  fraction and offset, as runs, leases and ``generated_at`` write them) become ``<time>``;
  earlier ones (commit times of imported studies, ``--date``) are data and are kept; a
  date alone on or after the capture's day (a report's run date) becomes ``<date>``;
* a report chart's time-axis tick labelled with a day within a day of the capture's
  (``28 Nov``: the English and SocHindi WEAT runs' trend charts) has its x position and
  label replaced (``<x>``, ``<day>``): both follow the seconds between the runs; the
  plotted values, their axis and the data-dated ticks of imported studies are kept;
* a scored run's id cut short by a table (``20261128T172841Z-all-min…``) becomes its
  label followed by ``…``;
* the monitor checkout's own commit (``git_commit`` of scored runs, with or without
  ``-dirty``) becomes ``<monitor-commit>``: it is what differs before and after a change;
* durations of the capture's own steps (JSON keys ``elapsed_s``: the quality suite's
  validation time) become ``<seconds>``;
* the capture's temporary folder becomes ``<work>``, the checkout's root ``<repo>`` and
  ``MONITOR_CACHE_DIR`` ``<cache>``.

Exit codes: capture 0 done, 2 a step failed; compare 0 all identical, 1 something
differs, 2 bad input (not a capture).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SKIP_PREFIX = "_"  # files and folders not compared (logs, durations, raw outputs)
RAW = "_raw"  # every output as the CLI printed it, for `renormalise`
SCORED_RUN_ID = re.compile(r"^\d{8}T\d{6}Z-(?P<snapshot>.+)-[0-9a-f]{6}$")
TIMESTAMP = re.compile(
    r"\b(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}(?::\d{2})?)(?P<frac>\.\d+)?"
    r"(?P<zone>Z|[+-]\d{2}:?\d{2}|\s?UTC)?"
)
# A run id cut short by a table or a report (``20261128T172841Z-all-min…``).
CUT_RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[\w.-]*…")
# A date alone (``2026-11-28``), as the report's trend tables print a run's day.
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b(?![T ]\d{2}:\d{2})")
# A time-axis tick of a report chart: its place and its day label follow the runs' clock.
DAY_TICK = re.compile(
    r'<line class="tick" x1="[\d.]+" x2="[\d.]+" (?P<y>y1="[\d.]+" y2="[\d.]+")/>'
    r'<text class="xl" x="[\d.]+" (?P<ty>y="[\d.]+")>(?P<day>\d{1,2} [A-Z][a-z]{2})</text>'
)
# How far before the capture's start a timestamp still counts as "written by this capture"
# (the clock of the first step's start, minus slack for rounding to whole seconds).
WINDOW_SLACK = timedelta(seconds=60)
# JSON keys whose values are wall-clock durations of this capture's own steps (the quality
# suite's validation time); their values become "<seconds>".
DURATION_KEYS = frozenset({"elapsed_s"})

SHARED = ROOT.parent / "shared" / "datasets"
HISTORY = "caste-bias/history"
BHARATBBQ_PREDICTIONS = "bharatbbq/Example_Predictions/Age_examples.csv"
BBQ_PREDICTIONS = "bbq/results/UnifiedQA/preds_Sexual_orientation.jsonl"
BBQ_PAIR = ("--snapshot", "gemma-bharatbbq-paper", "--baseline-snapshot", "llama-bharatbbq-paper")


class StepFailed(RuntimeError):
    """A CLI step exited with a status it should not have."""


# ---------------------------------------------------------------------------------------
# Normalisation


@dataclass
class Normaliser:
    """Replaces what differs between two captures of the same code (see the module doc)."""

    since: datetime
    paths: dict[str, str] = field(default_factory=dict)  # literal path -> placeholder
    commit: str | None = None
    run_labels: dict[str, str] = field(default_factory=dict)

    def add_runs(self, run_ids: list[str]) -> None:
        """Label a store's scored runs ``<run:SNAPSHOT:N>`` in id (start time) order."""
        counts: dict[str, int] = {}
        for run_id in sorted(run_ids):
            match = SCORED_RUN_ID.match(run_id)
            if not match or run_id in self.run_labels:
                continue
            snapshot = match["snapshot"]
            counts[snapshot] = counts.get(snapshot, 0) + 1
            self.run_labels[run_id] = f"<run:{snapshot}:{counts[snapshot]}>"

    def _time(self, match: re.Match[str]) -> str:
        zone = (match["zone"] or "").strip()
        clock = match["time"] if match["time"].count(":") == 2 else match["time"] + ":00"
        try:
            when = datetime.fromisoformat(f"{match['date']}T{clock}")
        except ValueError:
            return match[0]
        if zone not in ("", "Z", "UTC"):
            sign = 1 if zone[0] == "+" else -1
            digits = zone[1:].replace(":", "")
            when -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        when = when.replace(tzinfo=UTC)
        return "<time>" if when >= self.since - WINDOW_SLACK else match[0]

    def text(self, value: str) -> str:
        """One string, normalised."""
        for run_id, label in self.run_labels.items():
            value = value.replace(run_id, label)
        if self.commit:
            value = value.replace(f"{self.commit}-dirty", "<monitor-commit>")
            value = value.replace(self.commit, "<monitor-commit>")
        for path, label in sorted(self.paths.items(), key=lambda kv: -len(kv[0])):
            value = value.replace(path, label)
        value = CUT_RUN_ID.sub(self._cut_run_id, value)
        value = DAY_TICK.sub(self._day_tick, value)
        value = TIMESTAMP.sub(self._time, value)
        return DATE.sub(self._date, value)

    def _cut_run_id(self, match: re.Match[str]) -> str:
        prefix = match[0].removesuffix("…")
        labels = {label for run_id, label in self.run_labels.items() if run_id.startswith(prefix)}
        return f"{labels.pop()}…" if len(labels) == 1 else match[0]

    def _day_tick(self, match: re.Match[str]) -> str:
        """A tick on a day within a day of the capture's: placed by the runs' clock."""
        start = (self.since - WINDOW_SLACK).date()
        try:
            day = datetime.strptime(f"{match['day']} {start.year}", "%d %b %Y").date()
        except ValueError:
            return match[0]
        if not timedelta(days=-1) <= day - start <= timedelta(days=2):
            return match[0]
        return (
            f'<line class="tick" x1="<x>" x2="<x>" {match["y"]}/>'
            f'<text class="xl" x="<x>" {match["ty"]}><day></text>'
        )

    def _date(self, match: re.Match[str]) -> str:
        try:
            day = datetime.fromisoformat(match[0]).date()
        except ValueError:
            return match[0]
        return "<date>" if day >= (self.since - WINDOW_SLACK).date() else match[0]

    def json(self, value: Any) -> Any:
        """A parsed JSON document, every string in it (keys too) normalised."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {
                self.text(k): "<seconds>" if k in DURATION_KEYS else self.json(v)
                for k, v in value.items()
            }
        return value


def write_normalised(norm: Normaliser, raw: str, path: Path) -> None:
    """Write one output normalised (JSON re-indented, its key order kept)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        text = json.dumps(norm.json(json.loads(raw)), indent=2, ensure_ascii=False) + "\n"
    else:
        text = norm.text(raw)
    path.write_text(text, encoding="utf-8")


def normaliser_facts(norm: Normaliser, run_ids: list[list[str]]) -> dict[str, Any]:
    """What `renormalise` needs to rebuild this capture's normaliser (in _capture.json)."""
    return {
        "since": norm.since.isoformat(),
        "paths": norm.paths,
        "commit": norm.commit,
        "run_ids": run_ids,
    }


def normaliser_from(facts: dict[str, Any]) -> Normaliser:
    norm = Normaliser(
        since=datetime.fromisoformat(facts["since"]),
        paths=dict(facts["paths"]),
        commit=facts["commit"],
    )
    for ids in facts["run_ids"]:
        norm.add_runs(ids)
    return norm


def renormalise(out: Path) -> int:
    """Rewrite a capture's compared files from its ``_raw/`` outputs with today's rules."""
    try:
        facts = json.loads((out / "_capture.json").read_text(encoding="utf-8"))["normalise"]
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        print(f"error: {out} is not a capture with raw outputs ({exc})", file=sys.stderr)
        return 2
    norm = normaliser_from(facts)
    for name in _files(out):
        (out / name).unlink()
    count = 0
    for raw in sorted((out / RAW).rglob("*")):
        if raw.is_file():
            write_normalised(
                norm, raw.read_text(encoding="utf-8"), out / raw.relative_to(out / RAW)
            )
            count += 1
    print(f"renormalised {count} files in {out}")
    return 0


# ---------------------------------------------------------------------------------------
# Capture


@dataclass
class Capture:
    """One capture in progress: where the stores live, where outputs go, what ran."""

    out: Path
    work: Path
    python: str
    env: dict[str, str]
    norm: Normaliser
    steps: list[dict[str, Any]] = field(default_factory=list)
    exits: dict[str, dict[str, int]] = field(default_factory=dict)
    run_ids: list[list[str]] = field(default_factory=list)  # per store, in labelling order

    def cli(self, group: str, name: str, *args: str, ok: tuple[int, ...] = (0,)) -> str:
        """Run ``python -m monitor ARGS`` for one step; return its stdout (raw)."""
        print(f"[{len(self.steps) + 1:>2}] {group}: {name} ...", end="", flush=True)
        started = time.monotonic()
        proc = subprocess.run(
            [self.python, "-m", "monitor", *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.work,
        )
        seconds = time.monotonic() - started
        print(f" exit {proc.returncode}, {seconds:.1f} s", flush=True)
        logs = self.out / "_logs" / group
        logs.mkdir(parents=True, exist_ok=True)
        (logs / f"{name}.stderr").write_text(proc.stderr, encoding="utf-8")
        self.steps.append(
            {
                "group": group,
                "step": name,
                "argv": list(args),
                "exit": proc.returncode,
                "seconds": round(seconds, 1),
            }
        )
        self.exits.setdefault(group, {})[name] = proc.returncode
        if proc.returncode not in ok:
            raise StepFailed(
                f"{group}: `monitor {' '.join(args)}` exited {proc.returncode} "
                f"(expected {' or '.join(map(str, ok))})\n{proc.stderr[-3000:]}"
            )
        return proc.stdout

    def store(self, group: str) -> str:
        return str(self.work / f"{group}.duckdb")

    def save(self, group: str, name: str, raw: str) -> None:
        """Keep one output as printed (``_raw/``); it is normalised once the capture is
        done, when every run id of the stores is known (a run's table names its run
        before ``runs list`` does)."""
        raw_path = self.out / RAW / group / name
        raw_path.parent.mkdir(parents=True, exist_ok=True)
        raw_path.write_text(raw, encoding="utf-8")

    def runs(self, group: str) -> list[dict[str, Any]]:
        """The store's runs (``runs list``), oldest first; labels its scored runs."""
        raw = self.cli(
            group, "runs-list", "runs", "list", "--db", self.store(group), "--format", "json"
        )
        runs = sorted(json.loads(raw), key=lambda r: r["run_id"])
        self.run_ids.append([r["run_id"] for r in runs])
        self.norm.add_runs(self.run_ids[-1])
        self.save(group, "runs.json", raw)
        return runs

    def show_each(self, group: str, runs: list[dict[str, Any]], table: bool = False) -> None:
        """``show --format json`` (and the table) of each run, named by snapshot and order."""
        seen: dict[str, int] = {}
        for run in runs:
            snapshot = run["snapshot_id"]
            seen[snapshot] = seen.get(snapshot, 0) + 1
            stem = f"show-{snapshot}-{seen[snapshot]}"
            db = ("--db", self.store(group))
            self.save(
                group,
                f"{stem}.json",
                self.cli(group, stem, "show", run["run_id"], *db, "--format", "json"),
            )
            if table:
                self.save(
                    group,
                    f"{stem}.txt",
                    self.cli(group, f"{stem}-table", "show", run["run_id"], *db),
                )

    def drift(self, group: str, *args: str, formats: tuple[str, ...] = ("json", "text")) -> None:
        db = ("--db", self.store(group))
        for fmt in formats:
            name = {"json": "drift.json", "text": "drift.txt"}.get(fmt, f"drift-{fmt}.txt")
            extra = () if fmt == "text" else ("--format", fmt)
            self.save(group, name, self.cli(group, name, "drift", *args, *db, *extra))

    def report(self, group: str, *args: str) -> None:
        folder = self.work / f"{group}-report"
        self.cli(group, "report", "report", *args, "--db", self.store(group), "--out", str(folder))
        for name in ("report.json", "report.md", "report.html"):
            self.save(group, name, (folder / name).read_text(encoding="utf-8"))


def group_make_run(cap: Capture, data: Path) -> None:
    """`make run`'s job: ``run`` with every default."""
    cap.save(
        "make-run", "run.txt", cap.cli("make-run", "run", "run", "--db", cap.store("make-run"))
    )
    runs = cap.runs("make-run")
    cap.show_each("make-run", runs, table=True)
    cap.drift("make-run")
    cap.report("make-run")


def group_caste_history(cap: Capture, data: Path) -> None:
    """The GPT-4o caste study's ten committed results (docs/caste-study.md)."""
    g = "caste-history"
    folder = str(data / HISTORY)
    # Two runs are quarantined: exit 1, as documented.
    cap.save(
        g,
        "import.txt",
        cap.cli(
            g,
            "import",
            "import",
            "caste-bias",
            folder,
            "--snapshot",
            "gpt-4o-caste-study",
            "--db",
            cap.store(g),
            ok=(1,),
        ),
    )
    runs = cap.runs(g)
    cap.show_each(g, runs)
    cap.drift(g, formats=("json", "text", "table-wide"))
    cap.report(g)


def group_weat(cap: Capture, data: Path) -> None:
    """The association tests: English WEAT on all-MiniLM-L6-v2, SocHindi on e5-small."""
    g = "weat"
    for snapshot, benchmark in (
        ("all-minilm-l6-v2", "en-weat"),
        ("multilingual-e5-small", "sochindi-weat"),
    ):
        name = f"run-{snapshot}-{benchmark}"
        cap.save(
            g,
            f"{name}.txt",
            cap.cli(g, name, "run", "-s", snapshot, "-b", benchmark, "--db", cap.store(g)),
        )
    runs = cap.runs(g)
    cap.show_each(g, runs, table=True)
    cap.report(g)


def group_bbq(cap: Capture, data: Path) -> None:
    """The published BBQ and BharatBBQ predictions (tests/test_choice_qa_import.py)."""
    g = "bbq"
    db = ("--db", cap.store(g))
    cap.save(
        g,
        "import-bharatbbq.json",
        cap.cli(
            g,
            "import-bharatbbq",
            "import",
            "bharatbbq",
            str(data / BHARATBBQ_PREDICTIONS),
            *db,
            "--format",
            "json",
        ),
    )
    cap.save(
        g,
        "import-bbq.json",
        cap.cli(
            g, "import-bbq", "import", "bbq", str(data / BBQ_PREDICTIONS), *db, "--format", "json"
        ),
    )
    runs = cap.runs(g)
    cap.show_each(g, runs)
    cap.drift(g, *BBQ_PAIR)
    cap.report(g, *BBQ_PAIR)


GROUPS: dict[str, Callable[[Capture, Path], None]] = {
    "caste-history": group_caste_history,
    "bbq": group_bbq,
    "weat": group_weat,
    "make-run": group_make_run,  # last: the slowest (SmolLM2 on 823 items)
}


def _code_facts(python: str, env: dict[str, str]) -> dict[str, str]:
    """Which checkout ``python -m monitor`` runs, and its commit (for _capture.json)."""
    where = subprocess.run(
        [python, "-c", "import monitor, pathlib; print(pathlib.Path(monitor.__file__).parents[1])"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {"checkout": where, "commit": commit, "dirty": "yes" if dirty else "no"}


def capture(out: Path, only: list[str], python: str, work: Path | None) -> int:
    """Build fresh stores with the CLI and write their normalised outputs to OUT."""
    if out.exists() and any(out.iterdir()):
        print(f"error: {out} exists and is not empty", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    keep = work is not None
    work = (work or Path(tempfile.mkdtemp(prefix="golden-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    data = Path(os.environ.get("MONITOR_DATA_MIRROR") or SHARED).resolve()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MONITOR_DB", "MONITOR_SNAPSHOTS_DIR", "GITHUB_EVENT_NAME")
    }
    env.update(
        MONITOR_DATA_DIR=str(work / "datasets"),
        MONITOR_DATA_MIRROR=str(data),
        COLUMNS="100",
        NO_COLOR="1",
        TZ="UTC",
        PYTHONUNBUFFERED="1",
    )
    code = _code_facts(python, env)
    norm = Normaliser(since=datetime.now(UTC))
    norm.paths[str(work)] = "<work>"
    norm.paths[code["checkout"]] = "<repo>"
    if env.get("MONITOR_CACHE_DIR"):
        norm.paths[str(Path(env["MONITOR_CACHE_DIR"]).resolve())] = "<cache>"
    norm.commit = code["commit"] or None
    cap = Capture(out=out, work=work, python=python, env=env, norm=norm)
    print(
        f"capturing into {out} (code: {code['checkout']} at {code['commit'][:12]}"
        f"{', dirty' if code['dirty'] == 'yes' else ''}; stores in {work})"
    )
    started, status = time.monotonic(), 0
    try:
        for name, build in GROUPS.items():
            if only and name not in only:
                continue
            group_started = time.monotonic()
            build(cap, data)
            print(f"     {name}: done in {time.monotonic() - group_started:.0f} s", flush=True)
    except StepFailed as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        status = 2
    for group, codes in cap.exits.items():
        cap.save(group, "exit_codes.json", json.dumps(codes, indent=2) + "\n")
    total = time.monotonic() - started
    facts = {
        "code": code,
        "python": python,
        "data": str(data),
        "work": str(work),
        "seconds": round(total, 1),
        "status": status,
        "steps": cap.steps,
        "normalise": normaliser_facts(norm, cap.run_ids),
    }
    (out / "_capture.json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
    renormalise(out)
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    verdict = "failed" if status else "done"
    print(f"capture {verdict} in {total:.0f} s: {sum(1 for _ in _files(out))} files in {out}")
    return status


# ---------------------------------------------------------------------------------------
# Compare


def _files(root: Path) -> Iterator[str]:
    """Compared files under ROOT, relative, sorted; anything named ``_...`` is skipped."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not any(p.startswith(SKIP_PREFIX) for p in rel.parts):
            yield rel.as_posix()


def _same_scalar(a: Any, b: Any) -> bool:
    """Equal and of one JSON type: 1 and 1.0, or 1 and true, print differently."""
    return type(a) is type(b) and a == b


def json_difference(a: Any, b: Any, path: str = "$") -> str | None:
    """The first place where two JSON documents differ, as a path and both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key not in b:
                return f"{path}.{key}: only in the first"
        for key in b:
            if key not in a:
                return f"{path}.{key}: only in the second"
        for key in a:
            found = json_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        if list(a) != list(b):
            return f"{path}: the same keys in another order"
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = json_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        return None
    if _same_scalar(a, b):
        return None
    return f"{path}: {_short(a)} vs {_short(b)}"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def text_difference(a: str, b: str) -> str | None:
    """The first differing line (1-based), both sides shown."""
    left, right = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(left, right, strict=False), start=1):
        if x != y:
            return f"line {i}: {_short(x)} vs {_short(y)}"
    if len(left) != len(right):
        return f"{len(left)} lines vs {len(right)}"
    if a != b:
        return "line endings or final newline differ"
    return None


def file_difference(a: Path, b: Path) -> str | None:
    """Why two captured files differ, or None when they are identical."""
    ta, tb = a.read_text(encoding="utf-8"), b.read_text(encoding="utf-8")
    if ta == tb:
        return None
    if a.suffix == ".json":
        try:
            found = json_difference(json.loads(ta), json.loads(tb))
        except json.JSONDecodeError:
            found = None
        if found:
            return found
    return text_difference(ta, tb) or "bytes differ"


def compare(a: Path, b: Path) -> int:
    """Print identical / differs per file; 0 only when every file is identical."""
    for folder in (a, b):
        if not folder.is_dir() or not any(_files(folder)):
            print(f"error: {folder} is not a capture (no files)", file=sys.stderr)
            return 2
    left, right = set(_files(a)), set(_files(b))
    differing = 0
    for name in sorted(left | right):
        if name not in right:
            line, differing = f"differs    {name}: only in {a}", differing + 1
        elif name not in left:
            line, differing = f"differs    {name}: only in {b}", differing + 1
        else:
            why = file_difference(a / name, b / name)
            differing += why is not None
            line = f"differs    {name}: {why}" if why else f"identical  {name}"
        print(line)
    total = len(left | right)
    if differing:
        print(f"{differing} of {total} files differ ({a} vs {b})")
        return 1
    print(f"all {total} files identical ({a} vs {b})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="build fresh stores and write normalised outputs")
    cap.add_argument("outdir", type=Path)
    cap.add_argument(
        "--only",
        action="append",
        choices=list(GROUPS),
        default=[],
        help="capture only this group (repeatable); default: all",
    )
    cap.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that runs `-m monitor` (default: this one)",
    )
    cap.add_argument(
        "--work", type=Path, help="build (and keep) the stores here instead of a temporary folder"
    )
    cmp_ = sub.add_parser("compare", help="diff two captures; exit 0 only when identical")
    cmp_.add_argument("dir_a", type=Path)
    cmp_.add_argument("dir_b", type=Path)
    ren = sub.add_parser("renormalise", help="rewrite a capture's files from its _raw/ outputs")
    ren.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "capture":
        return capture(args.outdir.resolve(), args.only, args.python, args.work)
    if args.command == "renormalise":
        return renormalise(args.outdir)
    return compare(args.dir_a, args.dir_b)


if __name__ == "__main__":
    sys.exit(main())
