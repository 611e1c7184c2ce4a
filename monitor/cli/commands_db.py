"""`runs list`, `show`, `export`, `db merge`, `db rebuild`: reading and moving stored runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from monitor.terminal.output import Format, err, out, print_json

runs_app = typer.Typer(help="Runs stored in the DuckDB file.", no_args_is_help=True)
db_app = typer.Typer(
    help="Database maintenance: merge shards from other machines, rebuild from history.",
    no_args_is_help=True,
)

DB_HELP = (
    "DuckDB file, or a DuckLake: ducklake:sqlite:FILE or ducklake:postgres:'dbname=... "
    "host=...' (default: $MONITOR_DB or results/monitor.duckdb)."
)
DbOpt = Annotated[Path | None, typer.Option("--db", help=DB_HELP)]


def use_lake_data(value: str | None) -> str | None:
    """``--lake-data``: the lake's data path for this process (the same setting as
    ``$MONITOR_LAKE_DATA``, which it overrides; ``monitor.store.location`` reads it)."""
    if value:
        os.environ["MONITOR_LAKE_DATA"] = value
    return value


LakeDataOpt = Annotated[
    str | None,
    typer.Option(
        "--lake-data",
        help="Where a DuckLake --db keeps its data files: a folder or s3://bucket/prefix "
        "(default: $MONITOR_LAKE_DATA).",
        callback=use_lake_data,
    ),
]
FmtOpt = Annotated[Format, typer.Option("--format", help="table or json.")]


def _store(db: Path | None, *, must_exist: bool = True):
    from monitor.app.stores import open_store

    return open_store(db, must_exist=must_exist)


def _reader(db: Path | None):
    """The store for a command that only reads (``monitor.app.stores.open_reader``), its
    upgrade notes on stderr."""
    from monitor.app.stores import open_reader

    return open_reader(db, on_event=lambda m: err.print(m))


@runs_app.command("list")
def runs_list(
    db: DbOpt = None,
    snapshot: Annotated[str | None, typer.Option("--snapshot", help="Only this snapshot.")] = None,
    status: Annotated[str | None, typer.Option("--status", help="Only this status.")] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1)] = None,
    fmt: FmtOpt = Format.table,
) -> None:
    """List runs, newest first."""
    runs = _reader(db).list_runs(snapshot=snapshot, status=status, limit=limit)
    if fmt is Format.json:
        print_json(runs)
        return
    from monitor.terminal.output import print_listing

    # The run id is shown whole: it is what `show`, `drift` and `export` take.
    print_listing(
        ("run_id", "snapshot", "metric", "status", "started", "scored", "excluded", "trigger"),
        [
            (
                r["run_id"],
                r["snapshot_id"],
                f"{r['metric']} v{r['metric_version']}",
                r["status"],
                str(r["started_at"])[:19],
                str(r.get("n_scored") or "—"),
                str(r.get("n_excluded") or "—"),
                r["trigger"],
            )
            for r in runs
        ],
    )


def show(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of one.")],
    db: DbOpt = None,
    items: Annotated[
        bool,
        typer.Option(
            "--items",
            help="Also show per-item scores (ids and numbers; add --texts for the sentences).",
        ),
    ] = False,
    texts: Annotated[
        bool,
        typer.Option(
            "--texts",
            help="With --items: include the benchmark "
            "sentences, which contain slurs and stereotypes.",
        ),
    ] = False,
    fmt: FmtOpt = Format.table,
) -> None:
    """Show one run: provenance, per-axis measures, each bias rate beside its neutral
    control and the metric panel, per-identity rates and rankings, association tests
    (effect sizes), exclusions, quality."""
    from monitor.app.show import show as read_run

    shown = read_run(run_id, db, items=items, texts=texts, on_event=lambda m: err.print(m))
    if fmt is Format.json:
        print_json(_show_json(shown))
        return
    _show_page(shown)


def _show_json(shown) -> dict:
    """``show --format json``: the run row, its measures, the family's own keys (the
    pairs': each bias rate in context), exclusions, validations, and items if asked."""
    from monitor.terminal import measures as results_view

    family = shown.family
    own_json = family.terminal().show_json if family is not None else None
    doc = {
        "run": shown.run,
        "measures": [results_view.measure_json(shown.run_id, m) for m in shown.measures],
        **(own_json(shown.measures, shown.metric) if own_json is not None else {}),
        "exclusions": shown.exclusions,
        "validations": shown.validations,
    }
    if shown.items is not None:
        doc["items"] = shown.items
    return doc


def _show_page(shown) -> None:
    """``show``'s table format: provenance, the family's tables, exclusions, quality,
    per-item scores."""
    run = shown.run
    out.print(f"run {shown.run_id}  status {run['status']}", style="bold")
    for key in (
        "snapshot_id",
        "snapshot_revision",
        "metric",
        "metric_version",
        "trigger",
        "origin",
        "started_at",
        "finished_at",
        "device",
        "dtype",
        "git_commit",
        "n_scored",
        "n_excluded",
        "notes",
    ):
        _provenance_line(key, run.get(key))
    env = run.get("environment") or {}
    pk = env.get("packages", {})
    _provenance_line("packages", ", ".join(f"{k} {v}" for k, v in sorted(pk.items())) or "—")
    for b, v in (run.get("dataset_versions") or {}).items():
        _provenance_line("dataset", f"{b}: {_version_label(v)}{_translation(v)}")
    # Tables are laid out within the width (soft_wrap off): the console keeps a long
    # message on one line, which for a table would let a column overflow.
    for table in _family_tables(shown):
        out.print(table, soft_wrap=False)
    if shown.exclusions:
        _print_exclusions(shown.exclusions)
    for v in shown.validations:
        out.print(f"quality suite {v['suite']}: {'passed' if v['success'] else 'FAILED'}")
    if shown.items is not None:
        _print_items(shown.items)


def _family_tables(shown) -> list:
    """The family draws its measures: ``show_tables`` (the pairs': every measure, each
    bias rate in context, the identity rankings), else its ``cli_table``, else every
    measure as a row."""
    from monitor.terminal import measures as results_view

    family, records = shown.family, shown.measures
    title = (family.show_title if family is not None else None) or (
        f"measures of {shown.run['snapshot_id']}"
    )
    show_tables = family.terminal().show_tables if family is not None else None
    cli_table = family.terminal().cli_table if family is not None else None
    if show_tables is not None:
        return show_tables(records, shown.metric, title)
    if cli_table is not None:
        return [cli_table(records, title)]
    return [results_view.measures_table(records)] if records else []


def _print_items(detail: list[dict]) -> None:
    """``show --items``: one row per item score (texts only where asked)."""
    from monitor.terminal.output import SafeTable as Table

    t2 = Table(title="per-item scores", title_justify="left")
    cols = list(detail[0].keys()) if detail else []
    for c in cols:
        t2.add_column(c)
    for row in detail:
        t2.add_row(*[f"{v:.4f}" if isinstance(v, float) else str(v) for v in row.values()])
    out.print(t2)


def export(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix.")],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder to write <run_id>/*.parquet into.")
    ] = Path("results/exports"),
    db: DbOpt = None,
) -> None:
    """Write one run as Parquet: run row, items, scores, exclusions, measures, validations,
    and for API runs every request sent and batch submitted; plus a sha256 manifest."""
    from monitor.store.export import export_run

    store = _reader(db)
    with store.read() as view:
        rid = view.resolve_run(run_id).run_id
    path = export_run(store, rid, out_dir)
    out.print(str(path))


@db_app.command("merge")
def merge_cmd(
    sources: Annotated[
        list[Path], typer.Argument(help="Export folders (from `export`) or .duckdb shard files.")
    ],
    db: DbOpt = None,
    fmt: FmtOpt = Format.table,
) -> None:
    """Ingest shards from other machines (e.g. a CI job matrix) into this store.

    Runs already present with identical content are skipped; a run id with different
    content is refused and nothing from that shard is written. Every run added is judged
    again by the results quality gate here (a shard crossed machines): one that fails
    is kept as quarantined, and the command exits 1.
    """
    from monitor.jobs.lifecycle import RunLifecycle
    from monitor.store.merge import merge

    store = _store(db, must_exist=False)
    report = merge(store, sources)
    lifecycle = RunLifecycle(store)
    quarantined = {}
    with store.read() as view:  # the merged runs' statuses, typed
        added = {r.run_id: r.status for r in view.runs(report.runs_added).values()}
    for run_id in report.runs_added:
        if added[run_id] != "complete":
            continue
        verdict = lifecycle.gate(run_id)
        if verdict.status == "quarantined":
            quarantined[run_id] = verdict.note()
    if fmt is Format.json:
        print_json({**report.to_json(), "quarantined": quarantined})
    else:
        out.print(str(report))
        for run_id, note in quarantined.items():
            err.print(f"quarantined {run_id}: {note}", style="red")
    if quarantined:
        raise typer.Exit(1)


@db_app.command("rebuild")
def rebuild_cmd(
    history: Annotated[
        Path,
        typer.Argument(
            help="History folder: run exports (from `export`) at any depth, e.g. a checkout "
            "of the results branch."
        ),
    ],
    db: DbOpt = None,
    replace: Annotated[
        bool,
        typer.Option("--replace", help="Replace a store that already holds runs."),
    ] = False,
    fmt: FmtOpt = Format.table,
) -> None:
    """Rebuild the store from the durable history (a folder of run exports).

    Every export's manifest is checked first; the new store is written beside the target
    and renamed into place only when all of it merged, so a failure leaves the target as
    it was. Exit 2 (nothing written) when the folder holds no export, an export is
    damaged, or the target already holds runs and --replace was not given.
    """
    from monitor.paths import default_db_path
    from monitor.store.rebuild import rebuild

    target = Path(db) if db else default_db_path()
    report = rebuild(target, history, replace=replace)
    if fmt is Format.json:
        print_json({**report.to_json(), "db": str(target)})
    else:
        out.print(f"rebuilt {target} from {history}: {report.summary()}")


def _provenance_line(key: str, value: object) -> None:
    """``  key  value``, wrapped to the output's width under the value's column (a
    package list or a dataset's version ran to 110 columns in an 80-column log). A value
    longer than a line (a file pin with its sha256) is folded, never cut."""
    from monitor.terminal.lines import wrap
    from monitor.terminal.output import output_width

    for line in wrap(f"  {key:18} {value}", max(output_width(), 40), " " * 21, fold=True):
        out.print(line)


def _version_label(version) -> str:
    """A benchmark file's version as a run records it: its label, or (an imported run)
    the benchmark versions it was matched to, never a raw dict."""
    if not isinstance(version, dict):
        return str(version)
    if "label" in version:
        return str(version["label"])
    matched = version.get("benchmark_version")
    if isinstance(matched, list | tuple):
        return ", ".join(map(str, matched))
    return ", ".join(f"{k} {v}" for k, v in version.items())


def _translation(version) -> str:
    """A translated benchmark's language and file (name, sha256) after its label."""
    sampling = version.get("sampling") if isinstance(version, dict) else None
    if not isinstance(sampling, dict) or "translation_sha256" not in sampling:
        return ""
    return (
        f" (language {version.get('language')}: {sampling.get('translation_file')} "
        f"sha256 {sampling['translation_sha256']})"
    )


def _row_spans(rows: list[int]) -> str:
    """``[3]`` → "row 3"; ``[248, …, 255, 260]`` → "rows 248–255, 260"."""
    spans: list[list[int]] = []
    for r in rows:
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    text = ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)
    return f"row {text}" if len(rows) == 1 else f"rows {text}"


def _print_exclusions(exclusions: list[dict]) -> None:
    """The excluded rows, one line per benchmark and reason (rows as ranges), within the
    output width: a template of 8 defective rows is one line, not 8 of 120 characters."""
    from itertools import groupby

    from monitor.terminal.lines import wrap
    from monitor.terminal.output import output_width

    out.print(f"excluded rows: {len(exclusions)}")
    width = output_width()
    key = lambda e: (e["benchmark"], e["reason"], e["detail"])  # noqa: E731
    for (bench, reason, detail), group in groupby(exclusions, key=key):
        rows = _row_spans([e["source_row"] for e in group])
        for line in wrap(f"  {bench} {rows}: {reason} ({detail})", width, "    "):
            out.print(line, markup=False)
