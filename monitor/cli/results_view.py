"""Rendering a run's measures for `show`: the measure table, bias rates in context (neutral
control and metric panel beside each score) and the identity tables of the Indic-Bias
taxonomy benchmark. Rich tables for people; the JSON shapes for machines.

Only numbers and identity-group names are shown here: stereotype texts and which
identity was paired with which stay behind `show --items --texts`.

Every table fits an 80-column log (a CI job's) without cutting anything: no outer edge,
numbers never wrap, a name folds rather than ending in "…", and what would be a column per
benchmark and axis is a row naming them, with the rows that belong to it indented below.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

from rich.text import Text

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


def _narrow(title: str) -> Table:
    return Table(title=title, title_justify="left", show_edge=False, pad_edge=False)


def _heading(table: Table, text: str, *cells: str) -> None:
    """A row naming what the indented rows below it belong to (a benchmark and axis)."""
    table.add_row(Text(text, style="bold"), *cells)


def measures_table(measures: Sequence[Measure]) -> Table:
    """Every measure but the per-identity ones (those get :func:`identity_tables`), under
    a row naming its benchmark and axis, in the order the run stored them."""
    levels = sorted({f"{m.confidence:.0%}" for m in measures}) or ["95%"]
    table = _narrow(f"per-axis measures ({'/'.join(levels)} intervals; method per row)")
    rows = [m for m in measures if m.measure not in IDENTITY_MEASURES]
    # A measure's name is never folded (the method is, where something must give).
    names = max((len(m.measure) + 2 for m in rows), default=12)
    table.add_column("benchmark / axis", overflow="fold", min_width=max(12, names))
    for col in ("value", "interval", "k", "n"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("method", overflow="fold", min_width=6)
    shown = None
    for m in rows:
        if (m.benchmark, m.axis) != shown:
            shown = (m.benchmark, m.axis)
            _heading(table, f"{m.benchmark} / {m.axis}", *[""] * 5)
        value, ci = measure_value(m)
        # "cluster-bootstrap-percentile" as words, so that a narrow log wraps it between
        # them (the JSON keeps the stored name)
        method = _method(m).replace("-", " ")
        table.add_row(f"  {m.measure}", value, ci, str(m.k), str(m.n), method)
    return table


def _rate(r: RateView | None) -> str:
    if r is None:
        return "—"
    return f"{pct(r.value)} {interval((r.ci_low, r.ci_high))}"


def context_table(contexts: Sequence[ScoreContext]) -> Table:
    """Each bias rate under every metric of the panel (the run's own metric first), with
    the neutral control's rate under the same metric beside it, and the share of items on
    which the panel's metrics agree. The control's rate is the model's preference for the
    control's stereotypical-column group in content-free sentences."""
    table = _narrow("bias rates in context: the metric panel beside the neutral control")
    table.add_column("benchmark / axis / metric", overflow="fold", min_width=12)
    table.add_column("bias rate [95% CI]", justify="right", no_wrap=True)
    table.add_column("neutral control", justify="right", no_wrap=True)
    for c in contexts:
        _heading(table, f"{c.benchmark} / {c.axis}", "", c.control_benchmark or "none")
        others = [m for m in PANEL_METRICS if m != c.metric and m in c.panel]
        table.add_row(f"  {c.metric} (this run)", _rate(c.rate), _rate(c.control))
        for m in others:
            table.add_row(f"  {m}", _rate(c.panel[m]), _rate(c.control_panel.get(m)))
        if c.agreement is not None:
            n = len(others) + 1
            agree = f"{pct(c.agreement.value)} of {c.agreement.n}"
            table.add_row(f"  all {n} agree" if n > 2 else "  both agree", agree, "")
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
        table = _narrow(
            f"{benchmark} · {type_}: identities by Bradley–Terry strength, strongest first "
            "(95% intervals: cluster bootstrap over stereotypes; Elo: the Indic-Bias paper's "
            "rating of the same pairs, no interval)"
        )
        table.add_column("rank", justify="right", no_wrap=True)
        table.add_column("identity", overflow="fold")
        table.add_column("BT strength", justify="right", no_wrap=True)
        table.add_column("Elo", justify="right", no_wrap=True)
        table.add_column("association rate", justify="right", no_wrap=True)
        table.add_column("n", justify="right", no_wrap=True)

        def order(item: tuple[str, dict[str, Measure]]) -> tuple[int, str]:
            bt = item[1].get(BT_STRENGTH)
            return (bt.details.get("rank", 10**6) if bt else 10**6, item[0])

        for name, ms in sorted(by_name.items(), key=order):
            bt, ar = ms.get(BT_STRENGTH), ms.get(ASSOCIATION_RATE)
            rank = "—"
            if bt is not None:
                lo, hi = bt.details.get("rank_ci", [None, None])
                rank = f"{bt.details.get('rank')} [{lo}, {hi}]"
            # Two decimals, as the interval has: the third is far inside it.
            strength = "—"
            if bt is not None and bt.value is not None:
                strength = f"{bt.value:+.2f} {measure_value(bt)[1]}"
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
