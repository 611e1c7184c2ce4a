"""Every provenance field that differs between two runs, sorted into what kind of change it is.

A score change means different things depending on what else changed: new weights
(model change), a different scorer, prompt or dataset (measurement change), or only
library versions and hardware (environment change). Nested JSON columns are flattened
to dotted paths (``environment.packages.torch``) so the reader sees exactly which fact
moved, and every differing field is listed, classified or not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Category = Literal["model", "measurement", "environment", "run", "other"]

JSON_COLUMNS = ("snapshot_manifest", "dataset_versions", "environment")

# Exact flattened paths first, then prefixes, then the last path segment; first match
# wins. Inside the manifest everything but cosmetic fields identifies the weights.
_EXACT: dict[str, Category] = {
    "snapshot_id": "model",
    "snapshot_kind": "model",
    "snapshot_revision": "model",
    "metric": "measurement",
    "metric_version": "measurement",
    "benchmarks": "measurement",
    "seed": "measurement",
    "device": "environment",
    # The number format is chosen for the run (--dtype) and changes what is computed:
    # a measurement change, never "environment drift" of a pinned model.
    "dtype": "measurement",
    "batch_size": "environment",
    "git_commit": "environment",
    "monitor_version": "environment",
    "snapshot_manifest.max_length": "measurement",
    "snapshot_manifest.display_name": "run",
    "snapshot_manifest.notes": "run",
    "snapshot_manifest.licence": "run",
    "snapshot_manifest.default": "run",
    "snapshot_manifest.nightly": "run",  # which workflow scores it, not what is scored
}
_PREFIXES: tuple[tuple[str, Category], ...] = (
    ("snapshot_manifest.source.install_hint", "run"),
    ("snapshot_manifest.", "model"),
    ("dataset_versions.", "measurement"),
    ("environment.import.", "run"),
    ("environment.packages.", "environment"),
    ("environment.ci.", "run"),
    # The files a local-dir digest covers: the digest (the revision) already names them.
    ("environment.weights.", "run"),
    # What the run read off its tokenizer for drift's metric validity: follows from the
    # weights (a change there already reads as a model change), and absent before it
    # was recorded, which is no change of anything.
    ("environment.tokenizer.", "run"),
)
_LAST_SEGMENT: dict[str, Category] = {
    # What the API says it served: the model itself.
    "system_fingerprint": "model",
    "model_requested": "model",
    "reported_model": "model",
    "model": "model",
    # How the question was asked and read.
    "prompt_template": "measurement",
    "option_order": "measurement",
    "option_order_policy": "measurement",
    "option_tokens": "measurement",
    "errata": "measurement",
    "errata_version": "measurement",
    "sha256": "measurement",
    "temperature": "measurement",
    "top_logprobs": "measurement",
    "max_tokens": "measurement",
    "seed": "measurement",
    "endpoint": "measurement",
    "opinionated_rule": "measurement",
    # Where it ran.
    "torch": "environment",
    "transformers": "environment",
    "cuda_version": "environment",
    "cuda_available": "environment",
    "cudnn": "environment",
    "gpu_name": "environment",
    "device": "environment",
    "dtype": "measurement",
    "python": "environment",
    "platform": "environment",
    "machine": "environment",
    "num_threads": "environment",
    "cpu_count": "environment",
    "monitor_version": "environment",
    "git_commit": "environment",
    "image_digest": "environment",
}
_RUN_FIELDS = {
    "run_id",
    "started_at",
    "finished_at",
    "status",
    "trigger",
    "origin",
    "repeat_group",
    "repeat_index",
    "n_scored",
    "n_excluded",
    "notes",
    "fingerprint",
}


def classify(field: str) -> Category:
    """The kind of change a differing flattened field stands for."""
    if field in _RUN_FIELDS:
        return "run"
    if field in _EXACT:
        return _EXACT[field]
    for prefix, category in _PREFIXES:
        if field.startswith(prefix):
            return category
    return _LAST_SEGMENT.get(field.rsplit(".", 1)[-1], "other")


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths to leaf values; lists are leaves (compared whole, not element-wise)."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        if not value and prefix:
            out[prefix] = {}
        return out
    return {prefix: value}


def _parsed(run: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(run)
    for col in JSON_COLUMNS:
        if isinstance(out.get(col), str):
            out[col] = json.loads(out[col])
    return out


def _norm(v: Any) -> Any:
    """Compare lists/tuples alike and datetimes by value, never by type name."""
    if isinstance(v, tuple):
        return list(v)
    return v


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any
    new: Any
    category: Category


@dataclass(frozen=True)
class ProvenanceDiff:
    changes: tuple[FieldChange, ...]

    def by_category(self, category: Category) -> tuple[FieldChange, ...]:
        return tuple(c for c in self.changes if c.category == category)

    @property
    def model_changed(self) -> bool:
        return bool(self.by_category("model"))

    @property
    def measurement_changed(self) -> bool:
        return bool(self.by_category("measurement"))

    @property
    def environment_changed(self) -> bool:
        return bool(self.by_category("environment"))

    def attribution(self, *, pinned_local: bool) -> str:
        """What a score change between these runs can be put down to.

        For a pinned local snapshot (same weights by construction) a change with only
        environment differences is "environment drift": the numbers moved although
        neither the model nor the measurement did.
        """
        kinds = [
            name
            for name, changed in (
                ("model change", self.model_changed),
                ("measurement change", self.measurement_changed),
                ("environment change", self.environment_changed),
            )
            if changed
        ]
        if kinds == ["environment change"] and pinned_local:
            return "environment drift"
        if not kinds:
            return "no provenance change"
        return " + ".join(kinds)


def diff_runs(old: Mapping[str, Any], new: Mapping[str, Any]) -> ProvenanceDiff:
    """Every field that differs between two ``runs`` rows (JSON columns as str or parsed).

    A field present in only one run is a change too (old or new is None).
    """
    a, b = flatten(_parsed(old)), flatten(_parsed(new))
    changes = [
        FieldChange(key, a.get(key), b.get(key), classify(key))
        for key in sorted(set(a) | set(b))
        if _norm(a.get(key)) != _norm(b.get(key))
    ]
    return ProvenanceDiff(tuple(changes))
