"""What "the same measurement configuration" means, computed from a run's stored provenance.

Runs of one snapshot whose configuration is identical form a repeat group, whether they
came from ``--repeat``, from separate nightly runs or from an import: their disagreements
are the measurement's own noise. The configuration is read from what every run already
stores (no schema change), in one place, so drift, the gate and the reports agree on it:

* the model: ``snapshot_kind`` and ``snapshot_revision`` (for API runs the dated model
  name requested; imports record the model the study's code requested);
* the API: the endpoint (Chat Completions, Responses, ...), when there is one;
* the prompt template, when the run records its text (imports do);
* the option-order policy;
* the parameters: for API runs temperature, top log-probs, token limit, seed and
  sampling settings; for local runs seed, dtype and device;
* the metric and its version, and the benchmark versions scored.

Runs the monitor scored through an API record their prompts by hash only, inside the
resume fingerprint (model, endpoint, metric, items, prompt templates and request
parameters), so for them that fingerprint is part of the key as well. Imported runs carry
a fingerprint of their source files (BBQ's and BharatBBQ's predictions: of the rows
read) instead, and local runs one of fields listed above, so theirs is not used.

Environment facts (library versions, the monitor's commit, CI ids) are deliberately not
part of the key: a run-to-run change they cause is part of what a group's noise shows,
and the provenance diff names them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# Keys of ``environment.api`` that describe how the question was asked. Everything else
# there (URLs, concurrency, probes, what the server reported) is not configuration.
_API_PARAMETERS = (
    "temperature",
    "top_logprobs",
    "max_tokens",
    "seed",
    "request_params",
    "method",
    "batch_api",
)
# Which configuration fields a reader sees named when they change (a "break").
FIELD_LABELS: dict[str, str] = {
    "model": "model",
    "kind": "model",
    "api": "API",
    "prompt": "prompt",
    "option_order": "option order",
    "parameters": "parameters",
    "metric": "metric",
    "benchmarks": "benchmark version",
    "scorer": "prompt/parameters (API run fingerprint)",
}


def _benchmarks(dataset_versions: Any) -> dict[str, Any]:
    """Benchmark → its version label(s), whichever shape the run recorded them in."""
    out: dict[str, Any] = {}
    if not isinstance(dataset_versions, Mapping):
        return out
    for bench, info in dataset_versions.items():
        if isinstance(info, Mapping):
            out[bench] = info.get("label") or info.get("benchmark_version")
        else:
            out[bench] = info
    return out


def measurement_configuration(run: Mapping[str, Any]) -> dict[str, Any]:
    """The measurement configuration of a ``runs`` row (JSON columns parsed).

    Fields absent for a kind of run are None, so two runs compare field by field.
    """
    env = run.get("environment") or {}
    env = env if isinstance(env, Mapping) else {}
    api = env.get("api") if isinstance(env.get("api"), Mapping) else None
    origin = run.get("origin")
    if api is not None:
        model = api.get("model_requested") or api.get("requested_model")
        parameters = {k: api.get(k) for k in _API_PARAMETERS if k in api}
        option_order = env.get("option_order") or api.get("option_order")
    else:
        model = None
        parameters = {
            "seed": run.get("seed"),
            "dtype": run.get("dtype"),
            "device": run.get("device"),
        }
        option_order = env.get("option_order")
    return {
        "kind": run.get("snapshot_kind"),
        "model": model or run.get("snapshot_revision"),
        "revision": run.get("snapshot_revision"),
        "api": api.get("endpoint") if api is not None else None,
        "prompt": env.get("prompt_template"),
        "option_order": option_order,
        "parameters": parameters,
        "metric": f"{run.get('metric')}@{run.get('metric_version')}",
        "benchmarks": _benchmarks(run.get("dataset_versions")),
        "scorer": run.get("fingerprint") if origin == "api" else None,
    }


def configuration_key(config: Mapping[str, Any]) -> str:
    """A short stable hash of a configuration (canonical JSON)."""
    text = json.dumps(config, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# Fields short enough to quote old → new in a sentence; the others (and any value longer
# than MAX_QUOTED characters) are named only.
_QUOTED = ("model", "api", "option_order", "metric")
MAX_QUOTED = 60


def describe_changes(
    old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[tuple[str, str | None, str | None]]:
    """(reader's label, old, new) for every configuration field that differs; old/new are
    None for fields too long to quote (a prompt, a parameter set)."""
    out: list[tuple[str, str | None, str | None]] = []
    seen: set[str] = set()
    for field, label in FIELD_LABELS.items():
        if field == "kind" or label in seen or old.get(field) == new.get(field):
            continue
        seen.add(label)
        a, b = _text(old.get(field)), _text(new.get(field))
        if field in _QUOTED and len(a) <= MAX_QUOTED and len(b) <= MAX_QUOTED:
            out.append((label, a, b))
        else:
            out.append((label, None, None))
    if "model" not in seen and old.get("revision") != new.get("revision"):
        out.insert(0, ("model", _text(old.get("revision")), _text(new.get("revision"))))
    return out


def _text(value: Any) -> str:
    return "none" if value is None else str(value)


def changed_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The reader's names of what differs between two configurations, in a fixed order,
    without repeats ("model", "API", "prompt", ...)."""
    out: list[str] = []
    for field, label in FIELD_LABELS.items():
        if old.get(field) != new.get(field) and label not in out:
            out.append(label)
    if old.get("revision") != new.get("revision") and "model" not in out:
        out.insert(0, "model")
    return out
