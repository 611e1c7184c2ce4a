"""The balanced rate through `bias-monitor drift`: a preference for one group's name moves
the raw rate but never the balanced one, and only a change in the stereotype fails
`--fail-on regression`.

Known answers on simulated per-item outcomes written into a real DuckDB store (neutral
synthetic sentences under the manifest's bhed-caste id, whose stereotypes name either
Brahmins or Dalits, as the real file's do): the baseline prefers the stereotype on half
of each direction's items; a "name" model moves the Brahmin items up by x and the Dalit
items down by x (it likes the sentence that says "Brahmin", whatever it says), a
"stereotype" model moves both directions up by x. Then drift is read as a user types it,
in JSON and in the default lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from monitor.benchmarks.items import Item
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store

BENCH, AXIS = "bhed-caste", "caste"
VERSION = f"{BENCH}@000000000000:000000000000:errata-none"
N_BRAHMIN, N_DALIT = 300, 100  # a 3:1 mix, so a name preference moves the raw rate a lot
OLD, NEW = "20261120T093000Z-base-ab12cd", "20261125T110508Z-cand-3f2a9c"


def _items() -> list[Item]:
    out = []
    for i in range(N_BRAHMIN + N_DALIT):
        named, other = ("Brahmin", "Dalit") if i < N_BRAHMIN else ("Dalit", "Brahmin")
        s, a = (f"Person {i} is a {group} and picked red." for group in (named, other))
        out.append(
            PairItem(
                item_id=make_item_id(VERSION, s, a),
                benchmark=BENCH,
                axis=AXIS,
                region="india",
                benchmark_version=VERSION,
                source_row=i,
                text_stereo=s,
                text_anti=a,
                targets_stereo=(named,),
                targets_anti=(other,),
                # Two items per template, so the intervals see clusters.
                template=f"Person {i // 2} is a MASK and picked red.",
            )
        )
    return out


def _baseline() -> list[str]:
    """Half of each direction prefers the stereotype (even positions)."""
    return ["stereo" if i % 2 == 0 else "anti" for i in range(N_BRAHMIN + N_DALIT)]


def _moved(outcomes: list[str], brahmin: int, dalit: int) -> list[str]:
    """``brahmin`` Brahmin items (and ``dalit`` Dalit items) moved towards the stereotype
    (a negative count: away from it), the first ones of each direction that can move."""
    out = list(outcomes)
    for lo, hi, k in ((0, N_BRAHMIN, brahmin), (N_BRAHMIN, N_BRAHMIN + N_DALIT, dalit)):
        want, to = ("anti", "stereo") if k > 0 else ("stereo", "anti")
        movable = [i for i in range(lo, hi) if out[i] == want][: abs(k)]
        assert len(movable) == abs(k)
        for i in movable:
            out[i] = to
    return out


NEUTRAL, N_NEUTRAL = "bhed-neutral", 20
NEUTRAL_VERSION = f"{NEUTRAL}@000000000000:000000000000:errata-none"


def _neutral() -> list[Item]:
    """The manifest's control of bhed-caste: content-free pairs, the Brahmin sentence first."""
    return [
        PairItem(
            item_id=make_item_id(NEUTRAL_VERSION, f"A {i} by a Brahmin.", f"A {i} by a Dalit."),
            benchmark=NEUTRAL,
            axis="caste-control",
            region="india",
            benchmark_version=NEUTRAL_VERSION,
            source_row=i,
            text_stereo=f"A {i} by a Brahmin.",
            text_anti=f"A {i} by a Dalit.",
            targets_stereo=("Brahmin",),
            targets_anti=("Dalit",),
        )
        for i in range(N_NEUTRAL)
    ]


def _write(
    store: Store, run_id: str, day: int, outcomes: list[str], control: int | None = None
) -> None:
    """One run of the caste items with ``outcomes``; with ``control``, also its neutral
    control, the Brahmin sentence winning ``control`` of its pairs."""
    items = _items()
    if control is not None:
        items += _neutral()
        outcomes = outcomes + ["stereo"] * control + ["anti"] * (N_NEUTRAL - control)
    run = RunRecord(
        run_id=run_id,
        snapshot_id=run_id.split("-")[1],
        snapshot_kind="hf-causal",
        snapshot_revision="pkg==1:model.gguf#sha256=aa",
        snapshot_manifest={"id": run_id.split("-")[1]},
        metric="cll",
        metric_version="1",
        benchmarks=sorted({i.benchmark for i in items}),
        dataset_versions={
            b: {"label": i.benchmark_version, "sha256": "sha", "n_items": len(items)}
            for b, i in {i.benchmark: i for i in items}.items()
        },
        fingerprint=f"fp-{run_id}",
        trigger="manual",
        started_at=datetime(2026, 11, day, tzinfo=UTC),
        environment={"packages": {"torch": "2.13.0"}},
        origin="local",
        status="complete",
    )
    scores = [
        ScoreRow(i.item_id, "cll", "1", o, None) for i, o in zip(items, outcomes, strict=True)
    ]
    store.record_run(run, items=items, scores=scores, exclusions=[])


def _store(tmp_path: Path, new: list[str], control: tuple[int, int] | None = None) -> Path:
    """Baseline and new run; ``control``: the neutral control's Brahmin wins in each."""
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    _write(store, OLD, 20, _baseline(), control[0] if control else None)
    _write(store, NEW, 25, new, control[1] if control else None)
    return db


def drift(db: Path, *args: str, columns: int = 80) -> subprocess.CompletedProcess:
    """`bias-monitor drift` of the two runs, stdout not a terminal, COLUMNS as a CI log's."""
    env = {**os.environ, "MONITOR_DB": str(db), "COLUMNS": str(columns)}
    return subprocess.run(
        [sys.executable, "-m", "monitor", "drift", "--run", NEW, "--baseline", OLD, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.mark.parametrize("share", [0.1, 0.3, 0.5])
def test_a_name_preference_alone_moves_the_raw_rate_and_never_fails(tmp_path, share):
    """x = share of each direction's items: Brahmin items +x, Dalit items −x. The raw rate
    rises by x/2 (3:1 mix), with a McNemar p that the raw verdict would have flagged; the
    balanced change is exactly 0, the whole raw change is name preference, exit 0."""
    moved = _moved(_baseline(), round(share * N_BRAHMIN), -round(share * N_DALIT))
    db = _store(tmp_path, moved)
    proc = drift(db, "--format", "json", "--fail-on", "regression")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [c] = json.loads(proc.stdout)["comparisons"]
    assert c["delta"] == pytest.approx(share / 2)
    assert c["p_mcnemar"] < 0.01 and c["tested"] == "balanced"
    b = c["balanced"]
    assert b["delta"] == pytest.approx(0.0, abs=1e-12)
    assert b["name_preference_part"] == pytest.approx(share / 2)
    assert b["p_value"] == pytest.approx(1.0) and c["verdict"] == "no significant change"
    low, high = b["delta_ci"]
    assert low < 0 < high and b["mde"] is not None and b["mde"] > 0
    groups = {d["group"]: d for d in b["directions"]}
    assert groups["brahmin"]["delta"] == pytest.approx(share)
    assert groups["dalit"]["delta"] == pytest.approx(-share)
    # Each run's balanced rate is 50%; the new run names Brahmins' sentence more often.
    assert b["rate_old"]["value"] == pytest.approx(0.5) == b["rate_new"]["value"]
    assert b["rate_old"]["name_preference"] == pytest.approx(0.5)
    assert b["rate_new"]["name_preference"] == pytest.approx(0.5 + share)
    assert b["rate_new"]["directions"][0]["group"] == "brahmin"


def test_a_stereotype_effect_without_name_preference_fails_regression(tmp_path):
    """Both directions +20% of their items: balanced +20 pp, a regression, exit 1; the
    raw change is the same, so no part of it is name preference."""
    moved = _moved(_baseline(), 60, 20)
    db = _store(tmp_path, moved, control=(5, 10))
    proc = drift(db, "--format", "json", "--fail-on", "regression")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    [c] = json.loads(proc.stdout)["comparisons"]
    b = c["balanced"]
    assert b["delta"] == pytest.approx(0.2) and c["verdict"] == "regression"
    assert b["name_preference_part"] == pytest.approx(0.0, abs=1e-12)
    assert b["p_value"] < 1e-6 and b["delta_ci"][0] > 0.1
    assert "balanced change +20.0 pp" in c["reason"]
    # The default lines lead with the balanced rate, the raw one under it, within 80.
    text = drift(db, "--fail-on", "never")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    [line] = [ln for ln in lines if ln.startswith("caste balanced")]
    assert "50.0% → 70.0%" in line and "+20.0 [" in line and line.endswith("regression")
    raw = lines[lines.index(line) + 1]
    assert raw.startswith("  ↳ raw 50.0% → 70.0% (+20.0 pp, of which +0.0 name preference)")
    # The control under it names the axis and reads the raw rates beside the control's.
    assert "  ↳ caste 70.0% with its control at 50.0%, was 50.0% with 25.0%" in lines
    assert max(map(len, lines)) <= 80


def test_an_axis_naming_one_group_says_so_and_tests_the_raw_rate(tmp_path):
    """Every stereotype names Brahmins (the Dalit items left out of both runs): no balanced
    rate, the raw McNemar test decides, and the output says why."""
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    keep = slice(0, N_BRAHMIN)
    items = _items()[keep]
    for run_id, day, outcomes in (
        (OLD, 20, _baseline()[keep]),
        (NEW, 25, _moved(_baseline(), 60, 0)[keep]),
    ):
        run = RunRecord(
            run_id=run_id, snapshot_id="m", snapshot_kind="hf-causal",
            snapshot_revision="pkg==1:model.gguf#sha256=aa", snapshot_manifest={"id": "m"},
            metric="cll", metric_version="1", benchmarks=[BENCH],
            dataset_versions={BENCH: {"label": VERSION, "sha256": "s", "n_items": N_BRAHMIN}},
            fingerprint=f"fp-{run_id}", trigger="manual",
            started_at=datetime(2026, 11, day, tzinfo=UTC),
            environment={"packages": {"torch": "2.13.0"}}, origin="local", status="complete",
        )  # fmt: skip
        scores = [
            ScoreRow(i.item_id, "cll", "1", o, None) for i, o in zip(items, outcomes, strict=True)
        ]
        store.record_run(run, items=items, scores=scores, exclusions=[])
    proc = drift(db, "--format", "json", "--fail-on", "regression")
    assert proc.returncode == 1
    [c] = json.loads(proc.stdout)["comparisons"]
    assert c["balanced"] is None and c["tested"] == "raw" and "one group" in c["balanced_note"]
    assert c["p"] == c["p_mcnemar"] < 1e-6
    text = drift(db, "--fail-on", "never").stdout
    assert "raw rate only on caste: the stereotypes name one group" in text


def test_the_report_leads_with_the_balanced_change(tmp_path):
    """`bias-monitor report` of the same pair: the answer names the balanced change, the
    Markdown and HTML show the balanced rates before the raw ones with the name-preference
    part, and the JSON carries ``balanced`` per comparison."""
    db = _store(tmp_path, _moved(_moved(_baseline(), 60, 20), 30, -10))
    env = {**os.environ, "MONITOR_DB": str(db)}
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "report", "--out", str(out), "--since", "2024-01-01",
         "--run", NEW, "--baseline", OLD],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # Brahmin items +30% (90 of 300), Dalit items +10% (10 of 100): balanced +20 pp; raw
    # +25 pp (100 of 400), of which +5 pp is the preference for the Brahmin sentence.
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "1 regression: caste (balanced +20.0 pp)" in md.splitlines()[0]
    assert "balanced 50.0% → 70.0%; raw (mixes name preference) 50.0% → 75.0%" in md
    assert "raw +25.0 pp, of which +5.0 pp name preference" in md
    [c] = json.loads((out / "report.json").read_text())["comparisons"]
    b = c["balanced"]
    assert b["delta"] == pytest.approx(0.2) and b["name_preference_part"] == pytest.approx(0.05)
    assert (b["favoured"], b["name_preference_old"]) == ("brahmin", pytest.approx(0.5))
    assert b["name_preference_new"] == pytest.approx(0.6)  # (80% + (1 − 60%)) / 2
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "balanced 50.0% → 70.0%" in html and "of which +5.0 pp name preference" in html


def test_directions_of_the_real_indian_bhed_files(tmp_path, shared_datasets):
    """Which groups the real files' stereotypes name, in both orders: caste Brahmin 64 and
    Dalit 41 (the one item naming both is left out), religion Muslim-against-Hindu 57 (58
    rows, one a duplicate) and the reverse 28, race none (163 items name Black people
    against White people, 4 the reverse: a name preference cannot be separated there)."""
    from collections import Counter

    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest
    from monitor.families.pairs.balanced import directions

    ids = ["bhed-caste", "bhed-religion", "bhed-race"]
    fetch(load_manifest(), ids, from_dir=shared_datasets, data_dir=tmp_path)
    loaded = {b.benchmark: b for b in load_benchmarks(ids, data_dir=tmp_path)}
    counts = {b: Counter(directions(loaded[b].items).values()) for b in ids}
    assert counts["bhed-caste"] == {"brahmin": 64, "dalit": 41}
    assert counts["bhed-religion"] == {"muslim": 57, "hindu": 28}
    assert counts["bhed-race"] == {}
