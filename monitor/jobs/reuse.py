"""Baselines scored once: a pull request's run reuses the snapshot's latest complete run
when the default branch wrote it and it is the same measurement (docs/pr-check.md,
"Baselines scored once").

The candidate is the run ``drift --baseline-snapshot`` compares with: the snapshot's
newest complete run of the metric (``store.reuse``). It is reused only when

* it was written by the nightly or the default branch (``environment.ci.origin``,
  ``provenance.TRUSTED_ORIGINS``): a pull request's own run, or a local one, never serves;
* its reuse key equals the one the new run would record: the resume fingerprint (the
  snapshot's digest or revision, the metric and its version, every benchmark version
  scored, controls included, the seed, the panel, a sample's size, the requested dtype
  and device, an API's endpoint and prompts) and what the loaded backend resolved: the
  device kind, the GPU, the dtype, and the kernel options (``environment.scoring``:
  linear kernel, attention, prefix sharing, batch shape).

So the model is loaded (the kernel options are the backend's), but nothing is scored
and no run is written. Anything else scores, and the reason is said.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from monitor.jobs.options import EventSink, RunOutcome
from monitor.provenance import TRUSTED_ORIGINS
from monitor.records import RunRecord
from monitor.store.db import Store

# The reuse key's parts, in the order a difference is named.
_PARTS = (
    "snapshot revision",
    "metric version",
    "benchmark versions",
    "seed",
    "fingerprint",
    "device",
    "GPU",
    "dtype",
    "kernel options",
)


def _plain(value: Any) -> Any:
    """``value`` as it reads back from the store's JSON (tuples become lists)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def reuse_key(run: Mapping[str, Any]) -> dict[str, Any]:
    """What makes two runs the same measurement for reuse, from a run's stored row or a
    new run's record (``dataclasses``' fields by the same names)."""
    env = run.get("environment") or {}
    versions = run.get("dataset_versions") or {}
    return _plain(
        {
            "snapshot revision": run.get("snapshot_revision"),
            "metric version": [run.get("metric"), run.get("metric_version")],
            "benchmark versions": {
                b: [v.get("label"), v.get("sampling")] if isinstance(v, Mapping) else v
                for b, v in versions.items()
            },
            "seed": run.get("seed"),
            "fingerprint": run.get("fingerprint"),
            "device": (run.get("device") or "").split(":")[0],
            "GPU": env.get("gpu_name"),
            "dtype": run.get("dtype"),
            "kernel options": env.get("scoring"),
        }
    )


def run_origin(run: Mapping[str, Any]) -> str:
    """Where a stored run was written; a run without ``ci.origin`` was written locally
    (or before origins were recorded)."""
    ci = (run.get("environment") or {}).get("ci")
    origin = ci.get("origin") if isinstance(ci, Mapping) else None
    return origin if isinstance(origin, str) else "local"


def _when(started: Any) -> str:
    if isinstance(started, datetime):
        return f"{started.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    return str(started)


def find_reusable(store: Store, record: RunRecord, on_event: EventSink) -> RunOutcome | None:
    """The outcome of reusing the latest complete run of ``record``'s snapshot and metric,
    or ``None`` (then the caller scores), having said why in either case."""
    snapshot = record.snapshot_id
    with store.read() as view:
        found = view.latest_complete_run(snapshot, record.metric)
        measures = view.measures(found["run_id"]) if found is not None else []
    if found is None:
        on_event(f"scored {snapshot}: no complete {record.metric} run to reuse")
        return None
    run_id, origin = found["run_id"], run_origin(found)
    if origin not in TRUSTED_ORIGINS:
        on_event(
            f"scored {snapshot}: its latest complete run {run_id} was written by "
            f"{origin}; only {' or '.join(TRUSTED_ORIGINS)} runs are reused"
        )
        return None
    theirs, ours = reuse_key(found), reuse_key(vars(record))
    differ = [p for p in _PARTS if theirs[p] != ours[p]]
    if differ:
        on_event(
            f"scored {snapshot}: its latest complete run {run_id} ({origin}) differs in "
            f"{', '.join(differ)}"
        )
        return None
    reason = f"reused run {run_id} (from {origin}, {_when(found['started_at'])})"
    on_event(f"{snapshot}: {reason}: the same measurement; nothing scored (--no-reuse scores)")
    return RunOutcome(
        snapshot_id=snapshot,
        run_id=run_id,
        status="reused",
        reason=reason,
        n_scored=found.get("n_scored") or 0,
        n_excluded=found.get("n_excluded") or 0,
        measures=list(measures),
        metric=found["metric"],
    )
