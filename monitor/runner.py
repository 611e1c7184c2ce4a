"""The scoring job: benchmarks + snapshot → scores → quality gate → store.

This is the one place that wires the rooms together in the order of DESIGN.md's data
flow. It holds no metric or storage logic of its own; it decides order, resumption and
what to report back to the CLI.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from monitor import __version__
from monitor.benchmarks.items import Item, LoadedBenchmark
from monitor.errors import MonitorError, SnapshotUnavailable
from monitor.provenance import detect_trigger, environment, git_commit
from monitor.records import AxisMeasure, RunRecord
from monitor.snapshots.model import Snapshot

EventSink = Callable[[str], None]


@dataclass
class RunOptions:
    """What the user asked for; validated by the CLI before a run starts."""

    batch_size: int | None = None
    device: str = "auto"
    dtype: str = "auto"
    repeat: int = 1
    metric: str | None = None
    seed: int = 0
    trigger: str | None = None
    resume: bool = True
    errata: str = "current"


@dataclass
class RunOutcome:
    """One snapshot × repeat: either a stored run or a skip with its reason."""

    snapshot_id: str
    run_id: str | None
    status: str  # complete | quarantined | failed | skipped
    reason: str | None = None
    resumed_from: int = 0  # items already stored when a killed run was resumed
    n_scored: int = 0
    n_excluded: int = 0
    measures: list[AxisMeasure] = field(default_factory=list)
    quality_failures: list[str] = field(default_factory=list)


def new_run_id(snapshot_id: str, started: datetime) -> str:
    """Sortable and readable: time first, then the snapshot, then a short random suffix."""
    return f"{started:%Y%m%dT%H%M%SZ}-{snapshot_id}-{uuid.uuid4().hex[:6]}"


def fingerprint(
    snapshot: Snapshot,
    metric: str,
    metric_version: str,
    benches: Iterable[LoadedBenchmark],
    options: RunOptions,
) -> str:
    """Identity of 'the same measurement': a killed run with this fingerprint is resumed."""
    payload = {
        "snapshot": snapshot.revision_label,
        "kind": snapshot.kind,
        "metric": metric,
        "metric_version": metric_version,
        "benchmarks": sorted(b.version.label for b in benches),
        "seed": options.seed,
        "dtype": options.dtype,
        "device": options.device,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


def new_run_record(
    snapshot: Snapshot,
    benches: list[LoadedBenchmark],
    options: RunOptions,
    *,
    metric: str,
    metric_version: str,
    fingerprint: str,
    repeat_group: str | None,
    repeat_index: int,
    device: str,
    dtype: str,
    batch_size: int | None,
    environment: dict[str, Any],
    origin: str = "local",
    notes: str | None = None,
) -> RunRecord:
    """The provenance record of a new run, shared by local and API runs: a fresh run id,
    the snapshot, the dataset versions, the trigger, the code version, the start time."""
    started = datetime.now(UTC)
    return RunRecord(
        run_id=new_run_id(snapshot.id, started),
        snapshot_id=snapshot.id,
        snapshot_kind=snapshot.kind,
        snapshot_revision=snapshot.revision_label,
        snapshot_manifest=snapshot.model_dump(mode="json"),
        metric=metric,
        metric_version=metric_version,
        benchmarks=[b.benchmark for b in benches],
        dataset_versions=dataset_versions(benches),
        fingerprint=fingerprint,
        trigger=options.trigger or detect_trigger(),
        started_at=started,
        seed=options.seed,
        repeat_group=repeat_group,
        repeat_index=repeat_index,
        git_commit=git_commit(),
        monitor_version=__version__,
        device=device,
        dtype=dtype,
        batch_size=batch_size,
        environment=environment,
        origin=origin,
        notes=notes,
    )


def dataset_versions(benches: Iterable[LoadedBenchmark]) -> dict[str, dict[str, Any]]:
    return {
        b.benchmark: {
            "source_commit": b.version.source_commit,
            "sha256": b.version.sha256,
            "errata_version": b.version.errata_version,
            "label": b.version.label,
            "source_rows": b.source_rows,
            "n_items": len(b.items),
            "n_excluded": len(b.exclusions),
        }
        for b in benches
    }


def run_snapshot(
    store,
    snapshot: Snapshot,
    benches: list[LoadedBenchmark],
    options: RunOptions,
    *,
    on_event: EventSink = lambda _msg: None,
    progress_factory: Callable[[str, int], Callable[[int], None]] | None = None,
) -> list[RunOutcome]:
    """Score one snapshot ``options.repeat`` times; every repeat is its own run.

    Weights that cannot be had here turn into a 'skipped' outcome, never a silent failure.
    """
    if snapshot.kind in ("openai-chat", "openai-responses"):
        from monitor.runner_api import run_api_snapshot  # forced choice / sampling over HTTP

        return run_api_snapshot(
            store, snapshot, benches, options, on_event=on_event, progress_factory=progress_factory
        )
    from monitor.backends.loading import load_backend
    from monitor.scoring import metric_info, score_items

    metric = options.metric or default_metric(snapshot.kind)
    metric_name, metric_version, _kind = metric_info(metric)
    try:
        backend = load_backend(
            snapshot, device=options.device, dtype=options.dtype, on_event=on_event
        )
    except SnapshotUnavailable as exc:
        return [RunOutcome(snapshot.id, None, "skipped", reason=str(exc))]

    items: list[Item] = [it for b in benches for it in b.items]
    item_axis = {it.item_id: (it.benchmark, it.axis) for it in items}
    fp = fingerprint(snapshot, metric_name, metric_version, benches, options)
    outcomes: list[RunOutcome] = []
    repeat_group = uuid.uuid4().hex[:12] if options.repeat > 1 else None

    for rep in range(options.repeat):
        run_id = store.find_resumable(fp) if options.resume else None
        already: set[str] = set()
        if run_id is not None:
            already = store.scored_item_ids(run_id)
            store.set_status(run_id, "running", f"resumed with {len(already)} items already stored")
            on_event(f"resuming run {run_id}: {len(already)} of {len(items)} items already stored")
        else:
            record = new_run_record(
                snapshot,
                benches,
                options,
                metric=metric_name,
                metric_version=metric_version,
                fingerprint=fp,
                repeat_group=repeat_group,
                repeat_index=rep,
                device=backend.device,
                dtype=backend.dtype,
                batch_size=options.batch_size,
                environment=environment(backend.device),
            )
            run_id = record.run_id
            store.begin_run(record)
            store.upsert_items(items)
            for b in benches:
                store.add_exclusions(run_id, b.exclusions)

        todo = len(items) - len(already & set(item_axis))
        advance = progress_factory(f"{snapshot.id} #{rep + 1}", todo) if progress_factory else None
        try:
            score_items(
                backend,
                items,
                metric_name,
                batch_size=options.batch_size,
                progress=advance,
                already_scored=already,
                on_batch=lambda rows, rid=run_id: store.add_scores(rid, rows),
            )
        except KeyboardInterrupt:
            store.set_status(run_id, "interrupted", "interrupted by the user; rerun to resume")
            raise
        except Exception as exc:  # recorded, then surfaced: the run must not stay 'running'
            store.set_status(run_id, "failed", f"{type(exc).__name__}: {exc}")
            if isinstance(exc, MonitorError):
                outcomes.append(RunOutcome(snapshot.id, run_id, "failed", reason=str(exc)))
                continue
            raise
        outcomes.append(
            finalise_run(
                store,
                run_id,
                items,
                item_axis,
                sum(len(b.exclusions) for b in benches),
                snapshot.id,
                resumed_from=len(already),
            )
        )
    return outcomes


def finalise_run(
    store,
    run_id: str,
    items: list[Item],
    item_axis: dict[str, tuple[str, str]],
    n_excluded: int,
    snapshot_id: str,
    *,
    resumed_from: int = 0,
    measures_fn: Callable[[list, dict[str, tuple[str, str]]], list[AxisMeasure]] | None = None,
) -> RunOutcome:
    """Per-axis rates from what is *stored* (not what is in memory), then the quality gate.

    ``measures_fn(rows, item_axis)`` replaces the default bias/tie rates for metrics that
    report more (API forced choice: coverage, refusal rate, ...).
    """
    from monitor.metrics.intervals import axis_measures

    rows = store.score_rows(run_id)
    measures = (measures_fn or axis_measures)(rows, item_axis)
    store.finish_run(run_id, "running", measures, n_scored=len(rows), n_excluded=n_excluded)
    status, failures = quality_gate(store, run_id, {it.item_id for it in items})
    store.set_status(run_id, status, "; ".join(failures[:5]) if failures else None, finished=True)
    return RunOutcome(
        snapshot_id,
        run_id,
        status,
        resumed_from=resumed_from,
        n_scored=len(rows),
        n_excluded=n_excluded,
        measures=measures,
        quality_failures=failures,
    )


def quality_gate(store, run_id: str, expected_item_ids: set[str]) -> tuple[str, list[str]]:
    """Run the results suite; a failing run is kept but quarantined, never used as a baseline."""
    from monitor.quality.results_suite import validate_run

    with store.connect() as con:
        result = validate_run(con, run_id, expected_item_ids=expected_item_ids)
    store.add_validation(run_id, result.suite, result.success, result.to_dict())
    if result.success:
        return "complete", []
    return "quarantined", [f.reason for f in result.failures]


def default_metric(kind: str) -> str:
    return {"hf-causal": "cll", "hf-mlm": "aul"}[kind]
