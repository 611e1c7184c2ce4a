"""What the report room is handed: plain, frozen, validated shapes and nothing else.

The report never queries the store. Whoever builds a report (the CLI, from drift's
output) fills these models, and every renderer (Markdown, HTML, JSON) reads only them, so
one input always gives the same three outputs.

Pydantic rather than bare dataclasses because the JSON output must round-trip: the same
models validate what they serialise (dates as ISO 8601, NaN/inf as null), and an
adapter that fills a field wrongly fails here with the field's name, not in a template.

The shapes deliberately have no field for benchmark sentences: items are referred to by
id only, so no renderer can leak a slur or stereotype into a PR comment.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from functools import cache
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BeforeValidator,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from monitor.records import FamilyComparison
from monitor.report.frozen import Frozen as _Frozen
from monitor.report.section import FamilySection

S = TypeVar("S", bound=FamilySection)


def section_types() -> dict[str, type[FamilySection]]:
    """Each registered family's section model, by family, in the registry's order."""
    from monitor.contract.registry import families

    return {f.name: f.report().section or _plain_section(f.name) for f in families()}


@cache
def _plain_section(family: str) -> type[FamilySection]:
    """The section of a family that declares none: nothing of its own, its comparisons
    among drift's generic records counted and worded by the defaults."""
    return type(f"PlainSection[{family}]", (FamilySection,), {"family": family})


SCHEMA_VERSION = 2  # 2: trend points may summarise several runs (``runs``)

Verdict = Literal["regression", "improvement", "no significant change", "not comparable"]
# Matches monitor.drift.provenance_diff.Category: "run" fields (ids, timestamps) always
# differ between two runs; "other" is a differing field nobody has classified yet.
Category = Literal["model", "measurement", "environment", "run", "other"]
CATEGORY_ORDER: tuple[Category, ...] = ("model", "measurement", "environment", "other", "run")
VERDICT_ORDER: tuple[Verdict, ...] = (
    "regression",
    "improvement",
    "not comparable",
    "no significant change",
)


def _finite_or_none(v: Any) -> Any:
    """Undefined numbers (n = 0, no test) arrive as NaN from numpy/scipy; store them as None.

    Doing it on input keeps a report equal to its own JSON round trip.
    """
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _as_text(v: Any) -> Any:
    """Provenance values are arbitrary JSON leaves (lists, numbers, bools); show them as text."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, datetime):
        return v.isoformat()
    return json.dumps(v, sort_keys=True, default=str, ensure_ascii=False)


def _interval(v: Any) -> Any:
    """An interval with an undefined end is no interval at all."""
    if v is None:
        return None
    lo, hi = (_finite_or_none(x) for x in v)
    return None if lo is None or hi is None else (lo, hi)


OptFloat = Annotated[float | None, BeforeValidator(_finite_or_none)]
Interval = Annotated[tuple[float, float] | None, BeforeValidator(_interval)]
Text = Annotated[str | None, BeforeValidator(_as_text)]


class TrendPoint(_Frozen):
    """One run's rate on one axis, or (``runs`` > 1) consecutive runs of one configuration
    summarised as one point in a long history (``report.history.condense``).

    ``flagged`` is set when drift flagged this run: the verdict first, then any detail
    ("regression: 10 anti→stereo, 2 stereo→anti"); the verdict picks the marker colour.
    A summarising point runs from ``first_run_id`` to ``run_id``: ``value`` is the mean
    of their rates, ``ci_low``/``ci_high`` the smallest and largest bound of their
    intervals, ``started_at`` the middle run's start, ``n`` the last run's items.
    """

    run_id: str
    runs: int = Field(default=1, ge=1)
    first_run_id: str | None = None
    started_at: datetime
    status: str
    value: OptFloat
    ci_low: OptFloat = None
    ci_high: OptFloat = None
    n: int = 0
    flagged: str | None = None
    group: str | None = None  # measurement-configuration key (runs with one key: a group)

    @model_validator(mode="after")
    def _not_quarantined(self) -> TrendPoint:
        # A quarantined run failed its quality gate: plotting it would draw a line through
        # numbers the monitor itself does not trust. It is listed under runs instead.
        if self.status == "quarantined":
            raise ValueError(f"run {self.run_id} is quarantined and must not be in a trend")
        return self


class TrendGroup(_Frozen):
    """Points of one trend that share a measurement configuration: drawn as one point
    (their mean) with their spread (smallest to largest)."""

    key: str
    label: str
    run_ids: tuple[str, ...]


class TrendBreak(_Frozen):
    """Where the measurement configuration changed between two consecutive points;
    ``changes`` names what changed ("model gpt-4 → gpt-4o", "API ...", "prompt")."""

    at: datetime
    before_run_id: str
    after_run_id: str
    changes: tuple[str, ...]


class TrendQuarantined(_Frozen):
    """A quarantined run of the trend's snapshot: drawn apart from the line, with why."""

    run_id: str
    started_at: datetime
    reason: str | None = None


class Trend(_Frozen):
    """The longitudinal series for one snapshot × benchmark axis × measure, oldest first.

    ``reference`` is the line drawn for "no preference" (0.5 for a bias rate; None for
    measures where it means nothing). ``control`` is the model's preference on a neutral
    control set when known, because 50% is not automatically unbiased for likelihoods.
    ``groups`` (repeat groups, ≥2 points of one configuration), ``breaks``
    (configuration changes) and ``quarantined`` (runs never plotted on the line) make
    the series a history rather than a line through every run.
    """

    snapshot_id: str
    benchmark: str
    axis: str
    measure: str = "bias_rate"
    metric: str | None = None
    reference: OptFloat = 0.5
    control: OptFloat = None
    points: tuple[TrendPoint, ...] = ()
    groups: tuple[TrendGroup, ...] = ()
    breaks: tuple[TrendBreak, ...] = ()
    quarantined: tuple[TrendQuarantined, ...] = ()

    @model_validator(mode="after")
    def _sorted(self) -> Trend:
        times = [p.started_at for p in self.points]
        if times != sorted(times):
            raise ValueError(f"trend {self.snapshot_id}/{self.axis}: points must be oldest first")
        return self


class NoiseSide(_Frozen):
    """One repeat group a comparison was judged against, with its noise as a distribution:
    the flip rate of every pair of its runs and every run's bias rate."""

    side: str  # "baseline" | "new" | "same configuration" | "nearest"
    description: str
    group_key: str
    n_runs: int
    pair_flip_rates: tuple[float, ...]
    flip_floor: float  # the threshold a comparison's flip rate must exceed
    bias_rates: tuple[float, ...]


class DeltaTestSummary(_Frozen):
    """The paired test on continuous per-item scores (local metrics), beside McNemar."""

    method: str
    n_items: int
    n_clusters: int
    mean_shift: float
    ci: Interval = None
    p_value: OptFloat = None


class ConfigurationChange(_Frozen):
    """One part of the measurement configuration that differs between the compared runs;
    ``old``/``new`` are None for parts too long to quote (a prompt)."""

    label: str
    old: Text = None
    new: Text = None


class ControlBeside(_Frozen):
    """The control of a compared axis (a neutral set scored beside the axis): its
    bias rate in each run, to read the axis's rates by. Never a verdict, a flag or a
    test; a side that did not score it has None."""

    benchmark: str  # the control's benchmark id
    axis: str  # the control's own axis label, e.g. "caste-control"
    rate_old: OptFloat = None  # the control's bias rate in the baseline run
    rate_new: OptFloat = None  # the control's bias rate in the new run


class DirectionChangeSummary(_Frozen):
    """One direction of a balanced axis (the items whose stereotype names ``group``): its
    rate in each run over the items both decided, and the paired change."""

    group: str
    n: int
    rate_old: OptFloat = None
    rate_new: OptFloat = None
    delta: OptFloat = None
    delta_ci: Interval = None


class PairedRates(_Frozen):
    """Each run's rate with its interval and the paired change with its interval: what a
    compared axis (``Comparison``) and its balanced rate (``BalancedSummary``) both show.
    A model that lists these first inherits them first; one that lists other fields
    before them inherits those from a base named after this one in its bases (pydantic
    orders inherited fields base by base, the last base first), so the JSON keeps its
    key order."""

    rate_old: OptFloat = None
    ci_old: Interval = None
    rate_new: OptFloat = None
    ci_new: Interval = None
    delta: OptFloat = None
    delta_ci: Interval = None


class BalancedSummary(PairedRates):
    """The balanced rate of a compared axis whose stereotypes name two or more groups
    (the sentence-pair family's balanced rate): each run's balanced rate (the mean of the
    per-direction rates) with its interval, the paired balanced change that the verdict
    tests, the raw paired change and its name-preference part (raw − balanced), each
    direction, and each run's name preference (the share of pairs in which the sentence
    naming ``favoured`` wins; 50% is none), to read beside the neutral control."""

    p_value: OptFloat = None
    mde: OptFloat = None
    raw_delta: OptFloat = None
    name_preference_part: OptFloat = None
    favoured: str | None = None
    name_preference_old: OptFloat = None
    name_preference_new: OptFloat = None
    directions: tuple[DirectionChangeSummary, ...] = ()
    n_outside: int = 0


class PanelReading(_Frozen):
    """One panel metric's paired change on a compared axis (``drift.robustness``): its Δ
    and interval in the tested change's unit, and whether it is a valid reading of both
    models (``invalid_reason`` says why not)."""

    metric: str
    own: bool = False  # the metric the verdict was decided on
    valid: bool = True
    invalid_reason: Text = None
    delta: OptFloat = None
    ci: Interval = None
    n_paired: int = 0


class Robustness(_Frozen):
    """A compared axis's change read by the panel's other metrics valid for both models:
    robust (each interval on the same side of zero), fragile (one includes zero),
    contradicted (one on the other side: ``against``), not cross-checked (none)."""

    label: Literal["robust", "fragile", "contradicted", "not cross-checked"]
    words: str
    against: tuple[str, ...] = ()
    metrics: tuple[PanelReading, ...] = ()


class UnscoredAxis(_Frozen):
    """An axis only one run of a compared pair scored: shown as "not scored in the new
    run" / "not scored in the baseline", never a verdict, and its dataset version is not
    in the pair's provenance diff."""

    snapshot_id: str  # the new run's snapshot
    new_run_id: str
    baseline_run_id: str
    benchmark: str
    axis: str
    missing: Literal["new", "baseline"]  # the side that did not score it

    @property
    def words(self) -> str:
        """The reader's words for it."""
        return (
            "not scored in the new run" if self.missing == "new" else "not scored in the baseline"
        )


class ComparedAxis(_Frozen):
    """Which runs a comparison paired, on which axis, and over how many items (the
    fields ``Comparison`` lists before its ``PairedRates``)."""

    snapshot_id: str
    benchmark: str
    axis: str
    new_run_id: str
    baseline_run_id: str | None
    n_paired: int = 0


class Comparison(PairedRates, ComparedAxis):
    """One paired comparison of two runs on one axis, as drift decided it.

    ``b_to_anti``: items stereo in the baseline and anti in the new run (moved away from
    the stereotype); ``c_to_stereo``: the reverse. ``delta`` = rate_new − rate_old over the
    paired items, with its paired 95% interval.
    """

    b_to_anti: int | None = None
    c_to_stereo: int | None = None
    p_value: OptFloat = None
    p_adjusted: OptFloat = None
    noise_floor: OptFloat = None
    verdict: Verdict
    reason: str = ""
    # Why it is not flagged although its tested interval excludes zero (the rule that held
    # it back, in words; drift's `interval_note`); None where there is nothing to explain.
    interval_note: str | None = None
    metric: str | None = None
    flipped_item_ids: tuple[str, ...] | None = None
    # Why this baseline: the previous run, or the last run before a configuration change.
    role: str = "previous run"
    # Drift flagged it: a regression or an improvement that cleared BH and the noise
    # floor (what badges count and `drift --fail-on` fails on). Controls are never here.
    flagged: bool = False
    # The axis's control (a neutral set beside the axis) in both runs; None without one.
    control: ControlBeside | None = None
    # The change read across the metric panel (None: not comparable, or no change).
    robustness: Robustness | None = None
    # The smallest rate change the test detects with 80% power (a proportion), at the
    # paired n (``mde_n`` after the design effect of shared templates).
    mde: OptFloat = None
    mde_n: int | None = None
    flip_rate: OptFloat = None
    noise: tuple[NoiseSide, ...] = ()
    noise_unknown: str | None = None  # why no repeat group judges it
    rate_noise: OptFloat = None  # largest bias-rate spread of a repeat group
    design_effect: OptFloat = None
    n_clusters: int | None = None
    delta_test: DeltaTestSummary | None = None
    configuration_changes: tuple[ConfigurationChange, ...] = ()
    summary: str = ""  # the verdict in plain words
    # Where the axis's stereotypes name two or more groups: the balanced rate, which the
    # verdict tests (rate_old/rate_new/delta above stay the raw figures); else None and,
    # for a sentence-pair axis naming one group, ``balanced_note`` says why.
    balanced: BalancedSummary | None = None
    balanced_note: str | None = None


class AssociationResult(_Frozen):
    """One association test (WEAT/SEAT) of one run: d with its bootstrap interval, the
    one-sided permutation p, Holm's p across the run's tests and the set sizes used.
    Terms never appear here; ``n_missing`` counts those the model could not embed."""

    snapshot_id: str
    run_id: str
    started_at: datetime
    benchmark: str
    test: str
    metric: str | None = None
    d: OptFloat = None
    ci: Interval = None
    p_value: OptFloat = None
    p_holm: OptFloat = None
    sizes: tuple[int, int, int, int] = (0, 0, 0, 0)  # |X|, |Y|, |A|, |B| embedded
    n_missing: int = 0
    method: str | None = None


class EffectComparison(_Frozen):
    """The change in d of one association test between two runs, as drift decided it;
    ``delta_ci`` is the paired bootstrap interval over the target words both embedded."""

    snapshot_id: str
    benchmark: str
    test: str
    new_run_id: str
    baseline_run_id: str
    metric: str | None = None
    n_paired: int = 0
    d_old: OptFloat = None
    d_new: OptFloat = None
    delta: OptFloat = None
    delta_ci: Interval = None
    # The smallest |Δd| the paired test detects with 80% power (absent in older reports).
    mde: OptFloat = None
    p_value: OptFloat = None
    p_adjusted: OptFloat = None
    verdict: Verdict
    reason: str = ""


class ProvenanceChange(_Frozen):
    field: str
    old: Text = None
    new: Text = None
    category: Category = "other"


class ProvenanceDiff(_Frozen):
    """Every provenance field that differs between the two runs of a comparison.

    One diff per run pair (all axes of that pair share it). ``attribution`` is drift's
    one-line reading, e.g. "model change" or "environment drift".
    """

    snapshot_id: str
    baseline_run_id: str
    new_run_id: str
    attribution: str | None = None
    changes: tuple[ProvenanceChange, ...] = ()

    def by_category(self) -> list[tuple[Category, list[ProvenanceChange]]]:
        """Changes grouped in reading order: model, measurement, environment, other, run."""
        return [
            (cat, [c for c in self.changes if c.category == cat])
            for cat in CATEGORY_ORDER
            if any(c.category == cat for c in self.changes)
        ]


class QualityResult(_Frozen):
    """One quality suite's outcome for one run; ``failures`` names the failed expectations."""

    run_id: str
    suite: str
    success: bool
    failures: tuple[str, ...] = ()


class RunSummary(_Frozen):
    """A run the report covers, so quarantined ones are shown (with why) though never plotted."""

    run_id: str
    snapshot_id: str
    started_at: datetime
    status: str
    metric: str | None = None
    reason: str | None = None


class ContextRate(_Frozen):
    """One rate of a bias rate's context: k of n with its interval."""

    label: str
    value: OptFloat = None
    ci: Interval = None
    k: int | None = None
    n: int | None = None
    control: OptFloat = None  # the neutral control under the same metric, when known


class ScoreContext(_Frozen):
    """A run's bias rate on one axis, with what to read beside it: the model's preference
    on the axis's neutral control (content-free sentences) and the same items' rates under
    each metric of the panel, and how often those metrics agree per item."""

    run_id: str
    snapshot_id: str
    benchmark: str
    axis: str
    metric: str
    rate: ContextRate
    control_benchmark: str | None = None
    control: ContextRate | None = None
    panel: tuple[ContextRate, ...] = ()
    agreement: ContextRate | None = None


class RepeatGroupAxis(_Frozen):
    """A repeat group's noise on one axis: every pair's flip rate, every run's bias rate."""

    benchmark: str
    axis: str
    pair_flip_rates: tuple[float, ...]
    flip_floor: float
    bias_rates: tuple[float, ...]


class RepeatGroup(_Frozen):
    """Runs of one snapshot with one measurement configuration (≥ 2 complete runs)."""

    snapshot_id: str
    key: str
    description: str
    run_ids: tuple[str, ...]
    configuration: tuple[ConfigurationChange, ...] = ()  # label, value (old unused)
    axes: tuple[RepeatGroupAxis, ...] = ()


class MethodRun(_Frozen):
    """The latest run of one metric (method) on one snapshot axis, for side-by-side."""

    metric: str
    method: str  # what the metric measures, in a line
    run_id: str
    started_at: datetime
    value: OptFloat = None
    ci: Interval = None
    k: int | None = None
    n: int | None = None


class MethodComparison(_Frozen):
    """One snapshot axis measured by more than one method: not comparable item by item,
    shown side by side with the method difference named."""

    snapshot_id: str
    benchmark: str
    axis: str
    runs: tuple[MethodRun, ...]
    note: str


class MeasureValue(_Frozen):
    """One measure of one compared run with its interval, as the run stored it: what a
    family's charts draw beside drift's comparisons (the choice questions' accuracy and
    bias scores per category, each run on its own). ``value`` and ``ci`` are in the
    measure's own unit (a proportion, or a score from −1 to 1)."""

    run_id: str
    benchmark: str
    axis: str
    measure: str
    value: OptFloat = None
    ci: Interval = None
    n: int | None = None


class LakeSnapshot(_Frozen):
    """The DuckLake snapshot a report was read at (``report --as-of ID`` reads it again)."""

    id: int = Field(ge=0)
    committed_at: datetime


class ReportInput(_Frozen):
    """Everything one report shows. ``since`` is the start of the window the trends cover.

    What every report has (its runs, their quality, what differs between compared runs,
    the axes only one run scored, notes, drift's generic comparisons, the levels) and
    ``sections``: each family's own model (``report.section.FamilySection``), one per
    family with something of its own to show. No field here belongs to a family.

    The JSON is one flat document: each section's fields sit among these where its
    ``json_before`` places them, and a registered family without a section writes its
    default's. Reading one back (``from_json``, or a family's fields given here as
    keywords) files each registered family's keys under its section.
    """

    schema_version: Literal[2] = SCHEMA_VERSION
    title: str
    generated_at: datetime
    since: datetime | None = None
    # On a lake, the snapshot read; absent from a DuckDB file's JSON (which has none).
    lake_snapshot: LakeSnapshot | None = None
    # Per compared pair, the axes only one of its runs scored (no verdict, no provenance).
    unscored: tuple[UnscoredAxis, ...] = ()
    provenance: tuple[ProvenanceDiff, ...] = ()
    quality: tuple[QualityResult, ...] = ()
    runs: tuple[RunSummary, ...] = ()
    # Complete runs of the window that are neither compared nor failed, and passing suites
    # of such runs: plotted in the trends and counted here, not listed (a year of nightly
    # runs would otherwise make the report grow with history, not with what it shows).
    runs_not_listed: int = Field(default=0, ge=0)
    quality_not_listed: int = Field(default=0, ge=0)
    notes: tuple[str, ...] = ()
    fdr_note: str | None = None
    # Drift's generic comparisons, which a family's section reads with ``comparisons_of``.
    family_comparisons: tuple[FamilyComparison, ...] = ()
    alpha: float = Field(default=0.05, gt=0, lt=1)  # false discovery rate of the verdicts
    confidence: float = Field(default=0.95, gt=0, lt=1)  # level of every interval shown
    # Each family's own section; its fields are written into the JSON among those above.
    sections: tuple[FamilySection, ...] = Field(default=(), exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _file_sections(cls, data: Any) -> Any:
        """A family's fields given flat (a report's JSON) filed under its section, and
        the sections equal to their default (nothing to show) left out."""
        if not isinstance(data, dict):
            return data
        flat = set(data) - set(cls.model_fields)
        sections = list(data.get("sections", ()))
        if flat:
            filed: set[str] = set()
            for kind in section_types().values():
                mine = {k: data[k] for k in kind.model_fields if k in flat}
                if mine:
                    sections = [s for s in sections if not isinstance(s, kind)]
                    sections.append(kind.model_validate(mine))
                    filed |= set(mine)
            data = {k: v for k, v in data.items() if k not in filed}
        return {**data, "sections": tuple(s for s in sections if s != type(s)())}

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The report as one flat document: each registered family's section (its
        default where it has none) with its fields among the generic ones, where its
        ``json_before`` places them; the families in the registry's order."""
        own: dict[str, Any] = handler(self)
        if "lake_snapshot" in own and own["lake_snapshot"] is None:
            del own["lake_snapshot"]  # a file store's report stays as it was: no such key
        before: dict[str, list[tuple[str, Any]]] = {}
        for section in self.every_section():
            for name in type(section).model_fields:
                place = section.json_before.get(name, "alpha")
                before.setdefault(place, []).append((name, getattr(section, name)))
        out: dict[str, Any] = {}
        for key, value in own.items():
            out.update(before.pop(key, ()))
            out[key] = value
        for rest in before.values():
            out.update(rest)
        return out

    def every_section(self) -> list[FamilySection]:
        """Every registered family's section, in the registry's order: its own where the
        report holds one, else its default (which shows nothing of its own)."""
        held = {s.family: s for s in self.sections}
        return [held.get(name) or kind() for name, kind in section_types().items()]

    def section_of(self, kind: type[S]) -> S:
        """The section of type ``kind`` (a family reads its own with it), or its default."""
        for s in self.sections:
            if isinstance(s, kind):
                return s
        return kind()

    def comparisons_of(self, family: str) -> list[FamilyComparison]:
        """Drift's generic comparisons of ``family``, in their order."""
        return [c for c in self.family_comparisons if c.family == family]

    @property
    def level(self) -> str:
        """The intervals' confidence level as a reader sees it, e.g. "95%"."""
        return f"{100 * self.confidence:g}%"

    def provenance_for(self, c: Comparison) -> ProvenanceDiff | None:
        for d in self.provenance:
            if d.new_run_id == c.new_run_id and d.baseline_run_id == c.baseline_run_id:
                return d
        return None

    def quarantined(self) -> list[RunSummary]:
        return [r for r in self.runs if r.status == "quarantined"]

    def failures_of(self, run_id: str) -> list[str]:
        return [f for q in self.quality if q.run_id == run_id and not q.success for f in q.failures]
