"""The association-test family's terminal output: its table in `run` and `show`
(``cli_table``), and its comparisons in `drift` (``drift_lines``, ``drift_table``,
``drift_json``), each a hook of ``spec.py`` that the CLI calls without knowing the family.

Effect sizes are not rates: d is printed as a signed number with its interval, the
permutation p and the Holm-adjusted p across the run's tests, never as a percentage.
Terms are never printed here; missing terms are counted (ids with `show --items`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text

from monitor.contract.capabilities import DriftJsonRequest
from monitor.fmt import MINUS, MISSING, pvalue
from monitor.terminal.output import out


def num(x: float | None, digits: int = 3) -> str:
    """A signed d with a true minus sign, as the report and the other families print."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return MISSING
    return f"{x:+.{digits}f}".replace("-", MINUS)


def mde_text(x: float | None) -> str:
    """The minimum detectable |Δd|: "±0.97"; a dash when there is none."""
    return MISSING if x is None else f"±{x:.2f}"


def _get(m: Any, key: str) -> Any:
    return m.get(key) if isinstance(m, dict) else getattr(m, key)


def is_effect(m: Any) -> bool:
    return _get(m, "kind") == "effect_size"


def item_scores(view: Any, run_id: str, *, with_texts: bool) -> list[dict[str, Any]]:
    """The ``item_scores`` hook (``show --items``): a term's row names its test and role
    (target X/Y, attribute A/B) and s(w, ·, ·), not two sentences; the words only with
    ``--texts``. ``view`` is the command's ``StoreView``, passed in, never imported."""
    return view.term_scores(run_id, with_texts=with_texts)


def cli_table(measures: Iterable[Any], title: str) -> RichTable:
    """The ``cli_table`` hook: one row per effect-size measure of a run, under a row that
    names its benchmark. Within 80 columns (a CI log) no number is cut: the benchmark has a
    row of its own, the numbers never wrap, and only a long test name folds."""
    from monitor.terminal.output import SafeTable as Table

    rows = sorted(
        (m for m in measures if is_effect(m)), key=lambda m: (_get(m, "benchmark"), _get(m, "axis"))
    )
    confidence = float(_get(rows[0], "confidence") or 0.95) if rows else 0.95
    # No outer edge: the test names get the columns (an 80-column log has 17 for them).
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("benchmark / test", justify="left", overflow="fold", min_width=8)
    for col in ("d", f"{100 * confidence:g}% CI", "p", "p Holm", "X/Y/A/B", "miss"):
        table.add_column(col, justify="right", no_wrap=True)
    benchmark = None
    for m in rows:
        if _get(m, "benchmark") != benchmark:
            benchmark = _get(m, "benchmark")
            table.add_row(Text(benchmark, style="bold"), *[""] * 6)
        details = _get(m, "details") or {}
        used = details.get("n_used", {})
        ci = "—"
        if _get(m, "ci_low") is not None and _get(m, "ci_high") is not None:
            ci = f"[{num(_get(m, 'ci_low'), 2)}, {num(_get(m, 'ci_high'), 2)}]"
        table.add_row(
            f"  {_get(m, 'axis')}",
            num(_get(m, "value")),
            ci,
            pvalue(_get(m, "p_value")),
            pvalue(details.get("p_holm")),
            "/".join(str(used.get(r, 0)) for r in ("X", "Y", "A", "B")),
            str(details.get("n_missing", 0)),
        )
    return table


def drift_json(request: DriftJsonRequest) -> dict[str, Any]:
    """The ``drift_json`` hook: the family's entries of ``drift --format json`` (always
    present, empty when no association test was compared). Terms have no flips to list."""
    return {"association_tests": [effect_comparison_json(c) for c in request.comparisons]}


def effect_comparison_json(c: Any) -> dict[str, Any]:
    return {
        "benchmark": c.benchmark,
        "test": c.axis,
        "new_run_id": c.new_run_id,
        "baseline_run_id": c.baseline_run_id,
        "metric": c.metric,
        "n_paired": c.n_paired,
        "d_old": c.d_old,
        "d_new": c.d_new,
        "delta": c.delta,
        "delta_ci": [c.ci_low, c.ci_high],
        "delta_ci_method": c.method,
        "confidence": c.confidence,
        "p": c.p_value,
        "p_bh": c.p_adjusted,
        "noise": c.noise,
        "mde": c.mde,
        "mde_method": c.mde_method,
        "verdict": c.verdict.label,
        "reason": c.verdict.reason,
        "attribution": c.attribution,
        "provenance_diff": [f.__dict__ for f in c.provenance.changes if f.category != "run"],
    }


def drift_table(
    comparisons: Iterable[Any], level: str, *, drift: Any = None, show_flips: bool = False
) -> None:
    """The ``drift_table`` hook (``--format table-wide``): per compared pair of runs (named
    in its title, whole) one row per test with d old and new, Δd with its interval, the
    MDE, p, p(BH) and the verdict, laid out to the output width without cutting a number
    (``fitted_table``: cells wrap between words; at a narrow width the raw p, then the MDE
    are left out and named); then each verdict's reason, whose sentences in a cell
    squeezed the rest (run ids and numbers came out as "20261…" and "+0…")."""
    from monitor.terminal.fit import print_pair_tables
    from monitor.terminal.lines import wrap
    from monitor.terminal.output import output_width

    rows = list(comparisons)
    if not rows:
        return
    width = output_width()
    for line in wrap(
        f"association tests: change in d (paired bootstrap; p(BH) over all tests shown; "
        f"{level} intervals)",
        width,
    ):
        out.print(line, markup=False)
    headers = ("benchmark/test", "d old", "d new", f"Δd [{level} CI]", "MDE", "p", "p(BH)")
    print_pair_tables(rows, headers, _table_row, width, droppable=("p", "MDE"))
    for c in rows:  # each reason wrapped to the width, its lines after the first indented
        for line in wrap(
            f"{c.benchmark}/{c.axis}: {c.verdict.label}: {c.verdict.reason}", width, "  "
        ):
            out.print(line, markup=False)


def _table_row(c: Any) -> list[str]:
    """One comparison's cells of the wide table, as the other outputs print d."""
    ci = "—" if c.ci_low is None else f"[{num(c.ci_low, 2)}, {num(c.ci_high, 2)}]"
    return [
        f"{c.benchmark}/{c.axis}",
        num(c.d_old),
        num(c.d_new),
        f"{num(c.delta)} {ci}",
        mde_text(c.mde),
        pvalue(c.p_value),
        pvalue(c.p_adjusted),
        c.verdict.label,
    ]


def drift_lines(
    comparisons: Iterable[Any],
    snapshot_of: dict[str, str],
    width: int,
    level: str,
    *,
    drift: Any = None,
    show_flips: bool = False,
) -> list[str]:
    """The ``drift_lines`` hook: drift's association tests in the default output, within
    ``width`` (an 80-column log): per compared pair the two runs named once, then one line
    per test (d old → new, Δd with its interval, the MDE, BH-adjusted p, verdict) and the
    verdict's reason under it. The
    table of ``--format table-wide`` cut run ids and tests to "20261…" at 80 columns."""
    from monitor.terminal.lines import by_pair, pair_heading, wrap

    what = (
        f"association tests: effect size d, paired bootstrap; {level} intervals; MDE: the "
        "smallest |Δd| detectable with 80% power"
    )
    lines: list[str] = []
    for (new, base), mine in by_pair(comparisons).items():
        lines += pair_heading(new, base, snapshot_of, what, width)
        for c in mine:
            ci = "" if c.ci_low is None else f" [{num(c.ci_low, 2)}, {num(c.ci_high, 2)}]"
            line = (
                f"{c.benchmark}/{c.axis}: d {num(c.d_old)} → {num(c.d_new)} "
                f"Δd {num(c.delta)}{ci} MDE {mde_text(c.mde)} p(BH) {pvalue(c.p_adjusted)} "
                f"{c.verdict.label}"
            )
            lines += wrap(line, width, "    ")
            lines += wrap(f"  {c.verdict.reason}", width, "    ")
        if mine[0].attribution:
            lines += wrap(f"  what changed: {mine[0].attribution}", width, "    ")
    return lines
