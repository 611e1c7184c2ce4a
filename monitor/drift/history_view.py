"""The longitudinal shapes of a report: repeat groups, configuration breaks, quarantined
runs and methods side by side, read through the store's typed view.

A history is not a line through every run. Repeat runs of one measurement configuration
made close together are replicates and are drawn as one point with their spread (for a
local snapshot only a ``--repeat`` group: its separate runs are deterministic, and a
difference between them is drift, not noise; see ``drift.noise``); a change of
model, API, prompt or metric is a break in the series, named; a quarantined run is a
measurement failure and is shown apart from the line with its reason; and a snapshot
measured by two methods (forced choice by log-probabilities, sampling) is shown side by
side with the method difference named, never joined by a line or paired item by item.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from monitor.drift.noise import MAX_RUNS, describe_group, replicate_units
from monitor.drift.stats import noise_floor
from monitor.metrics.registry import METRICS
from monitor.report.model import (
    ConfigurationChange,
    MethodComparison,
    MethodRun,
    RepeatGroup,
    RepeatGroupAxis,
    Trend,
    TrendBreak,
    TrendGroup,
    TrendPoint,
    TrendQuarantined,
)
from monitor.store.configuration import describe_changes
from monitor.store.models import StoredRun
from monitor.store.view import StoreView

# Consecutive runs of one configuration are drawn as one point when they span at most
# this long; a configuration kept longer is a series and is drawn run by run.
MAX_GROUP_SPAN = timedelta(days=14)
# A trend plot is 580 px wide: beyond this many points a long history adds bytes to the
# report, not information. Longer series are condensed (see ``condense``), so a report's
# size grows with the snapshots and axes it shows, not with the nights behind them.
MAX_TREND_POINTS = 60
# The latest runs of a condensed series stay one point each.
RECENT_POINTS = 14


def _change_texts(old: StoredRun, new: StoredRun) -> tuple[str, ...]:
    return tuple(
        f"{label} {a} → {b}" if a is not None else label
        for label, a, b in describe_changes(old.configuration, new.configuration)
    )


def quarantined_runs(
    view: StoreView, since: datetime | None
) -> list[tuple[StoredRun, set[tuple[str, str]]]]:
    """Quarantined runs of the window with the (benchmark, axis) they have measures on;
    read once per report, not once per trend."""
    return [
        (r, {(m.benchmark, m.axis) for m in view.measures(r.run_id)})
        for r in view.runs_since(since)
        if r.status == "quarantined"
    ]


def trend_history(
    view: StoreView,
    trend: Trend,
    quarantined: Sequence[tuple[StoredRun, set[tuple[str, str]]]] = (),
) -> Trend:
    """``trend`` with its repeat groups, configuration breaks and the ``quarantined`` runs
    (from :func:`quarantined_runs`) of its snapshot, metric and axis."""
    pts = trend.points
    runs = view.runs(p.run_id for p in pts)

    def unit(i: int) -> str | None:
        """Points with one non-None unit id, next to each other, are one repeat group."""
        r = runs[pts[i].run_id]
        if r.origin != "local":
            return pts[i].group
        return f"{pts[i].group}:{r.repeat_group}" if r.repeat_group else None

    groups: list[TrendGroup] = []
    breaks: list[TrendBreak] = []
    segment: list[int] = []

    def close(seg: list[int]) -> None:
        if len(seg) < 2:
            return
        first, last = pts[seg[0]], pts[seg[-1]]
        if last.started_at - first.started_at > MAX_GROUP_SPAN:
            return
        run = runs[first.run_id]
        cfg = run.configuration
        what = str(cfg.get("model") or "?") + (f" via {cfg['api']}" if cfg.get("api") else "")
        groups.append(
            TrendGroup(
                key=unit(seg[0]) or "",
                label=f"{len(seg)} runs of {what}",
                run_ids=tuple(pts[i].run_id for i in seg),
            )
        )

    for i, p in enumerate(pts):
        if i and pts[i - 1].group != p.group:
            prev = pts[i - 1]
            breaks.append(
                TrendBreak(
                    at=p.started_at,
                    before_run_id=prev.run_id,
                    after_run_id=p.run_id,
                    changes=_change_texts(runs[prev.run_id], runs[p.run_id]),
                )
            )
        if segment and (unit(i) is None or unit(segment[-1]) != unit(i)):
            close(segment)
            segment = []
        if unit(i) is not None:
            segment.append(i)
    close(segment)
    apart = [
        TrendQuarantined(run_id=r.run_id, started_at=r.started_at, reason=r.notes)
        for r, axes in quarantined
        if r.snapshot_id == trend.snapshot_id
        and r.metric == trend.metric
        and (trend.benchmark, trend.axis) in axes
    ]
    return trend.model_copy(
        update={"groups": tuple(groups), "breaks": tuple(breaks), "quarantined": tuple(apart)}
    )


def condense(trend: Trend, max_points: int = MAX_TREND_POINTS) -> Trend:
    """``trend`` with at most about ``max_points`` points: runs a reader may ask about stay
    one point each (the first, the latest ``RECENT_POINTS``, flagged runs, members of
    repeat groups, the runs on either side of a configuration break); the others are
    summarised per time bin, consecutive runs of one configuration only, as one point
    (``TrendPoint.runs``). A series within the limit is returned as it is.
    """
    pts = trend.points
    if len(pts) <= max_points:
        return trend
    keep = {pts[0].run_id, *(p.run_id for p in pts[-RECENT_POINTS:])}
    keep |= {p.run_id for p in pts if p.flagged}
    keep |= {r for g in trend.groups for r in g.run_ids}
    keep |= {r for b in trend.breaks for r in (b.before_run_id, b.after_run_id)}
    bins = max(1, max_points - len(keep))
    t0 = pts[0].started_at
    width = (pts[-1].started_at - t0) / bins

    def bin_of(p: TrendPoint) -> int:
        return int((p.started_at - t0) / width) if width else 0

    out: list[TrendPoint] = []
    bucket: list[TrendPoint] = []

    def flush() -> None:
        if len(bucket) == 1:
            out.append(bucket[0])
        elif bucket:
            out.append(_summary_point(bucket))
        bucket.clear()

    for p in pts:
        if p.run_id in keep:
            flush()
            out.append(p)
            continue
        if bucket and (bin_of(bucket[0]) != bin_of(p) or bucket[0].group != p.group):
            flush()
        bucket.append(p)
    flush()
    return trend.model_copy(update={"points": tuple(out)})


def _summary_point(points: Sequence[TrendPoint]) -> TrendPoint:
    """Consecutive runs of one configuration as one point (see ``TrendPoint``)."""
    values = [p.value for p in points if p.value is not None]
    lows = [p.ci_low for p in points if p.ci_low is not None]
    highs = [p.ci_high for p in points if p.ci_high is not None]
    return TrendPoint(
        run_id=points[-1].run_id,
        runs=sum(p.runs for p in points),
        first_run_id=points[0].first_run_id or points[0].run_id,
        started_at=points[len(points) // 2].started_at,
        status="complete",
        value=sum(values) / len(values) if values else None,
        ci_low=min(lows) if lows else None,
        ci_high=max(highs) if highs else None,
        n=points[-1].n,
        group=points[0].group,
    )


def _configuration_rows(run: StoredRun) -> tuple[ConfigurationChange, ...]:
    cfg = run.configuration
    rows = [
        ("model", cfg.get("model")),
        ("API", cfg.get("api")),
        ("metric", cfg.get("metric")),
        ("option order", cfg.get("option_order")),
        ("prompt", cfg.get("prompt")),
        ("parameters", cfg.get("parameters")),
    ]
    return tuple(ConfigurationChange(label=k, new=v) for k, v in rows if v not in (None, {}, ""))


def repeat_groups(view: StoreView, snapshot_id: str, since: datetime | None) -> list[RepeatGroup]:
    """Every repeat group (≥ 2 complete runs of one configuration) of the snapshot with a
    run in the window, with its noise per axis as distributions."""
    out: list[RepeatGroup] = []
    cache: dict[str, StoredRun] = {}

    def run(rid: str) -> StoredRun:
        if rid not in cache:
            cache[rid] = view.run(rid)
        return cache[rid]

    for g, unit in replicate_units(view.configuration_groups(snapshot_id), run):
        span = [run(unit[0]).started_at, run(unit[-1]).started_at]
        if since is not None and span[-1] < since:
            continue
        members = unit[-MAX_RUNS:]
        outcomes = [view.axis_outcomes(r) for r in members]
        axes = []
        for key in sorted({k for o in outcomes for k in o}):
            repeats = [o[key].outcomes for o in outcomes if key in o]
            floor = noise_floor(repeats)
            if floor is None:
                continue
            rates = []
            for rep in repeats:
                decided = [x for x in rep.values() if x in ("stereo", "anti")]
                if decided:
                    rates.append(sum(x == "stereo" for x in decided) / len(decided))
            axes.append(
                RepeatGroupAxis(
                    benchmark=key[0],
                    axis=key[1],
                    pair_flip_rates=floor.pair_rates,
                    flip_floor=floor.upper,
                    bias_rates=tuple(rates),
                )
            )
        description = describe_group(g, len(unit), span)
        if len(members) < len(unit):
            description += f" (noise from the latest {len(members)})"
        out.append(
            RepeatGroup(
                snapshot_id=snapshot_id,
                key=g.key,
                description=description,
                run_ids=unit,
                configuration=_configuration_rows(run(unit[-1])),
                axes=tuple(axes),
            )
        )
    return out


def method_comparisons(view: StoreView, trends: Sequence[Trend]) -> list[MethodComparison]:
    """Snapshot axes measured by more than one metric: the latest run of each, side by side."""
    by_axis: dict[tuple[str, str, str], list[Trend]] = {}
    for t in trends:
        if t.points:
            by_axis.setdefault((t.snapshot_id, t.benchmark, t.axis), []).append(t)
    out: list[MethodComparison] = []
    for (snapshot, benchmark, axis), ts in sorted(by_axis.items()):
        if len(ts) < 2:
            continue
        runs = []
        for t in sorted(ts, key=lambda t: t.points[-1].started_at):
            p = t.points[-1]
            spec = METRICS.get(t.metric or "")
            runs.append(
                MethodRun(
                    metric=t.metric or "?",
                    method=spec.summary if spec else "unregistered metric",
                    run_id=p.run_id,
                    started_at=p.started_at,
                    value=p.value,
                    ci=(p.ci_low, p.ci_high) if p.ci_low is not None else None,
                    n=p.n,
                )
            )
        names = " vs ".join(r.metric for r in runs)
        out.append(
            MethodComparison(
                snapshot_id=snapshot,
                benchmark=benchmark,
                axis=axis,
                runs=tuple(runs),
                note=f"method change ({names}): each rate follows its own method's definition, "
                "so the runs are not compared item by item and their difference includes the "
                "change of method, not only of the model",
            )
        )
    return out
