"""`bias-monitor run` and `bias-monitor snapshots list`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from monitor.cli.commands_db import DbOpt
from monitor.cli.commands_snapshots import SnapshotsDirOpt, use_snapshots_dir
from monitor.cli.model_options import model_options_command, parsed
from monitor.fmt import interval, pct
from monitor.terminal.output import Format, err, out, print_json, progress_bars

if TYPE_CHECKING:
    from monitor.contract.family import Family
    from monitor.snapshots.model import Snapshot

snapshots_app = typer.Typer(help="Pinned model snapshots (snapshots/*.toml).", no_args_is_help=True)


SnapshotsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--snapshot",
        "-s",
        help="Snapshot id (repeatable). Default: the snapshots "
        "marked default (SmolLM2-135M-Instruct).",
    ),
]
BenchmarksOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--benchmark",
        "-b",
        help="Benchmark id (repeatable). Default: the benchmarks the manifest marks default.",
    ),
]
OnlyApplicableOpt = Annotated[
    bool,
    typer.Option(
        "--only-applicable",
        help="Skip, by name, the snapshots whose kind has no metric for the selected "
        "benchmarks (an embedding model and questions) instead of refusing the "
        "command: for a job that runs one benchmark set over many snapshots.",
    ),
]


def run(
    ctx: typer.Context,
    snapshot: SnapshotsOpt = None,
    benchmark: BenchmarksOpt = None,
    db: DbOpt = None,
    only_applicable: OnlyApplicableOpt = False,
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
    snapshots_dir: SnapshotsDirOpt = None,
) -> None:
    """Score snapshots on benchmarks and store every item score in DuckDB.

    Fetches (or imports from $MONITOR_DATA_MIRROR) the pinned benchmark files when they are
    not cached yet, scores each snapshot, runs the quality gate and prints per-axis bias rates
    with 95% Wilson intervals.
    """
    # The backend's, the scoring's and each family's options are typed models: the
    # command class (RUN_COMMAND) lists their fields after --db and hands them over
    # validated, in ctx.meta.
    from monitor.app import RunEvents, RunRequest
    from monitor.app import run as run_request
    from monitor.app.options import BackendOptions, ScoringOptions, family_option_models

    use_snapshots_dir(snapshots_dir)
    request = RunRequest(
        snapshots=snapshot or (),
        benchmarks=benchmark or (),
        db=db,
        backend=parsed(ctx, BackendOptions),
        scoring=parsed(ctx, ScoringOptions),
        family_options=tuple(parsed(ctx, m) for m in family_option_models()),
        only_applicable=only_applicable,
    )
    events = RunEvents(
        on_event=lambda m: err.print(m),
        on_skip=lambda m: err.print(m, style="yellow"),
        progress=progress_bars,
    )
    result = run_request(request, events)
    _render_run(result, fmt)
    if result.failed:
        raise typer.Exit(1)
    if result.skipped:
        raise typer.Exit(3)


def _render_run(result, fmt: Format) -> None:
    """The outcomes as JSON or as one table per run; "nothing to score" when every
    snapshot was skipped."""
    if not result.snapshots:
        err.print("nothing to score: no selected snapshot applies to these benchmarks")
        if fmt is Format.json:
            print_json([])
    elif fmt is Format.json:
        print_json([_outcome_dict(o) for o in result.outcomes])
    else:
        _print_summary(result.outcomes, result.benchmarks)


def _run_option_models():
    """Every option model of ``run``; where an installed family cannot be loaded, the core's
    alone, so that the CLI still starts (``--help``) and ``run`` says why in one line when
    it asks the registry for the families' models."""
    from monitor.app.options import core_option_models, run_option_models
    from monitor.contract.registry import FamilyRegistryError

    try:
        return run_option_models()
    except FamilyRegistryError:
        return core_option_models()


def _manifest_help(params) -> None:
    """``--benchmark``'s default and ``--controls``' controls, read from the manifest as
    ``run --help`` is drawn (the help names what the manifest marks, never a list written
    here); a manifest that cannot be read leaves the plain wording."""
    from monitor.app.defaults import manifest_defaults
    from monitor.errors import MonitorError

    try:
        found = manifest_defaults()
    except MonitorError:
        return
    by_name = {p.name: p for p in params}
    benchmark, controls = by_name.get("benchmark"), by_name.get("controls")
    if benchmark is not None and found.benchmarks and benchmark.help.endswith("."):
        benchmark.help = f"{benchmark.help[:-1]} ({', '.join(found.benchmarks)})."
    if controls is not None and found.controls:
        listed = ", ".join(f"{c} beside {b} ({rows} rows)" for b, c, rows in found.controls)
        controls.help = f"{controls.help} The manifest's controls: {listed}."


_ModelOptionsCommand = model_options_command(_run_option_models, after="db")


class RunCommand(_ModelOptionsCommand):
    """``run``'s command class: every option model's fields become options after
    ``--db``; its help words the manifest's defaults when it is first drawn."""

    worded = False

    def format_help(self, ctx, formatter) -> None:
        if not self.worded:
            _manifest_help(self.params)
            self.worded = True
        super().format_help(ctx, formatter)


RUN_COMMAND = RunCommand


def _outcome_dict(o) -> dict:
    return {
        "snapshot": o.snapshot_id,
        "run_id": o.run_id,
        "status": o.status,
        "reason": o.reason,
        "resumed_from": o.resumed_from,
        "n_scored": o.n_scored,
        "n_excluded": o.n_excluded,
        "quality_failures": o.quality_failures,
        "measures": [m.__dict__ for m in o.measures],
    }


def _print_family_table(o, title: str) -> Family | None:
    """A run's table: its family's ``cli_table`` hook's, else every measure as a plain row
    (benchmark, subject, measure, value, 95% interval, k/n). Returns the family, whose
    declaration words the line under the table (None where the run names no metric)."""
    from monitor.metrics.registry import get_metric
    from monitor.terminal.output import SafeTable as Table

    family = get_metric(o.metric).family if o.metric else None
    hook = family.terminal().cli_table if family is not None else None
    if hook is not None:
        out.print(hook(o.measures, title))
        return family
    table = Table(title=title, title_justify="left")
    for col in ("benchmark", "subject", "measure", "value", "95% CI", "k/n"):
        left = col in ("benchmark", "subject", "measure")
        table.add_column(col, justify="left" if left else "right")
    for m in sorted(o.measures, key=lambda m: (m.benchmark, m.axis, m.measure)):
        share = m.kind == "rate"
        table.add_row(
            m.benchmark,
            m.axis,
            m.measure,
            (pct(m.value) if share else f"{m.value:+.3f}") if m.value is not None else "-",
            interval((m.ci_low, m.ci_high)) if share else _plain_interval(m.ci_low, m.ci_high),
            f"{m.k}/{m.n}" if m.k is not None and m.n is not None else "",
        )
    out.print(table)
    return family


def _plain_interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"


def _print_summary(outcomes, benches) -> None:

    counts = _Counts.of(benches)
    for o in outcomes:
        if o.status == "skipped":
            err.print(f"skipped {o.snapshot_id}: {o.reason}", style="yellow")
            continue
        if o.status in ("failed", "pending"):
            where = f" (run {o.run_id})" if o.run_id else ""
            style = "red" if o.status == "failed" else "yellow"
            err.print(f"{o.status} {o.snapshot_id}{where}: {o.reason}", style=style)
            continue
        if o.run_id is None:
            continue
        title = f"{o.snapshot_id}  run {o.run_id}  ({o.status})"
        family = _print_family_table(o, title)
        if family is None:
            _print_counts(o, counts, "items")
        else:
            _print_counts(o, counts, family.item_noun, family.count_note)


@dataclass(frozen=True)
class _Counts:
    """What the command's benchmarks left out, counted once for every outcome's line."""

    reasons: dict[str, int]
    not_sampled: int

    @classmethod
    def of(cls, benches) -> _Counts:
        from collections import Counter

        reasons = Counter(e.reason for b in benches for e in b.exclusions)
        return cls(dict(sorted(reasons.items())), sum(len(b.not_sampled) for b in benches))


def _print_counts(o, counts: _Counts, unit: str, note: str = "") -> None:
    """The line under every run's table, whatever its family: what was scored, how many
    source rows were left out and why (the denominator a reader needs), then any quality
    failure. Under a sample (``--size mini``, a per-identity variant) the exclusions are
    counted over the whole files, so the line says so and how many rows were not drawn.
    A reused run (``--reuse``, status ``reused``) was scored by an earlier run, not this
    one: the line leads with which run, whose and when, as the pull-request summary does."""
    done = (
        f"{o.reason}: {o.n_scored} {unit}, not scored again"
        if o.status == "reused"
        else f"scored {o.n_scored} {unit}"
    )
    out.print(
        f"{done}; excluded {o.n_excluded} source rows"
        + (f"; resumed with {o.resumed_from} already stored" if o.resumed_from else "")
        + note
    )
    if counts.reasons:
        out.print("exclusions: " + ", ".join(f"{r} {n}" for r, n in counts.reasons.items()))
    if counts.not_sampled:
        out.print(
            f"a sample: {counts.not_sampled} source rows not drawn"
            + ("; exclusions counted over the whole files" if o.n_excluded else "")
        )
    for f in o.quality_failures:
        err.print(f"quality: {f}", style="red")


@snapshots_app.command("list")
def snapshots_list(
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
    snapshots_dir: SnapshotsDirOpt = None,
) -> None:
    """List the pinned snapshots, what exactly each one means, the metrics that apply
    (the default first) and the folder each came from (yours first, then the shipped
    ones)."""
    from monitor.app.run_plan import warn_stored_credentials
    from monitor.jobs.run import metric_for
    from monitor.kinds import get_kind
    from monitor.snapshots.registry import load_snapshots

    use_snapshots_dir(snapshots_dir)
    snaps = _yours_first(load_snapshots())
    warn_stored_credentials(snaps.values(), lambda m: err.print(m))

    def metrics(s) -> list[str]:
        kind = get_kind(s.kind)
        first = metric_for(s, kind, None)
        return [first, *(m for m in kind.metrics if m != first)]

    if fmt is Format.json:
        print_json(
            [
                s.model_dump(mode="json")
                | {
                    "revision": s.revision_label,
                    "metrics": metrics(s),
                    "folder": str(s.file.parent) if s.file else None,
                }
                for s in snaps.values()
            ]
        )
        return
    from monitor.terminal.output import print_listing

    print_listing(
        ("id", "kind", "default", "metrics", "revision", "folder"),
        [
            (
                s.id,
                s.kind,
                "yes" if s.default else "",
                ", ".join(metrics(s)),
                s.revision_label,
                str(s.file.parent) if s.file else "",
            )
            for s in snaps.values()
        ],
    )


def _yours_first(snaps: dict[str, Snapshot]) -> dict[str, Snapshot]:
    """The snapshots in the order they are looked up: the user's folder first, then the
    shipped one (``paths.snapshot_search_path``), each by id; what ``snapshots list``
    shows, so that a user's own models are not lost among the shipped baselines."""
    from monitor.paths import snapshot_search_path

    folders = [f.resolve() for f in snapshot_search_path()]

    def rank(s: Snapshot) -> tuple[int, str]:
        folder = s.file.parent.resolve() if s.file else None
        return (folders.index(folder) if folder in folders else len(folders), s.id)

    return {s.id: s for s in sorted(snaps.values(), key=rank)}
