"""SeeGULL Multilingual (issue 48) through the CLI, as a user types it.

* the item rule on the real files: ``data fetch -b seegull`` prints, per language, the
  items and excluded rows the rule gives, recomputed here from the CSVs with pandas
  (rows with at least two stereotype votes; contrasts of the stereotyped identity's kind
  with no row with the attribute), and the stereotype counts the issue states;
* a tokenizer that cannot read the script: SmolLM2 on Tamil (84% byte fragments) is
  refused with the reason, exit 3, nothing written;
* Gemma 3 270M on the mini sets of Hindi and Tamil: ``run`` prints each language's rates
  with intervals and the exclusions with reasons; a second run and ``drift`` pair them
  (Δ 0); a planted regression (every Hindi item the second run decided against the
  stereotype moved to it, in the store) is flagged and ``drift --fail-on regression``
  exits 1; ``report`` carries the family's section in Markdown, HTML and JSON.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from test_cli_run import cli

from monitor.families.seegull.identities import gloss_kind

LANGUAGES = {"hi": "Hindi", "bn": "Bengali", "mr": "Marathi", "ta": "Tamil", "te": "Telugu"}
# Rows with at least two stereotype votes, as issue 48 counts them from the files.
STEREOTYPES = {"hi": 355, "bn": 425, "mr": 610, "ta": 350, "te": 31}
GEMMA = "gemma-3-270m-q4"
RATE = re.compile(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]")


def _expected(path: Path) -> tuple[int, int, int]:
    """(stereotypes, items at full size, excluded rows) by the rule, from the CSV."""
    df = pd.read_csv(path)
    kind = {
        identity: {gloss_kind(g) for g in glosses}
        for identity, glosses in df.groupby("identity")["translated_identity"]
    }
    kind = {i: k.pop() if len(k) == 1 else "ambiguous" for i, k in kind.items()}
    has = set(zip(df["identity"], df["attribute"], strict=True))
    stereo = df[df["stereotype"] >= 2]
    kept = stereo[stereo["identity"].map(kind).isin(["nationality", "indian-region"])]
    items = 0
    for s, a in zip(kept["identity"], kept["attribute"], strict=True):
        items += sum(1 for c in kind if c != s and kind[c] == kind[s] and (c, a) not in has)
    return len(stereo), items, len(df) - len(kept)


def test_item_counts_follow_the_rule_on_the_real_files(
    monitor_env: Path, shared_datasets: Path
) -> None:
    proc = cli("data", "fetch", "-b", "seegull")
    printed = {
        m[1]: (int(m[2]), int(m[3]))
        for m in re.finditer(r"seegull-(\w+): (\d+) items, (\d+) excluded rows", proc.stderr)
    }
    assert set(printed) == set(LANGUAGES)
    folder = shared_datasets / "seegull-multilingual" / "dataset" / "stereotypes"
    for code, name in LANGUAGES.items():
        stereotypes, items, excluded = _expected(folder / f"{name} ({code}) in India.csv")
        assert stereotypes == STEREOTYPES[code]
        assert printed[code] == (items, excluded), code
    # Tamil's one identity glossed "Kon" has no kind: its stereotype is excluded.
    assert printed["ta"][1] == 1389 - 350 + 1


def _runs(db: Path) -> int:
    if not db.exists():
        return 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    finally:
        con.close()


def test_smollm2_cannot_read_tamil_and_is_refused(monitor_env: Path) -> None:
    db = Path(os.environ["MONITOR_DB"])
    proc = cli(
        "run", "-s", "smollm2-135m-instruct-q4", "-b", "seegull-ta", "--size", "mini", check=False
    )
    assert proc.returncode == 3, proc.stderr
    reason = " ".join(proc.stderr.split())
    assert "cannot represent seegull-ta" in reason and "language 'ta'" in reason
    assert "byte fragments" in reason
    assert _runs(db) == 0


def _run_ids(stdout: str) -> list[str]:
    return re.findall(rf"{GEMMA}\s+run (\S+)\s+\(complete\)", stdout)


def _plant_regression(db: Path, run_id: str) -> int:
    """Move every Hindi item the run decided against the stereotype to it; how many."""
    con = duckdb.connect(str(db))
    try:
        moved = con.execute(
            "SELECT count(*) FROM scores s JOIN items i USING (item_id) "
            "WHERE s.run_id = ? AND s.outcome = 'anti' AND i.benchmark = 'seegull-hi'",
            [run_id],
        ).fetchone()[0]
        con.execute(
            "UPDATE scores SET outcome = 'stereo', delta = -delta WHERE run_id = ? AND "
            "outcome = 'anti' AND item_id IN "
            "(SELECT item_id FROM items WHERE benchmark = 'seegull-hi')",
            [run_id],
        )
    finally:
        con.close()
    return moved


@pytest.mark.slow
def test_gemma_mini_run_drift_and_report(monitor_env: Path) -> None:
    db = Path(os.environ["MONITOR_DB"])
    args = ("run", "-s", GEMMA, "-b", "seegull-hi", "-b", "seegull-ta", "--size", "mini")
    first = cli(*args, timeout=1500)
    out = first.stdout
    (old,) = _run_ids(out)
    for lang in ("seegull-hi", "seegull-ta"):
        block = out[out.index(lang) :]
        line = next(x for x in block.splitlines() if x.strip("│ ").startswith("all"))
        assert len(RATE.findall(line)) == 3, line  # frame 1, frame 2, balanced
    assert "exclusions: fewer_than_two_votes 1447, identity_kind_unknown 1" in out
    assert "not drawn" in out

    second = cli(*args[:5], "--size", "mini", timeout=1500)  # Hindi alone: same items
    (new,) = _run_ids(second.stdout)
    pair = ("--run", new, "--baseline", old)
    same = json.loads(cli("drift", *pair, "--format", "json").stdout)
    ours = [c for c in same["family_comparisons"] if c["family"] == "seegull"]
    assert [(c["benchmark"], c["n_paired"], c["delta"]) for c in ours] == [("seegull-hi", 72, 0.0)]
    assert ours[0]["verdict"] == "no significant change"

    moved = _plant_regression(db, new)
    assert moved > 0
    flagged = cli("drift", *pair, "--fail-on", "regression", "--format", "json", check=False)
    assert flagged.returncode == 1, flagged.stderr
    (c,) = [c for c in json.loads(flagged.stdout)["family_comparisons"] if c["family"] == "seegull"]
    assert c["verdict"] == "regression" and c["towards_stereotype"] is True
    assert (c["details"]["c"], c["details"]["b"]) == (moved, 0)
    assert c["delta"] == pytest.approx(100 * moved / 72)

    folder = monitor_env / "report"
    cli("report", *pair, "--out", str(folder))
    md = (folder / "report.md").read_text(encoding="utf-8")
    assert md.startswith("**Verdict:** gemma-3-270m-q4 (SeeGULL stereotypes): 1 regression")
    assert "### SeeGULL stereotypes in Indian languages" in md
    assert f"({moved} moved to the stereotype, 0 away from it)" in md
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert '<h3 id="seegull">SeeGULL stereotypes in Indian languages</h3>' in html
    data = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    verdicts = [c["verdict"] for c in data["family_comparisons"] if c["family"] == "seegull"]
    assert [v["label"] for v in verdicts] == ["regression"]
