"""The pair family's terminal output: ``run``'s one row per axis (``cli_table``), and
``show``'s tables (``show_tables``: every measure, each bias rate in context, the identity
rankings) and JSON keys (``show_json``), hooks of ``spec.py`` that the CLI calls as it
calls every family's.

Only numbers and identity-group names are shown here: sentences and which identity was
paired with which stay behind ``show --items --texts``. Every table fits an 80-column log
(``monitor.terminal.measures``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from rich.table import Table as RichTable

from monitor.families.pairs.balanced import from_json
from monitor.families.pairs.identity import ASSOCIATION_RATE, BT_STRENGTH
from monitor.fmt import interval, pct
from monitor.metrics.context import RateView, ScoreContext, score_contexts
from monitor.metrics.panel import PANEL_METRICS
from monitor.records import Measure
from monitor.terminal.measures import heading, measure_value, measures_table, narrow
from monitor.terminal.output import SafeTable as Table

# Per-identity measures of the Indic-Bias taxonomy: drawn as rankings, one table per type.
IDENTITY_MEASURES = (ASSOCIATION_RATE, BT_STRENGTH)


def cli_table(measures: Sequence[Any], title: str) -> RichTable:
    """One row per axis under a row naming its benchmark: the bias rate with its interval,
    the stereo and anti counts among decided items, the ties (never credited to either
    side) and n.

    Where an axis's stereotypes name two or more groups (caste: Brahmins and Dalits),
    the axis's row is its **balanced rate** (``balanced``: the stereotype-win rate at no
    group-name preference, n = the items in its directions), then a row per direction
    ("brahmin items") and the raw rate, labelled as mixing the stereotype with a
    preference for one group's name. Where they name one group only, the row is the raw
    rate and the caption says that a name preference cannot be separated there.

    Laid out as the association tests' table is, so that an 80-column log (a CI job's)
    cuts nothing: no outer edge, numbers never wrap, and only a long name folds. With a
    column each, benchmark and axis were cut to "bhed-reli…" and "caste-con…" there."""
    table = narrow(title)
    table.add_column("benchmark / axis", justify="left", overflow="fold", min_width=8)
    for col in ("bias rate", "95% CI", "stereo", "anti", "ties", "n"):
        table.add_column(col, justify="right", no_wrap=True)
    by_key = {(m.benchmark, m.axis, m.measure): m for m in measures}
    benchmark = None
    one_group: list[str] = []
    # A control (bhed-neutral) names one group by design: it measures the name preference.
    controls = {c for cs in _controls().values() for c in cs}
    for (bench, axis, measure), m in sorted(by_key.items()):
        if measure != "bias_rate":
            continue
        if bench != benchmark:
            benchmark = bench
            heading(table, bench, *[""] * 6)
        tie = by_key.get((bench, axis, "tie_rate"))
        ties = tie.k if tie else 0
        counts = (str(m.k), str(m.n - m.k), str(ties), str(m.n + ties))
        raw = (pct(m.value), interval((m.ci_low, m.ci_high)), *counts)
        details = m.details or {}
        if "balanced" in details:
            b = from_json(details["balanced"])
            n = sum(d.n for d in b.directions)
            table.add_row(
                f"  {axis}: balanced", pct(b.value), interval((b.ci_low, b.ci_high)),
                "", "", "", str(n),
            )  # fmt: skip
            for d in b.directions:
                table.add_row(
                    f"    {d.group} items", pct(d.value), interval((d.ci_low, d.ci_high)),
                    str(d.k), str(d.n - d.k), "", str(d.n),
                )  # fmt: skip
            table.add_row(f"    {RAW_LABEL}", *raw)
            continue
        if "balanced_note" in details and bench not in controls:
            one_group.append(axis)
        table.add_row(f"  {axis}", *raw)
    if one_group:
        table.caption = (
            f"{', '.join(one_group)}: raw rate; the stereotypes name one group, so a "
            "preference for its name is not separated (docs/reading-a-verdict.md)"
        )
        table.caption_justify = "left"
    return table


# The raw rate's label under a balanced axis: it mixes the stereotype with the name
# preference (SmolLM2's caste 38.7% is mostly a preference for "Dalit").
RAW_LABEL = "raw (mixes both)"


def show_tables(measures: Sequence[Measure], metric: str, title: str) -> list[RichTable]:
    """``show``'s tables of a pair run: every measure but the per-identity ones, each bias
    rate in context (the metric panel beside the neutral control), and per identity type
    the identities ranked. A run with no measures (a failed run) has none."""
    tables: list[RichTable] = [measures_table(measures, IDENTITY_MEASURES)] if measures else []
    contexts = score_contexts(measures, metric, _controls())
    if contexts:
        tables.append(context_table(contexts))
    return tables + identity_tables(measures)


def show_json(measures: Sequence[Measure], metric: str) -> dict[str, Any]:
    """``show --format json``'s keys of a pair run: ``context``, each bias rate with its
    control and panel (what the context table shows)."""
    return {"context": contexts_json(score_contexts(measures, metric, _controls()))}


def _controls() -> Mapping[str, tuple[str, ...]]:
    """Benchmark -> its control benchmarks, from the manifest (none if it cannot be read:
    a stored run is still shown, only without its control beside it)."""
    from monitor.benchmarks.manifest import load_manifest
    from monitor.errors import UserInputError

    try:
        manifest = load_manifest()
    except UserInputError:
        return {}
    return {b: spec.controls for b, spec in manifest.benchmarks.items() if spec.controls}


def _rate(r: RateView | None) -> str:
    if r is None:
        return "—"
    return f"{pct(r.value)} {interval((r.ci_low, r.ci_high))}"


def context_table(contexts: Sequence[ScoreContext]) -> Table:
    """Each bias rate under every metric of the panel (the run's own metric first), with
    the neutral control's rate under the same metric beside it, and the share of items on
    which the panel's metrics agree. The control's rate is the model's preference for the
    control's stereotypical-column group in content-free sentences."""
    table = narrow("bias rates in context: the metric panel beside the neutral control")
    table.add_column("benchmark / axis / metric", overflow="fold", min_width=12)
    table.add_column("bias rate [95% CI]", justify="right", no_wrap=True)
    table.add_column("neutral control", justify="right", no_wrap=True)
    for c in contexts:
        heading(table, f"{c.benchmark} / {c.axis}", "", c.control_benchmark or "none")
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
        table = narrow(
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
