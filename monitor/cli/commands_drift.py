"""`quality`, `drift` and `report`: checking and comparing stored runs."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from monitor.cli.commands_db import DbOpt, FmtOpt, _store
from monitor.cli.commands_snapshots import SnapshotsDirOpt, use_snapshots_dir
from monitor.cli.model_options import model_options_command, parsed
from monitor.importers.common import parse_day
from monitor.terminal.output import Format, err, out, print_json

if TYPE_CHECKING:
    from monitor.contract.capabilities import Drift
    from monitor.store.snapshot import AsOf


def _as_of(value: str | None) -> AsOf | None:
    """``--as-of``'s value parsed (``monitor.store.snapshot.parse_as_of``), or None."""
    from monitor.store.snapshot import parse_as_of

    return None if value is None else parse_as_of(value)


AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="Read a DuckLake --db as it was at this snapshot number "
        "(a report's lake_snapshot) or time (ISO 8601, UTC unless an offset is "
        "given): the newest snapshot committed by then. A DuckDB file has none.",
    ),
]


class DriftFormat(StrEnum):
    """`drift --format`: the verdict lines (default), the full table, or JSON."""

    table = "table"
    table_wide = "table-wide"
    json = "json"


DriftFmtOpt = Annotated[
    DriftFormat,
    typer.Option(
        "--format",
        help="table: the two runs, then one line per axis (axis, old → new, Δ with its "
        "interval, MDE, verdict) at the width of the terminal or COLUMNS; table-wide: the "
        "full table with p-values, counts and reasons; json: everything, for machines.",
    ),
]


def _selection_model():
    from monitor.app.drift import DriftSelection

    return (DriftSelection,)


# ``drift``'s and ``report``'s command classes: the runs and baselines to compare and the
# error rates are ``DriftSelection``'s fields, listed first (drift) or after --title.
DRIFT_COMMAND = model_options_command(_selection_model, after=None)
REPORT_COMMAND = model_options_command(_selection_model, after="title")


def quality(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix.")],
    db: DbOpt = None,
    fmt: FmtOpt = Format.table,
) -> None:
    """Re-run the results quality suite on a stored run and print what failed.

    The outcome is appended to the run's validations. Exit 1 when the suite fails. Only a
    finished run (complete or quarantined) is judged: a running, interrupted or failed
    one is refused (exit 2) and left as it is.
    """
    from monitor.jobs.lifecycle import RunLifecycle

    store = _store(db)
    with store.read() as view:
        rid = view.resolve_run(run_id).run_id
    # The same gate every run passed when it finished: a complete run that fails now is
    # quarantined, and so never a baseline or a trend point again.
    result = RunLifecycle(store).recheck(rid).result
    if fmt is Format.json:
        print_json(
            {
                "run_id": rid,
                "suite": result.suite,
                "success": result.success,
                "failures": [f.reason for f in result.failures],
            }
        )
    else:
        out.print(f"run {rid}: suite {result.suite} {'passed' if result.success else 'FAILED'}")
        for f in result.failures:
            out.print(f"  - {f.reason}")
    if not result.success:
        raise typer.Exit(1)


FailOnOpt = Annotated[
    str,
    typer.Option(
        "--fail-on",
        help="'regression': exit 1 when a regression is flagged that no other valid "
        "metric of the panel contradicts; 'robust': only when every other valid metric "
        "confirms it (a change no other metric read is not robust); 'any': on any "
        "flagged change; 'never'.",
    ),
]
FlipsOpt = Annotated[
    bool,
    typer.Option(
        "--show-flips",
        help="List the ids of items that flipped (add `show RUN --items --texts` to read them).",
    ),
]


def drift(
    ctx: typer.Context,
    fail_on: FailOnOpt = "never",
    show_flips: FlipsOpt = False,
    db: DbOpt = None,
    fmt: DriftFmtOpt = DriftFormat.table,
    snapshots_dir: SnapshotsDirOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """Compare runs with their baselines per snapshot × axis (paired exact McNemar, BH).

    Only the axes both runs scored are compared; an axis only one run scored reads "not
    scored in the new run" (or "in the baseline"). A control (the neutral set beside
    caste) is never a verdict or a flag: it is shown under the axis it controls.

    Each flagged change is read across the metric panel (the same items under cll,
    cll-reference and ull, each by its paired interval of the change): robust (every
    other valid metric moves the same way, clear of zero), fragile (one includes zero),
    contradicted (one moves the other way), or not cross-checked (no other valid metric
    scored the items). A metric not valid for a model (cll-reference where the tokenizer
    adds a BOS the reference code does not skip; a tokenizer that cannot read the
    script) is marked "not valid for this model" and does not count.

    Exit codes: 0 no flagged change matched --fail-on; 1 a flagged change matched
    --fail-on; 2 bad input or errors.
    """
    from monitor.app.drift import DriftRequest, DriftSelection
    from monitor.app.drift import drift as compare_runs

    use_snapshots_dir(snapshots_dir)
    request = DriftRequest(parsed(ctx, DriftSelection), db, fail_on, _as_of(as_of))
    done = compare_runs(request, on_event=lambda m: err.print(m))
    if fmt is DriftFormat.json:
        print_json(_drift_json(done.result, show_flips, done.snapshot_of))
    elif fmt is DriftFormat.table_wide:
        _drift_table(done.result, show_flips)
    else:
        _drift_lines(done.result, show_flips, done.snapshot_of)
    if done.failed:
        raise typer.Exit(1)


def _drift_json(result, show_flips: bool, snapshot_of: dict[str, str]) -> dict:
    from monitor.cli.output_family import family_json
    from monitor.contract.capabilities import DriftJsonRequest

    parts = _by_family(result, lambda d: d.json)
    generic = [c for hook, mine in parts if hook is None for c in mine]

    def pair(p):
        d = dict(p.__dict__)
        if d.get("role") == "previous run":
            del d["role"]  # the default; only a configuration-change pair says so
        return d

    return {
        "alpha": result.alpha,
        "confidence": result.confidence,
        "fdr_note": result.fdr_note(),
        "pairs": [pair(p) for p in result.pairs],
        # Families whose comparisons have a JSON shape of their own (the pairs' axes,
        # association tests): their keys, always present, in the registry's order.
        **{
            k: v
            for hook, mine in parts
            if hook is not None
            for k, v in hook(DriftJsonRequest(mine, snapshot_of, result, show_flips)).items()
        },
        # The other families: one generic list (absent when there are none).
        **(
            {"family_comparisons": [family_json(c, snapshot_of) for c in generic]}
            if generic
            else {}
        ),
    }


def _by_family(
    result, hook: Callable[[Drift], Callable[..., Any] | None]
) -> list[tuple[Callable[..., Any] | None, list]]:
    """Each family in the registry's order: its drift ``hook`` (None where it has none, and
    its comparisons are generic records that ``cli.output_family`` draws) and its
    comparisons of ``result`` (possibly none: a family's JSON keys are always present)."""
    from monitor.contract.registry import families

    return [
        (hook(f.drift()) if f.drift is not None else None, result.of_family(f.name))
        for f in families()
    ]


def _no_baseline(result) -> None:
    """Name each new run that has no baseline, and why (on stderr, every format)."""
    for p in result.pairs:
        if p.baseline_run_id is None:
            err.print(f"{p.snapshot_id}: run {p.new_run_id} has no baseline ({p.reason})")


def _drift_lines(result, show_flips: bool, snapshot_of: dict[str, str]) -> None:
    """The default output: the count of flags, then each family's comparisons (its
    ``drift_lines`` hook, or ``cli.output_family`` for generic records), per pair of runs
    named once, every line within the terminal's or COLUMNS' width."""
    from monitor.cli.output_family import family_lines
    from monitor.contract.registry import families
    from monitor.terminal.lines import wrap
    from monitor.terminal.output import output_width

    width = output_width()
    level = f"{100 * result.confidence:g}%"
    _no_baseline(result)
    tested = sum(1 for c in result.comparisons if c.p_value is not None)
    flagged = sum(1 for c in result.comparisons if c.verdict.flagged)
    # A family whose Δ and MDE share one unit says so here (the pairs': percentage
    # points); the others name their units in their own headings (d is not in points).
    units = "".join(
        f"; {f.drift_units}" for f in families() if f.drift_units and result.of_family(f.name)
    )
    lines = wrap(
        f"drift: {flagged} flagged of {tested} paired tests (BH at {result.alpha:g}; "
        f"{level} intervals{units})",
        width,
    )
    for hook, mine in _by_family(result, lambda d: d.lines):
        if hook is not None:
            lines += hook(mine, snapshot_of, width, level, drift=result, show_flips=show_flips)
        elif mine:
            lines += family_lines(mine, snapshot_of, width)
    for line in lines:
        out.print(line, markup=False)
    for line in wrap(
        "flagged: BH-adjusted p below the false discovery rate and beyond the noise of repeat "
        "runs; MDE: the smallest change detectable with 80% power. Reasons, p-values and "
        "what each verdict means: --format table-wide or --format json.",
        width,
    ):
        out.print(line, markup=False)


def _drift_table(result, show_flips: bool) -> None:
    """``--format table-wide``: each family's table (its ``drift_table`` hook, or the
    generic one), then the FDR note and what changed between each pair of runs."""
    from monitor.cli.output_family import family_table
    from monitor.terminal.lines import change_lines, wrap
    from monitor.terminal.output import output_width

    _no_baseline(result)
    level = f"{100 * result.confidence:g}%"
    parts = _by_family(result, lambda d: d.table)
    for hook, mine in parts:
        if hook is not None:
            hook(mine, level, drift=result, show_flips=show_flips)
        elif mine:
            family_table(mine, level)
    width = output_width()
    lines = wrap(result.fdr_note(), width)
    seen = set()
    for c in (c for _, mine in parts for c in mine):
        key = (c.baseline_run_id, c.new_run_id)
        if key in seen:
            continue
        seen.add(key)
        lines += change_lines(c, width)
    for line in lines:
        out.print(line, markup=False)


def report(
    ctx: typer.Context,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for report.md, report.html, report.json.")
    ] = Path("results/report"),
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Start of the history to cover (YYYY-MM-DD). Default: the whole history.",
        ),
    ] = None,
    title: Annotated[str, typer.Option("--title")] = "bias-monitor report",
    show_flips: Annotated[
        bool, typer.Option("--show-flips", help="Include flipped item ids.")
    ] = False,
    summary: Annotated[
        Path | None,
        typer.Option(
            "--summary", help="Also append the Markdown to this file (e.g. $GITHUB_STEP_SUMMARY)."
        ),
    ] = None,
    db: DbOpt = None,
    snapshots_dir: SnapshotsDirOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """Write the Markdown (PR comment / job summary), self-contained HTML and JSON reports.

    On a DuckLake --db each names the lake snapshot it read (lake_snapshot in the JSON),
    and --as-of that snapshot builds the same report again after more runs have landed.
    """
    from monitor.app.drift import DriftSelection
    from monitor.app.report import ReportRequest
    from monitor.app.report import report as write_report

    use_snapshots_dir(snapshots_dir)
    request = ReportRequest(
        selection=parsed(ctx, DriftSelection),
        db=db,
        out_dir=out_dir,
        since=parse_day(since),
        title=title,
        show_flips=show_flips,
        summary=summary,
        as_of=_as_of(as_of),
    )
    for kind, path in write_report(request, on_event=lambda m: err.print(m)).items():
        out.print(f"{kind}: {path}")
