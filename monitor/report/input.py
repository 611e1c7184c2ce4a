"""Drift's findings in the report's own shapes: the ``ReportInput`` the renderers take.

Built in the report room (drift does not know the report exists): besides drift's
comparisons it reads what the report shows (quality results, the run list, what differs
between compared runs) through the typed reading protocol (``readmodel.reader``); each
family builds its own section (``Report.build``: the pairs' comparisons, contexts and
bias-rate trends, the association tests' effect sizes), which the report holds as it is.
The renderers (``markdown``, ``html``, ``json_out``) only render the ``ReportInput``
built here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from monitor.contract.capabilities import ReportScope
from monitor.contract.registry import families
from monitor.drift.provenance_diff import ProvenanceDiff as RunsDiff
from monitor.drift.provenance_diff import diff_runs
from monitor.drift.session import DriftResult
from monitor.readmodel.models import TrendSeries
from monitor.readmodel.reader import RunReader
from monitor.report.history import SafeTexts, SeriesColumns
from monitor.report.model import (
    ProvenanceChange,
    ProvenanceDiff,
    QualityResult,
    ReportInput,
    RunSummary,
    UnscoredAxis,
)
from monitor.report.section import FamilySection


def interval_of(lo, hi):
    """A stored interval as the report's pair, None where either end is missing."""
    return None if lo is None or hi is None else (lo, hi)


def series_columns(
    s: TrendSeries,
    flags: dict[tuple[str, str, str], str],
    groups: Sequence[str | None],
    safe: SafeTexts,
) -> SeriesColumns:
    """A stored series as a trend's columns, with drift's flags and configuration keys;
    ``safe`` makes the texts of its kept points safe to show (shared by the series)."""
    size = len(s.run_ids)
    return SeriesColumns(
        run_ids=s.run_ids,
        started_at=s.started_at,
        statuses=("complete",) * size,
        values=s.values,
        ci_lows=s.ci_lows,
        ci_highs=s.ci_highs,
        ns=[n or 0 for n in s.ns],
        flagged=_flagged(s, flags),
        groups=groups,
        runs=(1,) * size,
        first_run_ids=(None,) * size,
        safe=safe,
    )


def _flagged(s: TrendSeries, flags: dict[tuple[str, str, str], str]) -> Sequence[str | None]:
    """Drift's flag of each run of the series: a report flags a few dozen (run, axis)
    pairs among a year's ~150k points, so a series with none is not looked up run by run."""
    if not any(b == s.benchmark and a == s.axis for _, b, a in flags):
        return (None,) * len(s.run_ids)
    return [flags.get((r, s.benchmark, s.axis)) for r in s.run_ids]


def quality_results(view: RunReader, since: datetime | None) -> list[QualityResult]:
    out = []
    for v in view.latest_validations(since):
        failures = tuple(
            str(f.get("reason", f)) if isinstance(f, dict) else str(f)
            for f in v.results.get("failures", [])
        )
        out.append(
            QualityResult(run_id=v.run_id, suite=v.suite, success=v.success, failures=failures)
        )
    return out


def run_summaries(
    view: RunReader, since: datetime | None, named: set[str], shown: set[str] | None = None
) -> tuple[list[RunSummary], int]:
    """The runs a report lists (every run of the window that is not complete, and the runs
    it names, a compared baseline from before the window included, so every compared run
    has its snapshot and date), and how many runs of the window it leaves out: a year's
    history is thousands of complete runs, so only the listed ones become models.
    ``shown``: the only snapshots the report covers (None: all)."""
    every = [r for r in view.runs_since(since) if shown is None or r.snapshot_id in shown]
    listed = [r for r in every if r.status != "complete" or r.run_id in named]
    earlier = named - {r.run_id for r in every}
    if earlier:  # older than the window: listed first, as the window's runs are by time
        before = sorted(view.runs(earlier).values(), key=lambda r: (r.started_at, r.run_id))
        listed = before + listed
    return [
        RunSummary.from_record(r, reason=r.notes if r.status != "complete" else None)
        for r in listed
    ], len(every) - len(listed) + len(earlier)


def _family_sections(
    view: RunReader,
    result: DriftResult,
    *,
    since: datetime | None,
    flags: dict[tuple[str, str, str], str],
    new_runs: list[str],
    with_flips: bool,
) -> list[FamilySection]:
    """Each family's section, built by its ``Report.build`` from its comparisons (the
    pairs' comparisons, contexts, trends, repeat groups and methods; the association
    tests' tests, changes and trends; the choice questions' measures per run), in the
    registry's order; a family with nothing of its own to show has none."""
    out: list[FamilySection] = []
    scope = ReportScope(since=since, flags=flags, new_runs=new_runs, with_flips=with_flips)
    for family in families():
        build = family.report().build
        if build is not None:
            section = build(view, result.of_family(family.name), scope)
            if section is not None:
                out.append(section)
    return out


def _provenance(snapshot_id: str, c, diff: RunsDiff) -> ProvenanceDiff:
    """The report's model of what differs between comparison ``c``'s two runs."""
    return ProvenanceDiff(
        snapshot_id=snapshot_id,
        baseline_run_id=c.baseline_run_id,
        new_run_id=c.new_run_id,
        attribution=c.attribution,
        changes=tuple(
            ProvenanceChange(field=f.field, old=f.old, new=f.new, category=f.category)
            for f in diff.changes
        ),
    )


def _in_scope(section: FamilySection, shown: set[str]) -> FamilySection:
    """A section with only the items of the ``shown`` snapshots: every model of its
    fields that names a snapshot (trends, rates in context, repeat groups, methods,
    association tests) is kept only for one the report was asked about."""
    update: dict[str, object] = {}
    for name in type(section).model_fields:
        value = getattr(section, name)
        if isinstance(value, tuple):
            update[name] = tuple(
                v for v in value if getattr(v, "snapshot_id", None) in (None, *shown)
            )
    return section.model_copy(update=update)


def build_report_input(
    view: RunReader,
    result: DriftResult,
    *,
    title: str,
    since: datetime | None,
    with_flips: bool = False,
    scope: Collection[str] | None = None,
) -> ReportInput:
    """The report of drift's ``result``. ``scope``: the snapshots the user asked for
    (``report -s``; empty for ``--run``): the report then shows those and the snapshots
    of every compared pair's runs (a baseline from another snapshot included) and no
    other snapshot's trends, rates, runs or quality results. None: the whole store."""
    # A comparison in its family's own type (pair axes, association tests) carries the
    # provenance diff of its runs; drift's generic ones carry the attribution only, so
    # their runs' diff is read here. One diff per pair of runs, in the session's order.
    diffs: dict[tuple[str, str], ProvenanceDiff] = {}
    flags: dict[tuple[str, str, str], str] = {}
    run_ids = {r for c in result.comparisons for r in (c.new_run_id, c.baseline_run_id)}
    meta = view.runs(run_ids)
    for c in result.comparisons:
        if c.verdict.flagged:
            flags[(c.new_run_id, c.benchmark, c.axis)] = f"{c.verdict.label}: {c.verdict.reason}"
        key = (c.baseline_run_id, c.new_run_id)
        if key not in diffs:
            new, old = meta[c.new_run_id], meta[c.baseline_run_id]
            diff = getattr(c, "provenance", None) or diff_runs(old.fields, new.fields)
            diffs[key] = _provenance(new.snapshot_id, c, diff)
    snapshot_of = {p.new_run_id: p.snapshot_id for p in result.pairs}
    unscored = tuple(
        UnscoredAxis(
            snapshot_id=snapshot_of.get(u.new_run_id, ""),
            new_run_id=u.new_run_id,
            baseline_run_id=u.baseline_run_id,
            benchmark=u.benchmark,
            axis=u.axis,
            missing=u.missing,
        )
        for u in result.unscored
    )
    notes = [
        f"{p.snapshot_id}: run {p.new_run_id} has no baseline ({p.reason})"
        for p in result.pairs
        if p.baseline_run_id is None
    ]
    notes += [
        f"{s}: noise floor measured from {'; '.join(groups)}"
        for s, groups in sorted(result.noise_sources.items())
    ]
    new_runs = [p.new_run_id for p in result.pairs]
    # The families' sections first: the pairs' prefetch the measures of the runs the
    # report reads (compared, latest of each trend, new).
    sections = _family_sections(
        view, result, since=since, flags=flags, new_runs=new_runs, with_flips=with_flips
    )
    shown: set[str] | None = None
    if scope is not None:
        shown = set(scope) | {p.snapshot_id for p in result.pairs}
        shown |= {r.snapshot_id for r in meta.values()}
        sections = [_in_scope(s, shown) for s in sections]
    runs, n_not_listed = run_summaries(view, since, run_ids, shown)
    all_quality = quality_results(view, since)
    if shown is not None:
        in_scope = {r.run_id for r in view.runs_since(since) if r.snapshot_id in shown}
        all_quality = [q for q in all_quality if q.run_id in in_scope | run_ids]
    quality = [q for q in all_quality if not q.success or q.run_id in run_ids]
    return ReportInput(
        title=title,
        generated_at=datetime.now(UTC),
        since=since,
        unscored=unscored,
        provenance=tuple(diffs.values()),
        quality=tuple(quality),
        runs=tuple(runs),
        runs_not_listed=n_not_listed,
        quality_not_listed=len(all_quality) - len(quality),
        notes=tuple(notes),
        fdr_note=result.fdr_note(),
        family_comparisons=tuple(result.family_comparisons),
        alpha=result.alpha,
        confidence=result.confidence,
        sections=tuple(sections),
    )
