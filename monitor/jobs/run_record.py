"""The provenance record of a new run and the fingerprint that says "the same measurement".

Shared by every driver, so a local run, an API run and a vLLM run record the same fields
the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from monitor import __version__
from monitor.backends.api_client import public_url, resolve_base_url
from monitor.benchmarks.items import LoadedBenchmark
from monitor.jobs.options import RunOptions
from monitor.metrics.panel import PANEL_METRICS, panel_of
from monitor.provenance import detect_trigger, git_commit
from monitor.records import RunRecord
from monitor.snapshots.model import ApiSource, Snapshot


def new_run_id(snapshot_id: str, started: datetime) -> str:
    """Sortable and readable: time first, then the snapshot, then a short random suffix."""
    return f"{started:%Y%m%dT%H%M%SZ}-{snapshot_id}-{uuid.uuid4().hex[:6]}"


def new_repeat_group(repeat: int) -> str | None:
    """A fresh repeat-group id when one command scores a snapshot several times."""
    return uuid.uuid4().hex[:12] if repeat > 1 else None


def fingerprint(
    snapshot: Snapshot,
    metric: str,
    metric_version: str,
    benches: Iterable[LoadedBenchmark],
    options: RunOptions,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """Identity of 'the same measurement': a killed run with this fingerprint is resumed.

    ``extra`` adds what a driver's measurement depends on beyond the snapshot, metric,
    benchmark versions, seed, dtype and device (an API run's prompts and parameters).
    """
    payload: dict[str, Any] = {
        "snapshot": snapshot.revision_label,
        "kind": snapshot.kind,
        "metric": metric,
        "metric_version": metric_version,
        "benchmarks": sorted(b.version.label for b in benches),
        "seed": options.seed,
        "dtype": options.dtype,
        "device": options.device,
    }
    if isinstance(snapshot.source, ApiSource):
        # Another server is another measurement: a run is not resumed across endpoints.
        # Without credentials (``public_url``), as the run's manifest records it.
        payload["endpoint"] = public_url(
            resolve_base_url(snapshot.source) or os.environ.get("OPENAI_BASE_URL")
        )
    if not options.panel:  # rows without the panel are not resumed into a run with it
        payload["panel"] = False
    elif metric in PANEL_METRICS and panel_of(metric, options.panel_metrics) != PANEL_METRICS:
        # A panel without cll-reference (the default since it became opt-in) is another
        # measurement than the full one; the full panel keeps the fingerprint every
        # default run had before, so those killed runs still resume with --metrics
        # cll-reference.
        payload["panel"] = list(panel_of(metric, options.panel_metrics))
    # A sampled benchmark (a family loader's ``--size``): a killed mini run is not resumed
    # by a default-size run of the same file. Absent for unsampled benchmarks, so their
    # fingerprints stay what earlier versions stored.
    sizes = {
        b.version.label: [b.sampling["size"], b.sampling.get("seed")]
        for b in benches
        if "size" in b.sampling
    }
    if sizes:
        payload["sizes"] = sizes
    base = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]
    if not extra:
        return base
    more = {"base": base, **extra}
    return hashlib.sha256(json.dumps(more, sort_keys=True).encode()).hexdigest()[:24]


def panel_provenance(metric: str, options: RunOptions) -> dict[str, Any]:
    """``panel_metrics``: which metrics a causal log-prob run scored in its one pass, for
    the run's ``environment.scoring`` (absent without a panel or for other metrics)."""
    if not options.panel or metric not in PANEL_METRICS:
        return {}
    return {"panel_metrics": list(panel_of(metric, options.panel_metrics))}


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
            # What decided a sampled benchmark's items (seed, partners, ...), its language.
            **({"sampling": b.sampling, "n_not_sampled": len(b.not_sampled)} if b.sampling else {}),
            **({"language": b.language} if b.language != "en" else {}),
        }
        for b in benches
    }


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
    origin: str,
    notes: str | None = None,
) -> RunRecord:
    """The provenance record of a new run: a fresh run id, the snapshot, the dataset
    versions, the trigger, the code version, the start time."""
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
        environment=with_origin(environment, options.origin),
        origin=origin,
        notes=notes,
    )


def with_origin(environment: dict[str, Any], origin: str) -> dict[str, Any]:
    """``environment`` with ``ci.origin``, where the run was written (nightly,
    default-branch, pull-request, branch): beside the GitHub facts it was read from, so
    the pull-request check can trust the first two (``monitor.jobs.reuse``). A local run
    records none: its absence means local, and a local run's record stays as before."""
    if origin == "local":
        return environment
    ci = environment.get("ci")
    return {**environment, "ci": {**(ci if isinstance(ci, dict) else {}), "origin": origin}}
