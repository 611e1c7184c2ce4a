"""`bias-monitor data ...`: fetch, verify and inspect the pinned benchmark files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from monitor.terminal.output import Format, err, out, print_json

app = typer.Typer(help="Pinned benchmark files (data/benchmarks.toml).", no_args_is_help=True)


@app.command("fetch")
def fetch_cmd(
    from_dir: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Import from this folder (laid out as in the manifest's "
            "`path`, e.g. ../shared/datasets) instead of downloading.",
        ),
    ] = None,
    benchmark: Annotated[
        list[str] | None,
        typer.Option(
            "--benchmark", "-b", help="Only these benchmark ids (default: all in the manifest)."
        ),
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
) -> None:
    """Download (or import) the pinned benchmark files and verify their sha256.

    Files land in $MONITOR_DATA_DIR (default ~/.cache/bias-monitor/datasets); they are
    third-party and never enter git. If a pinned URL cannot be reached and
    $MONITOR_DATA_MIRROR names a folder, the file is imported from there and the command says so.
    """
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    ids = benchmark or list(manifest.benchmarks)
    if from_dir is not None and not from_dir.is_dir():
        from monitor.errors import UserInputError

        raise UserInputError(f"--from {from_dir}: not a folder")
    results = fetch(manifest, ids, from_dir=from_dir, on_event=lambda m: err.print(m))
    fetched = [r.benchmark for r in results if r.benchmark in manifest.benchmarks]
    _validate_fetched(manifest, fetched)  # companion files are checked with their benchmark
    if fmt is Format.json:
        print_json([r.__dict__ for r in results])
        return
    from monitor import paths
    from monitor.terminal.output import SafeTable as Table

    # The folder once, above the table, and each file relative to it: absolute paths in a
    # column were cut to "/home/…/Cast…" in an 80-column log, hiding where files went.
    root = paths.data_dir()
    files = "1 file" if len(results) == 1 else f"{len(results)} files"
    out.print(f"{files} verified by sha256 in {root}")
    table = Table()
    for col in ("benchmark", "origin", "sha256", "file"):
        table.add_column(col, overflow="fold")
    for r in results:
        path = Path(r.path)
        shown = path.relative_to(root) if path.is_relative_to(root) else path
        table.add_row(r.benchmark, r.origin, r.sha256[:12] + "…", str(shown))
    out.print(table)


def _validate_fetched(manifest, ids: list[str]) -> None:
    """Benchmark quality suite, run whenever data is fetched or imported."""
    from monitor.benchmarks.load import load_benchmarks
    from monitor.errors import DataIntegrityError
    from monitor.quality.benchmark_suite import validate_benchmark

    # Every row: a choice-question benchmark samples its rows by default (``--size``), and
    # the data check must see the whole file. Other loaders ignore the option.
    for bench in load_benchmarks(ids, manifest=manifest, options={"size": "full"}):
        spec = manifest.benchmarks[bench.benchmark]
        result = validate_benchmark(bench, expected_rows=spec.rows, fmt=spec.format)
        if not result.success:
            reasons = "; ".join(f.reason for f in result.failures[:3])
            raise DataIntegrityError(
                f"{bench.benchmark}: benchmark quality suite failed: {reasons}"
            )
        err.print(
            f"{bench.benchmark}: {len(bench.items)} items, {len(bench.exclusions)} excluded "
            f"rows; quality suite passed"
        )


@app.command("list")
def list_cmd(
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
) -> None:
    """List benchmark ids with their pinned source, licence and row count."""
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    rows = [
        {
            "id": bid,
            "axis": b.axis,
            "region": b.region,
            "rows": b.rows,
            "default": b.default,
            "source": manifest.sources[b.source].repo,
            "commit": manifest.sources[b.source].commit,
            "licence": manifest.sources[b.source].licence,
            "sha256": b.sha256,
        }
        for bid, b in manifest.benchmarks.items()
    ]
    if fmt is Format.json:
        print_json(rows)
        return
    from monitor.terminal.output import print_listing

    print_listing(
        ("id", "axis", "region", "rows", "default", "source"),
        [
            (
                r["id"],
                r["axis"],
                r["region"],
                str(r["rows"]),
                "yes" if r["default"] else "",
                f"{r['source']}@{r['commit'][:12]}",
            )
            for r in rows
        ],
    )
