"""Rendering a run's measures for `show`: the measure table, bias rates in context (neutral
control and metric panel beside each score) and the identity tables of the Indic-Bias
taxonomy benchmark. Rich tables for people; the JSON shapes for machines.

Only numbers and identity-group names are shown here: stereotype texts and which
identity was paired with which stay behind `show --items --texts`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

from monitor.cli.output import SafeTable as Table
from monitor.fmt import interval, pct
from monitor.metrics.context import RateView, ScoreContext
from monitor.metrics.identity import ASSOCIATION_RATE, BT_STRENGTH
from monitor.metrics.panel import PANEL_METRICS
from monitor.records import Measure

IDENTITY_MEASURES = (ASSOCIATION_RATE, BT_STRENGTH)


def _method(m: Measure) -> str:
    return m.method.split(" (")[0].split(";")[0]


def measure_json(run_id: str, m: Measure) -> dict[str, Any]:
    """A measure as ``show --format json`` prints it: its stored row, run id first and
    ``details`` null when empty (the store writes no empty details)."""
    return {"run_id": run_id, **asdict(m), "details": m.details or None}


def measure_value(m: Measure) -> tuple[str, str]:
    """(value, interval) as text: rates in percent, ranking scores as signed log-odds."""
    if m.kind == "rate":
        return pct(m.value), interval((m.ci_low, m.ci_high))
    if m.value is None:
        return "—", "—"
    ci = "—" if m.ci_low is None or m.ci_high is None else f"[{m.ci_low:+.2f}, {m.ci_high:+.2f}]"
    return f"{m.value:+.3f}", ci


def measures_table(measures: Sequence[Measure]) -> Table:
    """Every measure but the per-identity ones (those get :func:`identity_tables`)."""
    levels = sorted({f"{m.confidence:.0%}" for m in measures}) or ["95%"]
    table = Table(
        title=f"per-axis measures ({'/'.join(levels)} intervals; method per row)",
        title_justify="left",
    )
    for col in ("benchmark", "axis", "measure", "value", "interval", "k", "n", "method"):
        table.add_column(col)
    for m in measures:
        if m.measure in IDENTITY_MEASURES:
            continue
        value, ci = measure_value(m)
        table.add_row(m.benchmark, m.axis, m.measure, value, ci, str(m.k), str(m.n), _method(m))
    return table


def _rate(r: RateView | None) -> str:
    if r is None:
        return "—"
    return f"{pct(r.value)} {interval((r.ci_low, r.ci_high))}"


def _with_control(ctx: ScoreContext, metric: str) -> str:
    r = ctx.panel.get(metric)
    if r is None:
        return "—"
    c = ctx.control_panel.get(metric)
    return pct(r.value) + (f" (ctl {pct(c.value)})" if c is not None else "")


def context_table(contexts: Sequence[ScoreContext]) -> Table:
    """Each bias rate with the neutral control and the three metrics' rates beside it."""
    table = Table(
        title="bias rates in context: neutral control (preference for the control's "
        "stereotypical-column group in content-free sentences) and the metric panel "
        "(ctl = the control under that metric)",
        title_justify="left",
    )
    for col in (
        "benchmark",
        "axis",
        "bias rate [95% CI]",
        "neutral control [95% CI]",
        *PANEL_METRICS,
        "all 3 agree",
    ):
        table.add_column(col)
    for c in contexts:
        table.add_row(
            c.benchmark,
            c.axis,
            f"{_rate(c.rate)} {c.metric}",
            (f"{_rate(c.control)} {c.control_benchmark}" if c.control else "—"),
            *(_with_control(c, m) for m in PANEL_METRICS),
            pct(c.agreement.value) + f" of {c.agreement.n}" if c.agreement else "—",
        )
    return table


def identity_tables(measures: Iterable[Measure]) -> list[Table]:
    """Per identity type: association rate and Bradley–Terry rank with intervals, and the
    Indic-Bias paper's Elo of the same pairs (no interval), strongest first."""
    rows: dict[tuple[str, str], dict[str, dict[str, Measure]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for m in measures:
        if m.measure in IDENTITY_MEASURES and "/" in m.axis:
            type_, name = m.axis.split("/", 1)
            rows[(m.benchmark, type_)][name][m.measure] = m
    tables = []
    for (benchmark, type_), by_name in sorted(rows.items()):
        table = Table(
            title=f"{benchmark} · {type_}: identities by Bradley–Terry strength "
            "(intervals: cluster bootstrap over stereotypes, 95%)",
            title_justify="left",
        )
        for col in (
            "rank [95% CI]",
            "identity",
            "BT strength [95% CI]",
            "paper Elo",
            "association rate [95% CI]",
            "n",
        ):
            table.add_column(col)

        def order(item: tuple[str, dict[str, Measure]]) -> tuple[int, str]:
            bt = item[1].get(BT_STRENGTH)
            return (bt.details.get("rank", 10**6) if bt else 10**6, item[0])

        for name, ms in sorted(by_name.items(), key=order):
            bt, ar = ms.get(BT_STRENGTH), ms.get(ASSOCIATION_RATE)
            rank = "—"
            if bt is not None:
                lo, hi = bt.details.get("rank_ci", [None, None])
                rank = f"{bt.details.get('rank')} [{lo}, {hi}]"
            strength = " ".join(measure_value(bt)) if bt else "—"
            elo = f"{bt.details['paper_elo']:.0f}" if bt and "paper_elo" in bt.details else "—"
            table.add_row(
                rank,
                name,
                strength,
                elo,
                f"{pct(ar.value)} {interval((ar.ci_low, ar.ci_high))}" if ar else "—",
                str(ar.n) if ar else "—",
            )
        tables.append(table)
    return tables


def contexts_json(contexts: Sequence[ScoreContext]) -> list[dict[str, Any]]:
    return [asdict(c) for c in contexts]
