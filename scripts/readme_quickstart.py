#!/usr/bin/env python3
"""Paste a real `bias-monitor run` summary into the README's quick-start block.

The README shows what `make run` prints. Typed by hand, that table went stale (four rows
and 771 items after the neutral control made it five rows and 823). This script takes
the summary from a real run's output, checks that it has the shape `bias-monitor run`
prints (a title naming snapshot and run, the column header, a row naming each benchmark
with a row per axis under it, the "scored N items" line) and rewrites the block between
the README's markers ``<!-- quickstart:begin -->`` and ``<!-- quickstart:end -->``.

    scripts/readme_quickstart.py                      # run the `make run` job, paste
    scripts/readme_quickstart.py --from OUTPUT.txt    # paste a saved output instead
    scripts/readme_quickstart.py --from OUTPUT.txt --check   # exit 1 if the README differs

A run scores SmolLM2 on the four axes (minutes); ``--save FILE`` keeps its output, which
``tests/test_readme_quickstart.py`` uses as its captured real output.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- quickstart:begin -->", "<!-- quickstart:end -->"
COLUMNS = ["benchmark / axis", "bias rate", "95% CI", "stereo", "anti", "ties", "n"]
TITLE = re.compile(r"^(?P<snapshot>\S+)\s+run (?P<run_id>\S+)\s+\((?P<status>[a-z]+)\)$")
BENCHMARK = re.compile(r"^(?P<benchmark>\S+)$")  # a row naming the benchmark of the rows below
ROW = re.compile(
    r"^(?P<axis>\S+)\s+(?P<rate>\d+\.\d)%\s+"
    r"\[(?P<low>\d+\.\d), (?P<high>\d+\.\d)\]\s+(?P<stereo>\d+)\s+(?P<anti>\d+)\s+"
    r"(?P<ties>\d+)\s+(?P<n>\d+)$"
)
# An axis whose stereotypes name two groups (caste) is three or four rows: its balanced
# rate, a row per direction, then the raw rate with the counts (the row that adds up).
_NUMS = (
    r"(?P<rate>\d+\.\d)%\s+\[(?P<low>\d+\.\d), (?P<high>\d+\.\d)\]\s+"
    r"(?P<stereo>\d+)\s+(?P<anti>\d+)\s+(?P<ties>\d+)\s+(?P<n>\d+)$"
)
BALANCED = re.compile(
    r"^(?P<axis>\S+): balanced\s+(?P<rate>\d+\.\d)%\s+"
    r"\[(?P<low>\d+\.\d), (?P<high>\d+\.\d)\]\s+(?P<n>\d+)$"
)
DIRECTION = re.compile(
    r"^(?P<group>\S+(?: \S+)*) items\s+(?P<rate>\d+\.\d)%\s+"
    r"\[(?P<low>\d+\.\d), (?P<high>\d+\.\d)\]\s+(?P<stereo>\d+)\s+(?P<anti>\d+)\s+(?P<n>\d+)$"
)
RAW = re.compile(r"^raw \(mixes both\)\s+" + _NUMS)
SCORED = re.compile(r"^scored (?P<scored>\d+) items; excluded (?P<excluded>\d+) source rows$")


class ShapeError(ValueError):
    """The output is not the summary `bias-monitor run` prints."""


@dataclass(frozen=True)
class Summary:
    """One snapshot's summary as `bias-monitor run` prints it."""

    snapshot: str
    run_id: str
    status: str
    rows: list[dict[str, str]]
    scored: int
    excluded: int
    lines: list[str]  # the printed lines, trailing spaces removed


def _cells(line: str) -> str:
    """A table line without rich's box drawing: column rules become spaces, and a line that
    is only a border becomes empty."""
    text = line.translate(_RULES).strip()
    return "" if not text.strip(_BORDER) else text


_RULES = str.maketrans({"│": " ", "┃": " "})
_BORDER = "┏┓┗┛┡┩└┘┳┻╇┴┼━─┃│╋ "


def parse(output: str) -> Summary:
    """The first snapshot summary in ``output``; raises ``ShapeError`` naming what is off."""
    lines = [ln.rstrip() for ln in output.splitlines()]
    start = next((i for i, ln in enumerate(lines) if TITLE.match(ln.strip())), None)
    if start is None:
        raise ShapeError("no summary title ('SNAPSHOT  run RUN_ID  (status)') in the output")
    title = TITLE.match(lines[start].strip())
    assert title is not None
    content = [(i, _cells(ln)) for i, ln in enumerate(lines) if i > start and _cells(ln)]
    if not content or content[0][1].split() != " ".join(COLUMNS).split():
        got = content[0][1] if content else ""
        raise ShapeError(f"unexpected column header: {got!r}")
    rows: list[dict[str, str]] = []
    benchmark = None
    k = 1
    balanced: dict[str, str] = {}  # the balanced and direction rows above a raw row
    while k < len(content):
        text = content[k][1]
        if b := BENCHMARK.match(text):
            benchmark, balanced = b["benchmark"], {}
        elif benchmark is not None and (m := ROW.match(text)):
            rows.append({"benchmark": benchmark, **m.groupdict()})
        elif benchmark is not None and (m := BALANCED.match(text)):
            balanced = {"axis": m["axis"], "balanced": f"{m['rate']} [{m['low']}, {m['high']}]"}
        elif balanced and DIRECTION.match(text):
            pass  # a direction's rate: shown, its items counted in the raw row
        elif balanced and (m := RAW.match(text)):
            # The row that adds up: the raw rate with its counts, under the axis's name.
            rows.append({"benchmark": benchmark, "axis": balanced["axis"], **m.groupdict()})
            balanced = {}
        else:
            break
        k += 1
    if not rows:
        raise ShapeError("no table rows under the header")
    caption = 0  # the table's caption (axes whose rate is raw only): a few lines at most
    while k < len(content) and not SCORED.match(content[k][1]) and caption < 4:
        k, caption = k + 1, caption + 1
    scored = SCORED.match(content[k][1]) if k < len(content) else None
    if scored is None:
        raise ShapeError("no 'scored N items; excluded M source rows' line after the rows")
    end = content[k][0] + 1
    if end < len(lines) and lines[end].startswith("exclusions: "):
        end += 1
    total = sum(int(r["n"]) for r in rows)
    if total != int(scored["scored"]):
        raise ShapeError(f"rows add up to {total} items, the summary says {scored['scored']}")
    return Summary(
        snapshot=title["snapshot"],
        run_id=title["run_id"],
        status=title["status"],
        rows=rows,
        scored=int(scored["scored"]),
        excluded=int(scored["excluded"]),
        lines=lines[start:end],
    )


def render(summary: Summary) -> str:
    """The README block: the summary's printed lines in a fenced block, between markers."""
    return "\n".join([BEGIN, "```", *summary.lines, "```", END])


def replace_block(readme: str, block: str) -> str:
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise ShapeError(f"the README needs exactly one {BEGIN} and one {END}")
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    return head + block + tail


def run_default(save: Path | None) -> str:
    """`bias-monitor run` as `make run` runs it, into a throwaway store."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [sys.executable, "-m", "monitor", "run", "--db", str(Path(tmp) / "m.duckdb")],
            capture_output=True,
            text=True,
            check=False,
        )
    if proc.returncode != 0:
        sys.exit(f"bias-monitor run exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    if save is not None:
        save.write_text(proc.stdout, encoding="utf-8")
    return proc.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="source", type=Path, help="a saved `bias-monitor run` output")
    ap.add_argument("--save", type=Path, help="keep the run's output in this file")
    ap.add_argument("--readme", type=Path, default=ROOT / "README.md")
    ap.add_argument("--check", action="store_true", help="exit 1 if the README's block differs")
    args = ap.parse_args(argv)
    if args.source is not None:
        output = args.source.read_text(encoding="utf-8")
    else:
        output = run_default(args.save)
    try:
        summary = parse(output)
        readme = args.readme.read_text(encoding="utf-8")
        updated = replace_block(readme, render(summary))
    except (ShapeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if updated != readme:
            print(f"{args.readme}: the quick-start block is not this output's", file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(updated, encoding="utf-8")
    print(f"{args.readme}: {len(summary.rows)} rows, {summary.scored} items ({summary.run_id})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
