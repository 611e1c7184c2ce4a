"""One drift session: choose which runs to compare, compare them, control the FDR once.

The CLI's ``drift`` and ``report`` commands both go through here, so the verdicts a pull
request gates on are exactly the ones the report shows. Everything is read through a
``StoreView`` (typed models, no SQL here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from monitor.contract.capabilities import CompareRequest
from monitor.contract.registry import find_family
from monitor.drift.baselines import Tracks, family_of
from monitor.drift.compare import (
    ALPHA,
    CONFIDENCE,
    CONFIGURATION_CHANGE,
    PREVIOUS_RUN,
    UnscoredAxis,
    adjust_family,
    with_sign_flips,
)
from monitor.drift.controls import manifest_controls
from monitor.drift.deltas import SignFlipBatch
from monitor.drift.noise import NoiseBook
from monitor.errors import UserInputError
from monitor.metrics.registry import get_metric
from monitor.records import FamilyComparison
from monitor.store.view import StoreView


@dataclass(frozen=True)
class Pair:
    """A new run and what it is compared with; ``role`` says why that baseline
    (``previous run``, or the last run of the previous ``configuration change``)."""

    new_run_id: str
    baseline_run_id: str | None
    snapshot_id: str
    reason: str | None = None  # why there is no baseline
    role: str = PREVIOUS_RUN


class FamilyResult(Protocol):
    """What drift needs of a comparison a family's ``compare`` hook returns in its own type
    (the pairs' ``AxisComparison``, the association tests' ``EffectComparison``): the
    runs, the subject, a p to adjust with every other test of the session, and the verdict
    that follows. A type whose comparisons carry delta tests takes their p-values from the
    session's sign-flip batch with a ``with_delta_p_values`` method
    (``drift.compare.with_sign_flips``)."""

    family: str
    benchmark: str
    axis: str
    new_run_id: str
    baseline_run_id: str
    p_value: float | None

    @property
    def verdict(self) -> Any: ...

    def adjusted(self, p_adjusted: float | None, alpha: float) -> Any: ...


# Any comparison drift makes, whatever the family: drift's generic record
# (``FamilyComparison``), or a family's own type (the pairs' ``AxisComparison``, the
# association tests' ``EffectComparison``).
Comparison = FamilyComparison | FamilyResult


@dataclass
class DriftResult:
    """What one drift session found: one list of comparisons whatever the family, in the
    order the pairs were compared, BH-adjusted as one family of tests.

    Readers that draw one family's table take its typed view (``of_family``,
    ``family_comparisons``); anything that counts, gates or lists verdicts reads
    ``comparisons`` itself, so a new family is counted without a new field here.
    """

    pairs: list[Pair]
    comparisons: list[Comparison] = field(default_factory=list)
    # Axes only one run of a pair scored: named, never compared (a family's ``unscored``).
    unscored: list[UnscoredAxis] = field(default_factory=list)
    # snapshot → the repeat groups its comparisons were judged against, described
    noise_sources: dict[str, list[str]] = field(default_factory=dict)
    alpha: float = ALPHA
    confidence: float = CONFIDENCE

    def of_family(self, name: str) -> list[Comparison]:
        """The comparisons of one family (``Family.name``), for its own tables."""
        return [c for c in self.comparisons if getattr(c, "family", None) == name]

    @property
    def family_comparisons(self) -> list[FamilyComparison]:
        """Comparisons of the families in their own folder (``monitor/families``)."""
        return [c for c in self.comparisons if isinstance(c, FamilyComparison)]

    @property
    def regressions(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.verdict.label == "regression"]

    def fdr_note(self) -> str:
        tested = sum(1 for c in self.comparisons if c.p_value is not None)
        return (
            f"p (BH) is Benjamini–Hochberg-adjusted over the {tested} paired tests in this "
            f"report (false discovery rate {self.alpha:g}); a drift is flagged only when "
            "p (BH) < the false discovery rate and the change clears the noise of the runs' "
            "repeat groups (flip rate above the noise floor, rate change beyond the spread "
            f"of repeat runs). Intervals are {self.confidence:.0%}; the minimum detectable "
            "change is at 80% power."
        )


def select_pairs(
    view: StoreView,
    *,
    run_ids: Sequence[str] = (),
    snapshots: Sequence[str] = (),
    baseline: str | None = None,
    baseline_snapshot: str | None = None,
    configuration_changes: bool = True,
) -> list[Pair]:
    """Which new runs to compare with which baselines.

    Default: every snapshot's latest complete run against the previous complete run of the
    same snapshot, and, when that previous run has the new run's own measurement
    configuration, also against the last run of the previous configuration (a model, API
    or prompt change), so a history's last configuration change is always in view
    (``configuration_changes``). ``baseline`` fixes the baseline run; ``baseline_snapshot``
    compares with another snapshot's latest complete run (the pull-request case: new
    model vs current). Run ids may be given as unique prefixes, as ``show`` takes them.
    """
    if run_ids:
        news = [view.resolve_run(r).run_id for r in run_ids]
        tracks = Tracks.of(
            view, {view.run(r).snapshot_id for r in news} | _named(baseline_snapshot)
        )
    else:
        snaps = list(snapshots) or view.snapshots_with_complete_runs()
        tracks = Tracks.of(view, {*snaps, *_named(baseline_snapshot)})
        news = []
        for s in snaps:
            latest = tracks.latest(s)
            if not latest:
                raise UserInputError(f"snapshot {s!r} has no complete run in the store")
            news += latest  # one per kind of result the snapshot was scored on
    if baseline is not None and len(news) != 1:
        raise UserInputError("--baseline needs exactly one new run (use --run RUN_ID)")
    if baseline_snapshot is not None and not tracks.latest(baseline_snapshot):
        raise UserInputError(f"snapshot {baseline_snapshot!r} has no complete run")
    pairs: list[Pair] = []
    for rid in news:
        row = view.run(rid)
        if row.status == "quarantined":
            raise UserInputError(f"run {rid} is quarantined and cannot be compared")
        reason = None
        if baseline is not None:
            base: str | None = view.resolve_run(baseline).run_id
        elif baseline_snapshot is not None:
            base = tracks.latest_like(baseline_snapshot, row)
            if base is None:
                reason = f"snapshot {baseline_snapshot} has no complete {family_of(row.metric)} run"
        else:
            base = tracks.baseline(row)
        if base is None and reason is None:
            reason = _why_none(view, rid, tracks)
        pairs.append(Pair(rid, base, row.snapshot_id, reason))
        if configuration_changes and baseline is None and baseline_snapshot is None:
            previous = previous_configuration_run(view, rid)
            if previous is not None and previous != base:
                pairs.append(Pair(rid, previous, row.snapshot_id, role=CONFIGURATION_CHANGE))
    return pairs


def _named(snapshot: str | None) -> set[str]:
    return set() if snapshot is None else {snapshot}


def previous_configuration_run(view: StoreView, run_id: str) -> str | None:
    """The latest complete run of ``run_id``'s track (its snapshot and kind of result),
    started before it, whose measurement configuration differs (None when the
    configuration never changed)."""
    run = view.run(run_id)
    family = family_of(run.metric)
    best: tuple = ()
    for group in view.configuration_groups(run.snapshot_id):
        if run_id in group.run_ids:
            continue
        for rid, started in zip(group.run_ids, group.started_at, strict=True):
            if family_of(view.run(rid).metric) != family:
                continue
            if started < run.started_at or (started == run.started_at and rid < run_id):
                best = max(best, (started, rid)) if best else (started, rid)
    return best[1] if best else None


def _why_none(view: StoreView, run_id: str, tracks: Tracks) -> str:
    """Why a run has no baseline, truthfully: the only earlier runs of a repeat group are
    its own repeats, which measure the noise floor and are never its baseline; earlier
    runs of another kind of result are no baseline either, and the reason says so."""
    repeats = [r for r in view.repeat_group_runs(run_id) if r != run_id]
    if repeats:
        return (
            f"no complete run outside its repeat group; its {len(repeats)} repeat(s) in the "
            "same command measure the noise floor instead of serving as a baseline"
        )
    run = view.run(run_id)
    if any(r.started_at < run.started_at for r in tracks.earlier_elsewhere(run)):
        return f"no earlier complete {family_of(run.metric)} run of this snapshot"
    return "no earlier complete run of this snapshot"


def run_drift(
    view: StoreView,
    pairs: Sequence[Pair],
    *,
    alpha: float = ALPHA,
    confidence: float = CONFIDENCE,
) -> DriftResult:
    """Compare every pair, then BH-adjust across all snapshot × axis tests together (pair
    axes and association tests in one family), and write each verdict in plain words."""
    result = DriftResult(pairs=list(pairs), alpha=alpha, confidence=confidence)
    book = NoiseBook(view, alpha=alpha)
    # Every run the comparisons and their noise contexts will read, in one scan.
    needed: set[str] = set()
    compared: set[str] = set()
    for p in pairs:
        if p.baseline_run_id is not None:
            new, base = view.run(p.new_run_id), view.run(p.baseline_run_id)
            compared |= {new.run_id, base.run_id}
            needed |= compared | book.runs_read(new, base)
    view.prefetch_outcomes(needed)
    # The compared runs' panel outcomes (the pairs' cross-check), in one scan if asked for.
    view.prefetch_panel_outcomes(compared)
    # The delta tests' p-values of all pairs in one batch (``SignFlipBatch``: each
    # pattern matrix read once, not once per test).
    sign_flips = SignFlipBatch()
    controls = manifest_controls()
    comps: list[Comparison] = []
    for p in pairs:
        if p.baseline_run_id is None:
            continue
        family = get_metric(view.run(p.new_run_id).metric).family
        compare = family.drift().compare if family.drift is not None else None
        if compare is None:
            raise UserInputError(
                f"run {p.new_run_id}: no drift comparator for {family.name} results"
            )
        request = CompareRequest(
            view,
            p.new_run_id,
            p.baseline_run_id,
            alpha=alpha,
            confidence=confidence,
            noise_book=book,
            role=p.role,
            sign_flips=sign_flips,
            controls=controls,
        )
        pair_comps = compare(request)
        unscored = family.drift().unscored if family.drift is not None else None
        if unscored is not None:
            result.unscored += unscored(request)
        for c in pair_comps:
            context = getattr(c, "noise_context", None)
            for side in context.sides if context else ():
                used = result.noise_sources.setdefault(p.snapshot_id, [])
                text = f"{side.description} (group {side.group_key})"
                if text not in used:
                    used.append(text)
        comps += pair_comps
    adjusted = adjust_family(with_sign_flips(comps, sign_flips), alpha=alpha)
    n_tests = sum(1 for c in adjusted if c.p_value is not None)
    result.comparisons = _explained(adjusted, alpha=alpha, n_tests=n_tests)
    return result


def _explained(comps: list[Comparison], *, alpha: float, n_tests: int) -> list[Comparison]:
    """Each comparison with its verdict in plain words where its family writes them only
    now, when the session's number of tests is known (its ``explain`` hook: the pairs'
    paragraphs cite the BH correction "for the report's N tests"); the other families
    wrote theirs in their comparators. The order is kept."""
    by_family: dict[str, list[int]] = {}
    for k, c in enumerate(comps):
        by_family.setdefault(getattr(c, "family", ""), []).append(k)
    out = list(comps)
    for name, positions in by_family.items():
        family = find_family(name)
        hook = family.drift().explain if family is not None and family.drift else None
        if hook is None:
            continue
        for k, c in zip(
            positions,
            hook([comps[k] for k in positions], alpha=alpha, n_tests=n_tests),
            strict=True,
        ):
            out[k] = c
    return out
