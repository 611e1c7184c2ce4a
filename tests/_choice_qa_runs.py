"""Stored choice-QA runs for the drift, show and report tests: real BharatBBQ questions
(read from the shared dataset folder), two runs whose answers differ in a known way,
written through ``RunLifecycle`` like any import.

The answers are chosen, not scored: the tests check that drift finds exactly the change
that was put in (and nothing where nothing was), which a model's answers could not pin.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from monitor.benchmarks.fetch import fetch
from monitor.benchmarks.items import Item
from monitor.benchmarks.load import load_benchmarks
from monitor.benchmarks.manifest import load_manifest
from monitor.jobs.lifecycle import RunLifecycle
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store

METRIC = "mc-imported"
ROLES = ("target", "non-target", "unknown")


def caste_items(data_dir: Path, size: str = "default") -> list[Item]:
    """BharatBBQ's Caste questions as the family's loader reads them (``size`` sample of
    whole templates), fetched from the shared mirror into ``data_dir``."""
    ids = ["bharatbbq-caste"]
    fetch(load_manifest(), ids, data_dir=data_dir)
    (bench,) = load_benchmarks(ids, data_dir=data_dir, options={"size": size})
    return list(bench.items)


def role_of(item: Item, choice: int) -> str:
    p = item.payload
    if choice == p["unknown"]:
        return "unknown"
    return "target" if choice == p["target"] else "non-target"


def baseline_answers(items: list[Item]) -> dict[str, int]:
    """A deterministic answer per item: the correct one on most items, some errors both
    ways, so every role occurs in both contexts."""
    out = {}
    for k, it in enumerate(items):
        p = it.payload
        others = [i for i in range(3) if i != p["label"]]
        out[it.item_id] = p["label"] if k % 5 else others[k % 2]
    return out


def move_ambiguous(items: list[Item], answers: dict[str, int], n: int) -> tuple[dict, list]:
    """``answers`` with ``n`` ambiguous negative questions, one per template, moved from
    'unknown' to the stereotyped group (the biased answer); the moved ids."""
    moved, out, seen = [], dict(answers), set()
    for it in items:
        p = it.payload
        if len(moved) == n:
            break
        if (
            p["context_condition"] == "ambig"
            and p["polarity"] == "neg"
            and answers[it.item_id] == p["unknown"]
            and p["template"] not in seen
        ):
            out[it.item_id] = p["target"]
            moved.append(it.item_id)
            seen.add(p["template"])
    assert len(moved) == n, f"only {len(moved)} questions to move"
    return out, moved


def move_disambiguated_to_unknown(
    items: list[Item], answers: dict[str, int], n: int
) -> tuple[dict, list]:
    """``answers`` with ``n`` disambiguated questions, one per template, whose correct
    answer is the biased one (the stereotyped group on a negative question, the other
    group on a non-negative one) and was given, moved to 'unknown': accuracy falls and
    s_DIS (which leaves 'unknown' answers out) moves away from the stereotype."""
    moved, out, seen = [], dict(answers), set()
    for it in items:
        p = it.payload
        if len(moved) == n:
            break
        biased_is_correct = p["target"] is not None and (p["label"] == p["target"]) == (
            p["polarity"] == "neg"
        )
        if (
            p["context_condition"] == "disambig"
            and biased_is_correct
            and answers[it.item_id] == p["label"]
            and p["template"] not in seen
        ):
            out[it.item_id] = p["unknown"]
            moved.append(it.item_id)
            seen.add(p["template"])
    assert len(moved) == n, f"only {len(moved)} questions to move"
    return out, moved


@dataclass(frozen=True)
class StoredPair:
    baseline: str
    new: str


def write_run(
    store: Store,
    items: list[Item],
    answers: dict[str, int],
    *,
    snapshot: str,
    day: int,
    environment: dict | None = None,
) -> str:
    """Store ``answers`` as a complete imported run of ``snapshot`` started on March
    ``day``, 2025; ``environment``: the run's recorded environment (default: this file)."""
    started = datetime(2025, 3, day, 12, tzinfo=UTC)
    digest = hashlib.sha256(json.dumps([snapshot, day, sorted(answers.items())]).encode())
    run_id = f"import-{snapshot}-{started:%Y%m%d}-{digest.hexdigest()[:8]}"
    version = items[0].benchmark_version
    record = RunRecord(
        run_id=run_id,
        snapshot_id=snapshot,
        snapshot_kind="imported",
        snapshot_revision=snapshot,
        snapshot_manifest={"id": snapshot, "source": {"type": "imported"}},
        metric=METRIC,
        metric_version=_metric_version(),
        benchmarks=["bharatbbq-caste"],
        dataset_versions={"bharatbbq-caste": {"benchmark_version": version}},
        fingerprint=digest.hexdigest(),
        trigger="import",
        started_at=started,
        origin="imported",
        environment=environment or {"import": {"test": "tests/_choice_qa_runs.py"}},
        git_commit="tests/_choice_qa_runs.py",
        device="unknown (imported)",
        dtype="unknown",
    )
    scores = [
        ScoreRow(
            item_id=it.item_id,
            metric=METRIC,
            metric_version=record.metric_version,
            outcome=role_of(it, answers[it.item_id]),  # type: ignore[arg-type]
            delta=None,
            details={
                "choice": answers[it.item_id],
                "correct": answers[it.item_id] == it.payload["label"],
            },
        )
        for it in items
    ]
    RunLifecycle(store).record_import(record, items=items, scores=scores, exclusions=[])
    return run_id


def _metric_version() -> str:
    from monitor.metrics.registry import get_metric

    return get_metric(METRIC).version
