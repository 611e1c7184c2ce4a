"""Plain records that flow from scoring into the store.

They sit outside both rooms so that scoring never imports the store and the store never
imports scoring: data flows one way through these shapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from monitor.contract.detail import DetailColumn

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
# The outcomes that leave an item without a usable answer, in every family: a tie, a
# refusal, an answer that names no option or both. Every other outcome (stereo/anti, a
# choice question's picked role, an association term's NULL) is *decided*, which is what
# the quality gate's coverage counts (``monitor.quality.history``).
UNDECIDED_OUTCOMES: tuple[Outcome, ...] = ("tie", "refusal", "ambiguous", "other")
# What a stored item without a kind is: every item before schema 3 (which added ``kind``
# with this default) was a sentence pair.
LEGACY_KIND = "pair"
RunStatus = Literal["running", "complete", "failed", "quarantined", "interrupted"]


@dataclass(frozen=True)
class ScoreRow:
    """One item's score under one metric in one run, as every family has it.

    ``delta`` > 0 means the answer leaned towards the stereotype (a pair: the
    stereotypical sentence was preferred); ``details`` holds what the family's metric
    records beside it. A family whose rows carry more numbers subclasses this record in
    its own folder (a sentence pair's two log-probabilities) and declares the store
    columns that hold them, which say which of them must be finite
    (``DetailColumn.finite``).
    """

    item_id: str
    metric: str
    metric_version: str
    outcome: Outcome
    delta: float | None
    details: dict[str, Any] = field(default_factory=dict)


def family_record(kind: str | None, extends: Literal["items", "scores"]) -> type[Any] | None:
    """The record class the family of items of ``kind`` declared for its rows of
    ``extends`` (``DetailTable.record``: its subclass of the core record), or None
    when it declared none (its rows are the core ``Item``/``ScoreRow``). Read from the
    registry on each call (it is a short loop), so a test's registry is honoured."""
    from monitor.contract import registry

    for family in registry.families():
        if kind in family.item_kinds:
            return next(
                (t.record for t in family.detail_tables if t.extends == extends and t.record),
                None,
            )
    return None


def score_columns() -> tuple[DetailColumn, ...]:
    """Every registered family's declared score columns (``DetailTable`` extending
    ``scores``), in registry order: what the store carries beyond the core row."""
    from monitor.contract import registry

    return tuple(
        c
        for family in registry.families()
        for t in family.detail_tables
        if t.extends == "scores"
        for c in t.columns
    )


def score_floats() -> tuple[str, ...]:
    """A score's float columns that must be finite where present: the core ``delta`` and
    every column a family declares ``finite``. The store flags the non-finite ones as it
    reads them and the results suite holds them to finite numbers; one list so the two
    cannot disagree."""
    return ("delta", *(c.name for c in score_columns() if c.finite))


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


# "difference": a change that clears the test between two runs that differ by design (a
# FamilyComparison's ``contrast``, e.g. two languages): a finding, never a drift flag.
# "too few templates for a verdict": the test's smallest attainable p (a sign-flip over a
# handful of templates) is not below the false discovery rate, so nothing could be flagged.
TOO_FEW = "too few templates for a verdict"
VerdictWord = Literal[
    "regression",
    "improvement",
    "difference",
    "no significant change",
    "not comparable",
    "too few templates for a verdict",
]


@dataclass(frozen=True)
class ComparisonVerdict:
    """A comparison's verdict and its reason (the same labels as ``drift.verdicts``)."""

    label: VerdictWord
    reason: str

    @property
    def flagged(self) -> bool:
        return self.label in ("regression", "improvement")


@dataclass(frozen=True)
class PairedChange:
    """A paired test between two runs, as every comparison record carries it: ``delta``
    (new − old) with its interval ``ci_low``–``ci_high`` at ``confidence``, the test's
    ``p_value`` and ``p_adjusted``, its Benjamini–Hochberg value over every test of the
    drift session (None until drift adjusts it). Drift's generic record
    (``FamilyComparison``) and a family's own type (the association tests'
    ``EffectComparison``) both are one, so these six are declared once."""

    delta: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    p_value: float | None
    p_adjusted: float | None


@dataclass(frozen=True)
class ComparisonSubject:
    """What a ``FamilyComparison`` compares: the family, benchmark and axis, the measure
    and its scope, the two runs, and the measure in each over the ``n_paired`` items both
    answered. A class of its own so that these fields come before ``PairedChange``'s in
    ``FamilyComparison``: its field order is the key order of ``drift --format json`` and
    of the report JSON."""

    family: str
    benchmark: str
    axis: str
    measure: str
    scope: str
    new_run_id: str
    baseline_run_id: str
    n_paired: int
    value_old: float | None
    value_new: float | None


@dataclass(frozen=True)
class FamilyComparison(PairedChange, ComparisonSubject):
    """One test of a new run against its baseline, for any family that lives in its own
    folder (``monitor/families/<name>/``): drift keeps one list of these whatever the
    family, and the CLI and the reports render them without knowing the family.

    ``measure`` names what was compared (e.g. ``bias_ambig``) and ``scope`` says it in
    words ("ambiguous caste questions"); ``value_old``/``value_new`` are the measure in
    each run over the ``n_paired`` items both runs answered, ``delta`` their difference
    with its interval at ``confidence``. ``p_value`` is the family's paired test
    (``method``), ``p_adjusted`` its Benjamini–Hochberg value over every test of the drift
    session. ``noise`` is the largest change of the measure among repeat runs in which
    nothing changed (None: no repeat group, ``noise_note`` says what that means);
    ``mde`` the smallest change the test detects with 80% power (``mde_method``).
    ``change`` is the change in plain words without a verdict; ``towards_stereotype``
    whether it goes towards the stereotype (a flagged change that does is a
    regression); ``worse`` whether the change is for the worse in a way that is not a
    move towards the stereotype (accuracy that fell): a flagged change that is worse is a
    regression whichever way the bias moved, so a fall in accuracy is never an
    improvement. ``min_p`` is the smallest p the test can give at all (a sign-flip over T
    templates: 2 / 2^T); where it is not below the false discovery rate no change could
    be flagged, and the verdict is "too few templates for a verdict".
    ``unit`` is how ``value``/``delta`` read: ``points`` (× 100) or ``raw``;
    ``label`` what the value is, in a word; ``signed`` whether it can be negative.
    ``contrast`` is set when the two runs differ by design, not by time (the family's
    words for it, e.g. "cross-language comparison en → hi: ..."): the comparison then
    measures that contrast, so a change that clears the test is labelled
    ``difference``, never a regression or an improvement, and no ``--fail-on`` gate fails
    on it.
    """

    # The fields of ``ComparisonSubject``, then of ``PairedChange``, then these:
    method: str
    change: str
    towards_stereotype: bool | None
    verdict: ComparisonVerdict
    noise: float | None = None
    noise_note: str | None = None
    mde: float | None = None
    mde_method: str | None = None
    unit: Literal["points", "raw"] = "points"
    label: str = ""  # what value_old/value_new are, short ("s_AMB", "share 'target'")
    signed: bool = True  # whether values can be negative (a score) or not (a share)
    role: str = "previous run"
    attribution: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    contrast: str | None = None
    worse: bool | None = None
    min_p: float | None = None

    @property
    def flagged(self) -> bool:
        return self.verdict.flagged

    def adjusted(self, p_adjusted: float | None, alpha: float) -> FamilyComparison:
        """This comparison with its BH-adjusted p and the verdict that follows: flagged
        only when p (BH) < ``alpha`` and |Δ| exceeds the repeat runs' spread (when one was
        measured); not-comparable comparisons keep their verdict."""
        if self.p_value is None or p_adjusted is None:
            return replace(self, p_adjusted=None)
        scale = 100 if self.unit == "points" else 1
        if self.min_p is not None and self.min_p >= alpha:
            why = (
                f"{self.change}; the smallest p this test can give is {self.min_p:.3g}, not "
                f"below the false discovery rate {alpha:g}: no change could be flagged"
            )
            return replace(self, p_adjusted=p_adjusted, verdict=ComparisonVerdict(TOO_FEW, why))
        if p_adjusted >= alpha:
            why = f"{self.change}; BH-adjusted p = {p_adjusted:.3g} ≥ {alpha:g}"
            label: VerdictWord = "no significant change"
        elif self.noise is not None and self.delta is not None and abs(self.delta) <= self.noise:
            why = (
                f"{self.change}; BH-adjusted p = {p_adjusted:.3g} < {alpha:g} but the change "
                f"is within the spread of repeat runs ({scale * self.noise:.1f})"
            )
            label = "no significant change"
        else:
            floor = (
                f"beyond the spread of repeat runs ({scale * self.noise:.1f})"
                if self.noise is not None
                else (self.noise_note or "no noise floor measured")
            )
            why = f"{self.change}; BH-adjusted p = {p_adjusted:.3g} < {alpha:g}; {floor}"
            # A flagged change with no direction (the answers moved, the bias score did
            # not) counts as a regression: a gate must not pass it unread; one that is
            # worse (accuracy fell) is a regression whichever way the bias moved.
            label = (
                "regression"
                if self.worse or self.towards_stereotype
                else "improvement"
                if self.towards_stereotype is False or self.worse is False
                else "regression"
            )
            if self.contrast is not None:
                label = "difference"
        return replace(self, p_adjusted=p_adjusted, verdict=ComparisonVerdict(label, why))
