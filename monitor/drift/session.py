"""One drift session: choose which runs to compare, compare them, control the FDR once.

The CLI's ``drift`` and ``report`` commands both go through here, so the verdicts a pull
request gates on are exactly the ones the report shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import duckdb

from monitor.drift import inputs
from monitor.drift.compare import ALPHA, AxisComparison, adjust_family, compare_runs
from monitor.drift.stats import NoiseFloor, noise_floor
from monitor.errors import UserInputError


@dataclass(frozen=True)
class Pair:
    new_run_id: str
    baseline_run_id: str | None
    snapshot_id: str
    reason: str | None = None  # why there is no baseline


@dataclass
class DriftResult:
    pairs: list[Pair]
    comparisons: list[AxisComparison] = field(default_factory=list)
    noise_sources: dict[str, str] = field(default_factory=dict)  # snapshot → repeat group used
    alpha: float = ALPHA

    @property
    def regressions(self) -> list[AxisComparison]:
        return [c for c in self.comparisons if c.verdict.label == "regression"]

    def fdr_note(self) -> str:
        tested = sum(1 for c in self.comparisons if c.p_value is not None)
        return (
            f"p (BH) is Benjamini–Hochberg-adjusted over the {tested} paired tests in this "
            f"report (false discovery rate {self.alpha:g}); a drift is flagged only when "
            "p (BH) < alpha and the flip rate exceeds the snapshot's noise floor."
        )


def latest_complete(
    con: duckdb.DuckDBPyConnection, snapshot_id: str, before: datetime | None = None
) -> str | None:
    row = con.execute(
        """
        SELECT run_id FROM runs
        WHERE snapshot_id = ? AND status = 'complete'
          AND (CAST(? AS TIMESTAMPTZ) IS NULL OR started_at < CAST(? AS TIMESTAMPTZ))
        ORDER BY started_at DESC, run_id DESC LIMIT 1
        """,
        [snapshot_id, before, before],
    ).fetchone()
    return row[0] if row else None


def select_pairs(
    con: duckdb.DuckDBPyConnection,
    *,
    run_ids: Sequence[str] = (),
    snapshots: Sequence[str] = (),
    baseline: str | None = None,
    baseline_snapshot: str | None = None,
) -> list[Pair]:
    """Which new runs to compare with which baselines.

    Default: every snapshot's latest complete run against the previous complete run of the
    same snapshot. ``baseline`` fixes the baseline run; ``baseline_snapshot`` compares with
    another snapshot's latest complete run (the pull-request case: new model vs current).
    """
    if run_ids:
        news = [inputs.run_row(con, r)["run_id"] for r in run_ids]
    else:
        snaps = list(snapshots) or [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT snapshot_id FROM runs WHERE status = 'complete' ORDER BY 1"
            ).fetchall()
        ]
        news = []
        for s in snaps:
            rid = latest_complete(con, s)
            if rid is None:
                raise UserInputError(f"snapshot {s!r} has no complete run in the store")
            news.append(rid)
    if baseline is not None and len(news) != 1:
        raise UserInputError("--baseline needs exactly one new run (use --run RUN_ID)")
    pairs: list[Pair] = []
    for rid in news:
        row = inputs.run_row(con, rid)
        if row["status"] == "quarantined":
            raise UserInputError(f"run {rid} is quarantined and cannot be compared")
        if baseline is not None:
            base = inputs.run_row(con, baseline)["run_id"]
        elif baseline_snapshot is not None:
            base = latest_complete(con, baseline_snapshot)
            if base is None:
                raise UserInputError(f"snapshot {baseline_snapshot!r} has no complete run")
        else:
            base = inputs.default_baseline(con, rid)
        reason = None if base else "no earlier complete run of this snapshot"
        pairs.append(Pair(rid, base, row["snapshot_id"], reason))
    return pairs


def snapshot_noise(
    con: duckdb.DuckDBPyConnection, snapshot_id: str, alpha: float
) -> tuple[str | None, dict[inputs.AxisKey, NoiseFloor]]:
    """Noise floor per axis from the snapshot's latest repeat group with ≥2 complete runs.

    The repeats are stored runs, so the floor is recomputed from stored data, never guessed.
    """
    row = con.execute(
        """
        SELECT repeat_group, max(run_id) FROM runs
        WHERE snapshot_id = ? AND status = 'complete' AND repeat_group IS NOT NULL
        GROUP BY repeat_group HAVING count(*) >= 2
        ORDER BY max(started_at) DESC LIMIT 1
        """,
        [snapshot_id],
    ).fetchone()
    if row is None:
        return None, {}
    floors: dict[inputs.AxisKey, NoiseFloor] = {}
    for key, repeats in inputs.repeat_outcomes(con, row[1]).items():
        if (floor := noise_floor(repeats, alpha)) is not None:
            floors[key] = floor
    return row[0], floors


def run_drift(
    con: duckdb.DuckDBPyConnection, pairs: Sequence[Pair], *, alpha: float = ALPHA
) -> DriftResult:
    """Compare every pair, then BH-adjust across all snapshot × axis tests together."""
    result = DriftResult(pairs=list(pairs), alpha=alpha)
    comps: list[AxisComparison] = []
    for p in pairs:
        if p.baseline_run_id is None:
            continue
        group, floors = snapshot_noise(con, p.snapshot_id, alpha)
        if group:
            result.noise_sources[p.snapshot_id] = group
        comps += compare_runs(
            con, p.new_run_id, p.baseline_run_id, alpha=alpha, noise=floors or None
        )
    result.comparisons = adjust_family(comps, alpha=alpha)
    return result
