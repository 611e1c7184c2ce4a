"""The sentence-pair family's longitudinal tables in the report: repeat groups and their
noise, and methods side by side, read through the typed reading protocol.

A repeat group is ≥ 2 complete runs of one measurement configuration: their disagreement
(the flip rate of every pair of runs, each run's bias rate) is the measurement's own
noise. A snapshot axis measured by two methods (forced choice by log-probabilities,
sampling) is shown side by side with the method difference named, never joined by a line
or paired item by item.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from monitor.drift.noise import MAX_RUNS, describe_group, replicate_units
from monitor.drift.stats import noise_floor
from monitor.metrics.registry import METRICS
from monitor.readmodel.models import StoredRun
from monitor.readmodel.reader import RunReader
from monitor.report.model import (
    ConfigurationChange,
    MethodComparison,
    MethodRun,
    RepeatGroup,
    RepeatGroupAxis,
    Trend,
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


def repeat_groups(view: RunReader, snapshot_id: str, since: datetime | None) -> list[RepeatGroup]:
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


def method_comparisons(view: RunReader, trends: Sequence[Trend]) -> list[MethodComparison]:
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
