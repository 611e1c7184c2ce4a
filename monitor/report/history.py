"""The longitudinal shapes of a report: trends with their repeat groups, configuration
breaks and quarantined runs, read through the typed reading protocol (``readmodel.reader``).

A history is not a line through every run. Repeat runs of one measurement configuration
made close together are replicates and are drawn as one point with their spread (for a
local snapshot only a ``--repeat`` group: its separate runs are deterministic, and a
difference between them is drift, not noise; see ``drift.noise``); a change of
model, API, prompt or metric is a break in the series, named; a quarantined run is a
measurement failure and is shown apart from the line with its reason. (A family's own
longitudinal tables, e.g. the pairs' repeat groups with their flip rates and methods side
by side, live in its folder.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from monitor.display import safe_text
from monitor.readmodel.configuration import describe_changes
from monitor.readmodel.models import StoredRun
from monitor.readmodel.reader import RunReader
from monitor.report.frozen import SHOWN_SAFELY
from monitor.report.model import (
    Trend,
    TrendBreak,
    TrendGroup,
    TrendPoint,
    TrendQuarantined,
)

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
    view: RunReader, since: datetime | None
) -> list[tuple[StoredRun, set[tuple[str, str]]]]:
    """Quarantined runs of the window with the (benchmark, axis) they have measures on;
    read once per report, not once per trend."""
    return [
        (r, {(m.benchmark, m.axis) for m in view.measures(r.run_id)})
        for r in view.runs_since(since)
        if r.status == "quarantined"
    ]


class SafeTexts:
    """:func:`monitor.display.safe_text` of each distinct text, computed once: a run id
    recurs in every series of its run, a configuration key in every point of its run."""

    def __init__(self) -> None:
        self._done: dict[str, str] = {}

    def __call__(self, text: str | None) -> str | None:
        if text is None:
            return None
        if (safe := self._done.get(text)) is None:
            safe = self._done[text] = safe_text(text)
        return safe


@dataclass(frozen=True, slots=True)
class SeriesColumns:
    """A trend's points column by column (entry ``i`` of each is point ``i``), oldest first.

    A year of nightly runs is ~150k points over a report's series, most of which
    :func:`condense` folds away; a validated ``TrendPoint`` per run would cost more than
    the rest of the report, so a point becomes a model only when the report keeps it
    (:meth:`point`). A stored run is one run (``runs`` 1, ``first_run_ids`` None); a
    condensed series may hold summary points.

    The columns hold the store's texts as they are (run ids look runs up); a kept point's
    texts are made safe by ``safe`` (:class:`SafeTexts`, once per distinct text for all
    of a report's series), so the point is validated with ``SHOWN_SAFELY`` instead of
    having its fields walked again.
    """

    run_ids: Sequence[str]
    started_at: Sequence[datetime]
    statuses: Sequence[str]
    values: Sequence[float | None]
    ci_lows: Sequence[float | None]
    ci_highs: Sequence[float | None]
    ns: Sequence[int]
    flagged: Sequence[str | None]
    groups: Sequence[str | None]
    runs: Sequence[int]
    first_run_ids: Sequence[str | None]
    safe: SafeTexts = field(default_factory=SafeTexts)

    @classmethod
    def of_points(cls, points: Sequence[TrendPoint]) -> SeriesColumns:
        return cls(
            run_ids=[p.run_id for p in points],
            started_at=[p.started_at for p in points],
            statuses=[p.status for p in points],
            values=[p.value for p in points],
            ci_lows=[p.ci_low for p in points],
            ci_highs=[p.ci_high for p in points],
            ns=[p.n for p in points],
            flagged=[p.flagged for p in points],
            groups=[p.group for p in points],
            runs=[p.runs for p in points],
            first_run_ids=[p.first_run_id for p in points],
        )

    def __len__(self) -> int:
        return len(self.run_ids)

    def point(self, i: int) -> TrendPoint:
        """Point ``i`` as a validated model (NaN to None; its texts are already safe)."""
        safe = self.safe
        return TrendPoint.model_validate(
            {
                "run_id": safe(self.run_ids[i]),
                "runs": self.runs[i],
                "first_run_id": safe(self.first_run_ids[i]),
                "started_at": self.started_at[i],
                "status": safe(self.statuses[i]),
                "value": self.values[i],
                "ci_low": self.ci_lows[i],
                "ci_high": self.ci_highs[i],
                "n": self.ns[i],
                "flagged": safe(self.flagged[i]),
                "group": safe(self.groups[i]),
            },
            context=SHOWN_SAFELY,
        )


def series_trend(
    runs: Mapping[str, StoredRun] | None,
    cols: SeriesColumns,
    quarantined: Sequence[tuple[StoredRun, set[tuple[str, str]]]] = (),
    *,
    max_points: int = MAX_TREND_POINTS,
    **fields: Any,
) -> Trend:
    """The ``Trend`` of one series (``fields``: snapshot id, benchmark, axis, metric, ...)
    over ``cols``: with its repeat groups, configuration breaks and the ``quarantined``
    runs (from :func:`quarantined_runs`) of its snapshot, metric and axis when ``runs``
    (the stored runs of ``cols``, read once for all series) is given (a bias-rate
    history), then condensed to what a plot can show."""
    groups: tuple[TrendGroup, ...] = ()
    breaks: tuple[TrendBreak, ...] = ()
    apart: tuple[TrendQuarantined, ...] = ()
    if runs is not None:
        groups, breaks = _groups_and_breaks(runs, cols)
        apart = tuple(
            TrendQuarantined(run_id=r.run_id, started_at=r.started_at, reason=r.notes)
            for r, axes in quarantined
            if r.snapshot_id == fields["snapshot_id"]
            and r.metric == fields.get("metric")
            and (fields["benchmark"], fields["axis"]) in axes
        )
    return Trend(
        **fields,
        points=_condensed_points(cols, groups, breaks, max_points),
        groups=groups,
        breaks=breaks,
        quarantined=apart,
    )


def _groups_and_breaks(
    runs: Mapping[str, StoredRun], cols: SeriesColumns
) -> tuple[tuple[TrendGroup, ...], tuple[TrendBreak, ...]]:
    """The repeat groups and configuration breaks of a series.

    Points with one non-None unit id, next to each other, are one repeat group: for a
    local run its ``--repeat`` group within its configuration, for an API run its
    configuration (see the module docstring)."""
    ids, started, keys = cols.run_ids, cols.started_at, cols.groups

    def unit_of(rid: str, group: str | None) -> str | None:
        r = runs[rid]
        if r.origin != "local":
            return group
        return f"{group}:{r.repeat_group}" if r.repeat_group else None

    units = [unit_of(rid, g) for rid, g in zip(ids, keys, strict=True)]
    groups: list[TrendGroup] = []
    breaks: list[TrendBreak] = []
    segment: list[int] = []

    def close(seg: list[int]) -> None:
        if len(seg) < 2:
            return
        if started[seg[-1]] - started[seg[0]] > MAX_GROUP_SPAN:
            return
        cfg = runs[ids[seg[0]]].configuration
        what = str(cfg.get("model") or "?") + (f" via {cfg['api']}" if cfg.get("api") else "")
        groups.append(
            TrendGroup(
                key=units[seg[0]] or "",
                label=f"{len(seg)} runs of {what}",
                run_ids=tuple(ids[i] for i in seg),
            )
        )

    for i, unit in enumerate(units):
        if i and keys[i - 1] != keys[i]:
            breaks.append(
                TrendBreak(
                    at=started[i],
                    before_run_id=ids[i - 1],
                    after_run_id=ids[i],
                    changes=_change_texts(runs[ids[i - 1]], runs[ids[i]]),
                )
            )
        if segment and (unit is None or units[segment[-1]] != unit):
            close(segment)
            segment = []
        if unit is not None:
            segment.append(i)
    close(segment)
    return tuple(groups), tuple(breaks)


def condense(trend: Trend, max_points: int = MAX_TREND_POINTS) -> Trend:
    """``trend`` with at most about ``max_points`` points (see :func:`_condensed_points`);
    a series within the limit is returned as it is."""
    if len(trend.points) <= max_points:
        return trend
    points = _condensed_points(
        SeriesColumns.of_points(trend.points), trend.groups, trend.breaks, max_points
    )
    return trend.model_copy(update={"points": points})


def _condensed_points(
    cols: SeriesColumns,
    groups: Sequence[TrendGroup],
    breaks: Sequence[TrendBreak],
    max_points: int,
) -> tuple[TrendPoint, ...]:
    """At most about ``max_points`` points: runs a reader may ask about stay one point each
    (the first, the latest ``RECENT_POINTS``, flagged runs, members of repeat groups, the
    runs on either side of a configuration break); the others are summarised per time
    bin, consecutive runs of one configuration only, as one point (``TrendPoint.runs``).
    A series within the limit keeps every point.
    """
    n = len(cols)
    if n <= max_points:
        return tuple(cols.point(i) for i in range(n))
    ids, started, keys = cols.run_ids, cols.started_at, cols.groups
    keep = {ids[0], *ids[-RECENT_POINTS:]}
    keep |= {rid for rid, flag in zip(ids, cols.flagged, strict=True) if flag}
    keep |= {r for g in groups for r in g.run_ids}
    keep |= {r for b in breaks for r in (b.before_run_id, b.after_run_id)}
    bins = max(1, max_points - len(keep))
    t0 = started[0]
    width = (started[-1] - t0) / bins
    out: list[TrendPoint] = []
    # The runs not kept, between two kept ones, of one time bin and one configuration:
    # consecutive, so the bucket is the index range [start, i).
    start, bucket_bin = -1, 0

    def flush(stop: int) -> None:
        if start < 0:
            return
        if stop - start == 1:
            out.append(cols.point(start))
        else:
            out.append(_summary_point(cols, start, stop))

    for i in range(n):
        if ids[i] in keep:
            flush(i)
            start = -1
            out.append(cols.point(i))
            continue
        at = int((started[i] - t0) / width) if width else 0
        if start >= 0 and (bucket_bin != at or keys[start] != keys[i]):
            flush(i)
            start = -1
        if start < 0:
            start, bucket_bin = i, at
    flush(n)
    return tuple(out)


def _summary_point(cols: SeriesColumns, start: int, stop: int) -> TrendPoint:
    """Consecutive runs ``start`` to ``stop - 1`` of one configuration as one point (see
    ``TrendPoint``)."""
    values = [v for v in cols.values[start:stop] if v is not None]
    lows = [v for v in cols.ci_lows[start:stop] if v is not None]
    highs = [v for v in cols.ci_highs[start:stop] if v is not None]
    last, safe = stop - 1, cols.safe
    return TrendPoint.model_validate(
        {
            "run_id": safe(cols.run_ids[last]),
            "runs": sum(cols.runs[start:stop]),
            "first_run_id": safe(cols.first_run_ids[start] or cols.run_ids[start]),
            "started_at": cols.started_at[start + (stop - start) // 2],
            "status": "complete",
            "value": sum(values) / len(values) if values else None,
            "ci_low": min(lows) if lows else None,
            "ci_high": max(highs) if highs else None,
            "n": cols.ns[last],
            "group": safe(cols.groups[start]),
        },
        context=SHOWN_SAFELY,
    )
