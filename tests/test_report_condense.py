"""Long trends are condensed so a report grows with what it shows, not with history
(``monitor.report.history.condense``): what a reader may ask about stays one point
per run, the rest is averaged per period within one configuration, every run counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from test_report_cases import point

from monitor.report import Trend, render_html
from monitor.report.history import MAX_TREND_POINTS, RECENT_POINTS, condense
from monitor.report.model import ReportInput, TrendBreak, TrendGroup

START = datetime(2026, 1, 1, 2, 0, tzinfo=UTC)


def long_trend(nights: int = 400) -> Trend:
    pts = []
    for d in range(nights):
        p = point(f"r{d:03d}", START + timedelta(days=d), 50 + d % 13, 106)
        group = "old" if d < 300 else "new"  # a configuration break at night 300
        flagged = "regression: 12 anti→stereo" if d == 150 else None
        pts.append(p.model_copy(update={"group": group, "flagged": flagged}))
    return Trend(
        snapshot_id="snap",
        benchmark="bhed-caste",
        axis="caste",
        points=tuple(pts),
        groups=(TrendGroup(key="old:g", label="3 runs", run_ids=("r000", "r001", "r002")),),
        breaks=(
            TrendBreak(at=pts[300].started_at, before_run_id="r299", after_run_id="r300",
                       changes=("model a → b",)),
        ),
    )  # fmt: skip


def test_a_short_trend_is_left_as_it_is():
    t = long_trend(400).model_copy(update={"breaks": ()})
    short = t.model_copy(update={"points": t.points[:MAX_TREND_POINTS]})
    assert condense(short) is short
    assert condense(t, max_points=400) is t


def test_a_long_trend_keeps_what_a_reader_asks_about_and_counts_every_run():
    t = long_trend(400)
    c = condense(t)
    assert len(c.points) <= MAX_TREND_POINTS + 5 and len(c.points) < len(t.points) / 3
    assert sum(p.runs for p in c.points) == 400
    single = {p.run_id for p in c.points if p.runs == 1}
    assert {"r000", "r001", "r002", "r150", "r299", "r300"} <= single
    assert {f"r{d:03d}" for d in range(400 - RECENT_POINTS, 400)} <= single
    times = [p.started_at for p in c.points]
    assert times == sorted(times)
    by_id = {p.run_id: p for p in t.points}
    order = [p.run_id for p in t.points]
    for p in c.points:
        if p.runs == 1:
            assert p == by_id[p.run_id]
            continue
        covered = order[order.index(p.first_run_id) : order.index(p.run_id) + 1]
        assert len(covered) == p.runs
        members = [by_id[r] for r in covered]
        assert {m.group for m in members} == {p.group}  # never across a break
        assert p.value == pytest.approx(sum(m.value for m in members) / len(members))
        assert p.ci_low == min(m.ci_low for m in members)
        assert p.ci_high == max(m.ci_high for m in members)
        assert p.flagged is None
    # condensing twice changes nothing more
    assert condense(c) == c


def test_the_plot_caption_counts_runs_not_points():
    c = condense(long_trend(400))
    report = ReportInput(title="t", generated_at=START + timedelta(days=401), trends=(c,))
    html = render_html(report)
    assert f"400 runs ({len(c.points)} points: older runs of one configuration averaged" in html


def test_points_built_from_columns_are_made_safe_like_any_report_text():
    """A series' points skip the report model's field walk (``SHOWN_SAFELY``) because the
    columns make their texts safe themselves: controls made visible, secrets redacted,
    in kept points and in summary points alike, exactly as a model built field by field."""
    from monitor.redaction import register
    from monitor.report.history import SeriesColumns, series_trend
    from monitor.report.model import TrendPoint

    secret = "sk-columns-" + "q7" * 12
    register(secret)
    n = 200
    odd = [f"r{d:03d}\x1b]0;{secret}" for d in range(n)]
    raw = {
        "run_ids": odd,
        "started_at": [START + timedelta(days=d) for d in range(n)],
        "statuses": ["complete"] * n,
        "values": [0.5 + (d % 7) / 100 if d != 3 else float("nan") for d in range(n)],
        "ci_lows": [0.4] * n,
        "ci_highs": [0.6] * n,
        "ns": [106] * n,
        "flagged": [f"regression:\u202e {secret}" if d == 150 else None for d in range(n)],
        "groups": [f"key\x07{d // 100}" for d in range(n)],
        "runs": [1] * n,
        "first_run_ids": [None] * n,
    }
    cols = SeriesColumns(**raw)
    for i in (0, 3, 150, n - 1):
        expected = TrendPoint(
            run_id=raw["run_ids"][i], started_at=raw["started_at"][i], status="complete",
            value=raw["values"][i], ci_low=0.4, ci_high=0.6, n=106, flagged=raw["flagged"][i],
            group=raw["groups"][i], runs=1, first_run_id=None,
        )  # fmt: skip
        assert cols.point(i) == expected
    assert cols.point(3).value is None  # NaN → None as before
    trend = series_trend(None, cols, snapshot_id="s", benchmark="b", axis="a")
    summaries = [p for p in trend.points if p.runs > 1]
    assert summaries and len(trend.points) < n
    shown = trend.model_dump_json()
    assert secret not in shown and "\x1b" not in shown and "\u202e" not in shown
    assert "\x07" not in shown and "[REDACTED]" in shown
    for p in trend.points:
        assert p == TrendPoint(**p.model_dump())  # validating again changes nothing
