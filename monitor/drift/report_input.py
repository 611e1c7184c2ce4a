"""Hand drift's findings to the report room in the report's own shapes.

Drift owns the store queries (history, quality results, run list); the report room only
renders the ``ReportInput`` built here.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb

from monitor.drift.compare import AxisComparison
from monitor.drift.session import DriftResult
from monitor.report.model import (
    Comparison,
    ProvenanceChange,
    ProvenanceDiff,
    QualityResult,
    ReportInput,
    RunSummary,
    Trend,
    TrendPoint,
)


def _interval(lo, hi):
    return None if lo is None or hi is None else (lo, hi)


def comparison_model(c: AxisComparison, metric: str | None, *, with_flips: bool) -> Comparison:
    return Comparison(
        snapshot_id="",  # filled by the caller, which knows the run's snapshot
        benchmark=c.benchmark,
        axis=c.axis,
        new_run_id=c.new_run_id,
        baseline_run_id=c.baseline_run_id,
        n_paired=c.n_paired,
        rate_old=c.rate_old.value,
        ci_old=_interval(c.rate_old.ci_low, c.rate_old.ci_high),
        rate_new=c.rate_new.value,
        ci_new=_interval(c.rate_new.ci_low, c.rate_new.ci_high),
        delta=c.paired.delta,
        delta_ci=_interval(c.paired.ci_low, c.paired.ci_high),
        b_to_anti=c.b,
        c_to_stereo=c.c,
        p_value=c.p_value,
        p_adjusted=c.p_adjusted,
        noise_floor=c.noise.upper if c.noise else None,
        verdict=c.verdict.label,
        reason=c.verdict.reason,
        metric=metric,
        flipped_item_ids=(c.flipped_to_anti + c.flipped_to_stereo) if with_flips else None,
    )


def _run_meta(con: duckdb.DuckDBPyConnection, run_ids: set[str]) -> dict[str, dict]:
    if not run_ids:
        return {}
    rows = con.execute(
        "SELECT run_id, snapshot_id, metric FROM runs WHERE list_contains(?, run_id)",
        [sorted(run_ids)],
    ).fetchall()
    return {r[0]: {"snapshot_id": r[1], "metric": r[2]} for r in rows}


def trends(
    con: duckdb.DuckDBPyConnection, since: datetime | None, flags: dict[tuple[str, str, str], str]
) -> list[Trend]:
    """Bias rate over time per snapshot × benchmark axis, from complete runs only."""
    rows = con.execute(
        """
        SELECT r.snapshot_id, m.benchmark, m.axis, r.metric, r.run_id,
               timezone('UTC', r.started_at), r.status, m.value, m.ci_low, m.ci_high, m.n
        FROM axis_measures m JOIN runs r USING (run_id)
        WHERE m.measure = 'bias_rate' AND r.status = 'complete'
          AND (CAST(? AS TIMESTAMP) IS NULL
               OR timezone('UTC', r.started_at) >= CAST(? AS TIMESTAMP))
        ORDER BY r.snapshot_id, m.benchmark, m.axis, r.metric, r.started_at, r.run_id
        """,
        [since.replace(tzinfo=None) if since else None] * 2,
    ).fetchall()
    series: dict[tuple[str, str, str, str], list[TrendPoint]] = {}
    for snap, bench, axis, metric, rid, started, status, value, lo, hi, n in rows:
        series.setdefault((snap, bench, axis, metric), []).append(
            TrendPoint(
                run_id=rid,
                started_at=started.replace(tzinfo=UTC),
                status=status,
                value=value,
                ci_low=lo,
                ci_high=hi,
                n=n,
                flagged=flags.get((rid, bench, axis)),
            )
        )
    return [
        Trend(snapshot_id=s, benchmark=b, axis=a, metric=m, points=tuple(pts))
        for (s, b, a, m), pts in series.items()
    ]


def quality_results(con: duckdb.DuckDBPyConnection, since: datetime | None) -> list[QualityResult]:
    rows = con.execute(
        """
        SELECT v.run_id, v.suite, v.success, v.results
        FROM validations v JOIN runs r USING (run_id)
        WHERE (CAST(? AS TIMESTAMP) IS NULL
               OR timezone('UTC', r.started_at) >= CAST(? AS TIMESTAMP))
        QUALIFY row_number() OVER (
            PARTITION BY v.run_id, v.suite ORDER BY v.validated_at DESC) = 1
        ORDER BY v.run_id
        """,
        [since.replace(tzinfo=None) if since else None] * 2,
    ).fetchall()
    out = []
    for rid, suite, success, results in rows:
        doc = json.loads(results) if isinstance(results, str) else (results or {})
        failures = tuple(
            str(f.get("reason", f)) if isinstance(f, dict) else str(f)
            for f in doc.get("failures", [])
        )
        out.append(QualityResult(run_id=rid, suite=suite, success=bool(success), failures=failures))
    return out


def run_summaries(con: duckdb.DuckDBPyConnection, since: datetime | None) -> list[RunSummary]:
    rows = con.execute(
        """
        SELECT run_id, snapshot_id, timezone('UTC', started_at), status, metric, notes
        FROM runs
        WHERE (CAST(? AS TIMESTAMP) IS NULL
               OR timezone('UTC', started_at) >= CAST(? AS TIMESTAMP))
        ORDER BY started_at, run_id
        """,
        [since.replace(tzinfo=None) if since else None] * 2,
    ).fetchall()
    return [
        RunSummary(
            run_id=r[0],
            snapshot_id=r[1],
            started_at=r[2].replace(tzinfo=UTC),
            status=r[3],
            metric=r[4],
            reason=r[5] if r[3] != "complete" else None,
        )
        for r in rows
    ]


def build_report_input(
    con: duckdb.DuckDBPyConnection,
    result: DriftResult,
    *,
    title: str,
    since: datetime | None,
    with_flips: bool = False,
) -> ReportInput:
    meta = _run_meta(con, {c.new_run_id for c in result.comparisons})
    comps, diffs, flags = [], {}, {}
    for c in result.comparisons:
        m = meta.get(c.new_run_id, {})
        model = comparison_model(c, m.get("metric"), with_flips=with_flips)
        comps.append(model.model_copy(update={"snapshot_id": m.get("snapshot_id", "")}))
        if c.verdict.flagged:
            flags[(c.new_run_id, c.benchmark, c.axis)] = f"{c.verdict.label}: {c.verdict.reason}"
        key = (c.baseline_run_id, c.new_run_id)
        if key not in diffs:
            diffs[key] = ProvenanceDiff(
                snapshot_id=m.get("snapshot_id", ""),
                baseline_run_id=c.baseline_run_id,
                new_run_id=c.new_run_id,
                attribution=c.attribution,
                changes=tuple(
                    ProvenanceChange(field=f.field, old=f.old, new=f.new, category=f.category)
                    for f in c.provenance.changes
                ),
            )
    notes = [
        f"{p.snapshot_id}: run {p.new_run_id} has no baseline ({p.reason})"
        for p in result.pairs
        if p.baseline_run_id is None
    ]
    notes += [
        f"{s}: noise floor measured from repeat group {g}"
        for s, g in sorted(result.noise_sources.items())
    ]
    return ReportInput(
        title=title,
        generated_at=datetime.now(UTC),
        since=since,
        comparisons=tuple(comps),
        trends=tuple(trends(con, since, flags)),
        provenance=tuple(diffs.values()),
        quality=tuple(quality_results(con, since)),
        runs=tuple(run_summaries(con, since)),
        notes=tuple(notes),
        fdr_note=result.fdr_note(),
        alpha=result.alpha,
    )
