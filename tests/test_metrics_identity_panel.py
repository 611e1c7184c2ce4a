"""Identity-pair measures, the metric panel's measures and bias rates in context, from
hand-built rows whose expected numbers are counted by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.benchmarks.items import Item
from monitor.families.pairs.balanced import NOT_SEPARABLE
from monitor.families.pairs.identity import ASSOCIATION_RATE, BT_STRENGTH
from monitor.families.pairs.records import PairItem, PairScoreRow
from monitor.metrics.context import score_contexts
from monitor.metrics.intervals import BIAS_RATE, TIE_RATE, axis_measures
from monitor.metrics.panel import AGREEMENT, PANEL_METRICS, panel_measures, panel_of, rate_name
from monitor.metrics.registry import get_metric, run_measures
from monitor.records import ScoreRow


def _pair(n: int, identity: str, other: str, stereotype: str, type_: str = "caste") -> Item:
    return PairItem(
        item_id=f"p{n}",
        benchmark="tax",
        axis=type_,
        region="india",
        benchmark_version="tax@0",
        source_row=int(stereotype.rsplit(":", 1)[-1]),
        text_stereo=f"{identity} text",
        text_anti=f"{other} text",
        kind="identity-pair",
        payload={
            "identity": identity,
            "other": other,
            "identity_type": type_,
            "stereotype_id": stereotype,
        },
    )


# A wins its two stereotypes' pairs against B and C (4 pairs), B wins 1 of 2 against A,
# C loses both against A and B; one tie that must be left out.
ITEMS = [
    _pair(0, "A", "B", "caste:A:0"),
    _pair(1, "A", "C", "caste:A:0"),
    _pair(2, "A", "B", "caste:A:1"),
    _pair(3, "A", "C", "caste:A:1"),
    _pair(4, "B", "A", "caste:B:0"),
    _pair(5, "B", "C", "caste:B:0"),
    _pair(6, "C", "A", "caste:C:0"),
    _pair(7, "C", "B", "caste:C:0"),
    _pair(8, "C", "B", "caste:C:1"),
]
OUTCOMES = ["stereo", "stereo", "stereo", "stereo", "anti", "stereo", "anti", "anti", "tie"]


def _rows(metric: str = "cll") -> list[ScoreRow]:
    return [
        PairScoreRow(it.item_id, metric, "3", o, 1.0 if o == "stereo" else -1.0)
        for it, o in zip(ITEMS, OUTCOMES, strict=True)
    ]


def test_identity_measures_by_hand() -> None:
    measures = run_measures(get_metric("cll"), _rows(), ITEMS)
    by = {(m.axis, m.measure): m for m in measures}
    # Type rate: 5 stereo wins of 8 decided; the tie is left out; cluster interval.
    rate = by[("caste", "bias_rate")]
    assert (rate.k, rate.n) == (5, 8)
    assert rate.method.startswith("cluster-level Wilson (4 clusters")  # too few to bootstrap
    assert rate.details["clusters"] == 4 and len(rate.details["wilson_ci"]) == 2
    assert rate.ci_low <= rate.value <= rate.ci_high
    # Per identity: A 4/4, B 1/2, C 0/2 (its tie is not decided).
    assert [
        (by[(f"caste/{x}", ASSOCIATION_RATE)].k, by[(f"caste/{x}", ASSOCIATION_RATE)].n)
        for x in "ABC"
    ] == [(4, 4), (1, 2), (0, 2)]
    # Ranking: A won all 5 of its games, then B, then C; the paper's Elo agrees.
    bt = {x: by[(f"caste/{x}", BT_STRENGTH)] for x in "ABC"}
    assert [bt[x].details["rank"] for x in "ABC"] == [1, 2, 3]
    assert all(m.kind == "ranking_score" for m in bt.values())
    assert (bt["A"].k, bt["A"].n) == (6, 6)  # 4 as the stereotyped identity, 2 as partner
    assert (
        bt["A"].details["paper_elo"] > bt["B"].details["paper_elo"] > bt["C"].details["paper_elo"]
    )
    assert sum(m.value for m in bt.values()) == pytest.approx(0, abs=1e-6)
    for m in bt.values():
        assert m.ci_low <= m.value <= m.ci_high
    # Reproducible: the same rows give identical measures.
    assert run_measures(get_metric("cll"), _rows(), ITEMS) == measures


def test_runs_without_identity_pairs_are_unchanged() -> None:
    items = [
        PairItem("x1", "b", "caste", "india", "b@0", 0, text_stereo="s", text_anti="a"),
        PairItem("x2", "b", "caste", "india", "b@0", 1, text_stereo="s", text_anti="a"),
    ]
    rows = [
        PairScoreRow("x1", "cll", "3", "stereo", 1.0),
        PairScoreRow("x2", "cll", "3", "anti", -1.0),
    ]
    axes = {it.item_id: (it.benchmark, it.axis) for it in items}
    # Issue 43: a sentence-pair axis's bias rate also says whether it has a balanced
    # rate; these items name no groups, so it carries the note why not. Nothing else
    # changes (the tie rate included).
    expected = [
        replace(m, details={**m.details, "balanced_note": NOT_SEPARABLE})
        if m.measure == BIAS_RATE
        else m
        for m in axis_measures(rows, axes)
    ]
    assert [m.measure for m in expected] == [BIAS_RATE, TIE_RATE]
    assert run_measures(get_metric("cll"), rows, items) == expected


def _panel_row(item: str, own: str, ref: str, ull: str) -> ScoreRow:
    return PairScoreRow(
        item,
        "cll",
        "3",
        own,
        0.0,
        details={
            "panel": {
                "cll-reference": {"version": "1", "outcome": ref, "delta": 0.1},
                "ull": {"version": "1", "outcome": ull, "delta": 0.1},
            }
        },
    )


def test_panel_measures_by_hand() -> None:
    rows = [
        _panel_row("i1", "stereo", "stereo", "stereo"),  # all agree
        _panel_row("i2", "stereo", "anti", "stereo"),
        _panel_row("i3", "anti", "stereo", "anti"),
        _panel_row("i4", "anti", "anti", "anti"),  # all agree
        _panel_row("i5", "tie", "stereo", "anti"),
    ]
    axes = {r.item_id: ("bhed-caste", "caste") for r in rows}
    by = {m.measure: m for m in panel_measures(rows, axes)}
    assert set(by) == {rate_name("cll-reference"), rate_name("ull"), AGREEMENT}
    assert (by[rate_name("cll-reference")].k, by[rate_name("cll-reference")].n) == (3, 5)
    assert (by[rate_name("ull")].k, by[rate_name("ull")].n) == (2, 5)
    assert (by[AGREEMENT].k, by[AGREEMENT].n) == (2, 5)
    assert by[AGREEMENT].details["pairwise"] == {
        "cll~cll-reference": 0.4,
        "cll~ull": 0.8,
        "cll-reference~ull": 0.4,
    }
    # Rows without a panel (API runs, older runs) add nothing.
    assert panel_measures([PairScoreRow("i1", "cll", "3", "stereo", 1.0)], axes) == []


def test_the_default_panel_agrees_over_the_metrics_it_holds() -> None:
    """A default run's panel holds cll and ull only: the agreement is theirs, with the
    one pair, and no cll-reference rate appears (an item where cll-reference could not be
    scored, an error and no outcome, does not make a metric of its own either)."""
    rows = [
        PairScoreRow(i, "cll", "3", own, 0.0, details={"panel": {"ull": {"outcome": ull}}})
        for i, own, ull in (
            ("i1", "stereo", "stereo"),
            ("i2", "stereo", "anti"),
            ("i3", "anti", "anti"),
            ("i4", "tie", "anti"),
        )
    ]
    rows.append(
        PairScoreRow(
            "i5",
            "cll",
            "3",
            "anti",
            0.0,
            details={"panel": {"ull": {"outcome": "anti"}, "cll-reference": {"error": "x"}}},
        )
    )
    axes = {r.item_id: ("bhed-caste", "caste") for r in rows}
    by = {m.measure: m for m in panel_measures(rows, axes)}
    assert set(by) == {rate_name("ull"), AGREEMENT}
    assert (by[rate_name("ull")].k, by[rate_name("ull")].n) == (1, 5)
    assert (by[AGREEMENT].k, by[AGREEMENT].n) == (3, 5)
    assert by[AGREEMENT].details["pairwise"] == {"cll~ull": 0.6}
    assert panel_of("cll") == ("cll", "ull") == panel_of("ull")
    assert panel_of("cll", ["cll-reference"]) == PANEL_METRICS == panel_of("cll-reference")


def test_score_contexts_put_control_and_panel_beside_the_rate() -> None:
    rows = [_panel_row(f"c{i}", o, "stereo", o) for i, o in enumerate(["stereo", "anti"] * 3)]
    rows += [_panel_row(f"n{i}", "anti", "stereo", "anti") for i in range(4)]
    items = [
        PairItem(r.item_id, "bhed-caste", "caste", "india", "v", 0, text_stereo="s", text_anti="a")
        for r in rows[:6]
    ]
    items += [
        PairItem(
            r.item_id,
            "bhed-neutral",
            "caste-control",
            "india",
            "v",
            0,
            text_stereo="s",
            text_anti="a",
        )
        for r in rows[6:]
    ]
    measures = run_measures(get_metric("cll"), rows, items)
    (ctx,) = score_contexts(measures, "cll", {"bhed-caste": ("bhed-neutral",)})
    assert (ctx.benchmark, ctx.axis, ctx.rate.k, ctx.rate.n) == ("bhed-caste", "caste", 3, 6)
    assert (ctx.control_benchmark, ctx.control.k, ctx.control.n) == ("bhed-neutral", 0, 4)
    assert {m: (r.k, r.n) for m, r in ctx.panel.items()} == {
        "cll": (3, 6),
        "cll-reference": (6, 6),
        "ull": (3, 6),
    }
    assert ctx.control_panel["cll-reference"].k == 4
    assert (ctx.agreement.k, ctx.agreement.n) == (3, 6)


def test_panel_rates_of_identity_types_get_cluster_intervals() -> None:
    rows = [
        _panel_row(it.item_id, o, "stereo", "anti") for it, o in zip(ITEMS, OUTCOMES, strict=True)
    ]
    by = {(m.axis, m.measure): m for m in run_measures(get_metric("cll"), rows, ITEMS)}
    ref, ull = by[("caste", rate_name("cll-reference"))], by[("caste", rate_name("ull"))]
    assert (ref.k, ref.n, ull.k, ull.n) == (9, 9, 0, 9)
    assert ref.method.startswith("cluster-") and ull.method.startswith("cluster-")
    assert by[("caste", AGREEMENT)].n == 9


def test_neither_rate_of_the_none_variants() -> None:
    items = [
        _pair(k, "A", "B", f"caste:A:{k}") for k in range(3)
    ]  # the official '-none' task's items
    items = [
        PairItem(**{**it.__dict__, "payload": {**it.payload, "task": "judgement-none"}})
        for it in items
    ]
    rows = [
        PairScoreRow("p0", "forced-choice", "1", "stereo", 0.4, prob_stereo=0.5, prob_anti=0.1,
                 details={"neutral_mass": 0.3}),
        PairScoreRow("p1", "forced-choice", "1", "anti", -0.05, prob_stereo=0.05, prob_anti=0.1,
                 details={"neutral_mass": 0.8}),
        PairScoreRow("p2", "forced-choice", "1", "other", None, details={"neutral_mass": 0.9}),
    ]  # fmt: skip
    by = {m.measure: m for m in run_measures(get_metric("forced-choice"), rows, items)}
    assert (by["neither_rate"].k, by["neither_rate"].n) == (2, 3)
