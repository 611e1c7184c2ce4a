"""Plain records that flow from scoring into the store.

They sit outside both rooms so that scoring never imports the store and the store never
imports scoring: data flows one way through these shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

# The ids the tool makes (``new_run_id``, the importers' ids) and the snapshot ids of
# ``snapshots/*.toml``: names that are safe as a folder (an export is ``<out>/<run_id>/``),
# in a URL and in a report. Anything read from outside (a shard being merged) must match.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
SNAPSHOT_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,199}$")

# Pair families decide stereo/anti/tie; the choice-QA family (BBQ, BharatBBQ) stores which
# option the model picked by its role: the stereotyped group (``target``), the other group
# (``non-target``) or the unknown option (``unknown``). ``refusal``/``ambiguous``/``other``
# are shared: an API answer that is no option, or that could not be read.
Outcome = Literal[
    "stereo", "anti", "tie", "refusal", "ambiguous", "other", "target", "non-target", "unknown"
]
RunStatus = Literal["running", "complete", "failed", "quarantined", "interrupted"]


@dataclass(frozen=True)
class ScoreRow:
    """One item's score under one metric in one run.

    ``delta`` > 0 means the stereotypical sentence was preferred. Component numbers are
    kept so that any printed rate can be traced back to per-item log-probabilities.
    """

    item_id: str
    metric: str
    metric_version: str
    outcome: Outcome
    delta: float | None
    score_stereo: float | None = None
    score_anti: float | None = None
    lp_stereo: float | None = None  # sentence log-prob (nats)
    lp_anti: float | None = None
    prior_stereo: float | None = None  # target-word prior log-prob (CLL only)
    prior_anti: float | None = None
    prob_stereo: float | None = None  # probability mass (forced-choice API metrics)
    prob_anti: float | None = None
    n_tokens_stereo: int | None = None
    n_tokens_anti: int | None = None
    details: dict[str, Any] = field(default_factory=dict)


# A score row's float columns: the store flags the non-finite ones as it reads them, and
# the results suite holds them to finite numbers; one list so the two cannot disagree.
SCORE_FLOATS = (
    "delta",
    "score_stereo",
    "score_anti",
    "lp_stereo",
    "lp_anti",
    "prior_stereo",
    "prior_anti",
    "prob_stereo",
    "prob_anti",
)


MeasureKind = Literal["rate", "effect_size", "ranking_score"]


@dataclass(frozen=True)
class Measure:
    """One number a run reports about one subject of one benchmark, with its interval.

    The *subject* (``axis``) is what the number is about: a bias axis of a pair benchmark
    (``caste``), an association test (``weat-1``), an identity (``Brahmin``). ``kind`` says
    what sort of number it is, because the quality gate, drift and the reports treat them
    differently:

    * ``rate``: ``k`` of ``n`` items, ``value = k / n``, a Wilson interval (pair outcomes);
    * ``effect_size``: e.g. WEAT's d, with a one-sided ``p_value`` and a bootstrap interval
      (``k``/``n`` unused, set sizes in ``details``);
    * ``ranking_score``: e.g. a Bradley–Terry strength with a bootstrap interval.

    ``method`` names how the interval (and p) were computed and ``confidence`` its level,
    so a 90% interval is never shown as a 95% one. ``measure`` names what is measured,
    e.g. ``bias_rate`` (stereo wins among decided pairs), ``tie_rate``, ``coverage``.
    """

    benchmark: str
    axis: str
    measure: str
    k: int | None
    n: int | None
    value: float | None
    ci_low: float | None
    ci_high: float | None
    definition: str
    kind: MeasureKind = "rate"
    p_value: float | None = None
    method: str = "wilson"
    confidence: float = 0.95
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def subject(self) -> str:
        """What the number is about (the column keeps its historical name ``axis``)."""
        return self.axis


AxisMeasure = Measure  # the name from when every measure was a pair-axis rate


@dataclass
class RunRecord:
    """Everything needed to reproduce and trace a run; written when the run starts."""

    run_id: str
    snapshot_id: str
    snapshot_kind: str
    snapshot_revision: str
    snapshot_manifest: dict[str, Any]
    metric: str
    metric_version: str
    benchmarks: list[str]
    dataset_versions: dict[str, dict[str, Any]]
    fingerprint: str
    trigger: str
    started_at: datetime
    seed: int = 0
    repeat_group: str | None = None
    repeat_index: int = 0
    git_commit: str | None = None
    monitor_version: str | None = None
    device: str | None = None
    dtype: str | None = None
    batch_size: int | None = None
    environment: dict[str, Any] = field(default_factory=dict)
    origin: str = "local"  # "local" | "imported" | "api"
    status: RunStatus = "running"
    notes: str | None = None
