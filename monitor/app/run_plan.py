"""Planning a ``run``: every input checked, snapshots and benchmarks resolved, and each
snapshot's metric chosen once, before the store is opened (a refused request writes
nothing)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from monitor.app.run_request import RunEvents, RunRequest
from monitor.benchmarks.items import LoadedBenchmark
from monitor.contract.capabilities import Panel, Run, ScoreTask
from monitor.errors import NotApplicable, UserInputError
from monitor.jobs.options import EventSink, RunOptions
from monitor.snapshots.model import Snapshot

if TYPE_CHECKING:
    from monitor.benchmarks.manifest import BenchmarkManifest


@dataclass(frozen=True)
class RunPlan:
    """What the scoring loop needs: snapshots that apply, each one's metric, the
    benchmarks their drivers score, the tasks families score themselves (each a run of
    its own per snapshot), the store and options."""

    snapshots: list[Snapshot]
    metrics: dict[str, str]
    benches: list[LoadedBenchmark]
    tasks: list[ScoreTask]
    db_path: Path
    options: RunOptions


@dataclass(frozen=True)
class FamilyRun:
    """A family's ``run`` capability with the options it is handed: the request's
    instance of its model, else the model's defaults."""

    hooks: Run
    options: BaseModel


def family_runs(request: RunRequest) -> list[FamilyRun]:
    """Every family that adds options to ``run``, in the registry's order."""
    from monitor.contract.registry import families

    runs = [r for r in (f.run() for f in families()) if r.options is not None]
    stray = [
        type(o).__name__
        for o in request.family_options
        if not any(isinstance(o, r.options) for r in runs if r.options is not None)
    ]
    if stray:  # a caller's mistake that would otherwise be ignored without a word
        raise UserInputError(
            f"RunRequest.family_options: {', '.join(stray)} is no registered family's "
            "run options model"
        )
    return [FamilyRun(r, request.family(r.options)) for r in runs if r.options is not None]


def plan_run(request: RunRequest, events: RunEvents) -> RunPlan:
    """Check and resolve ``request`` in the order a user's mistakes are best reported:
    flags, snapshots, metric, local folders, benchmarks, store, then data and metrics."""
    from monitor.benchmarks.manifest import load_manifest
    from monitor.paths import default_db_path
    from monitor.store.db import check_writable

    runs = family_runs(request)
    loader_options = _checked_flags(request, runs)
    snaps, chosen = _snapshots(request)
    panel = _panel(runs)
    _verify_sources(chosen, events.on_event)
    manifest = load_manifest()
    own_only = not request.benchmarks and any(
        r.hooks.replaces_defaults(r.options) for r in runs if r.hooks.replaces_defaults
    )
    specs = (
        []
        if own_only
        else manifest.select(list(request.benchmarks) or None, controls=request.scoring.controls)
    )
    for r in runs:
        if r.hooks.check is not None:
            r.hooks.check(r.options, specs)
    db_path = Path(request.db) if request.db else default_db_path()
    check_writable(db_path)
    benches = _load(manifest, specs, request, loader_options, events.on_event)
    benches, tasks = _add(runs, manifest, snaps, request.scoring.seed, events.on_event, benches)
    metrics = choose_metrics(chosen, request, benches, events.on_skip)
    if panel.metrics:
        _check_panel_metrics(chosen, metrics)
    return RunPlan(
        snapshots=[s for s in chosen if s.id in metrics],
        metrics=metrics,
        benches=benches,
        tasks=tasks,
        db_path=db_path,
        options=_run_options(request, panel),
    )


def _checked_flags(request: RunRequest, runs: Sequence[FamilyRun]) -> dict[str, str]:
    """The flags whose values are checked before anything is read; returns the loader
    options the families' flags ask for."""
    dtype, errata = request.backend.dtype, request.scoring.errata
    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise UserInputError(f"unknown --dtype {dtype!r}; use auto, float32, bfloat16 or float16")
    if errata not in ("current", "none"):
        raise UserInputError(f"unknown --errata {errata!r}; use current or none")
    options: dict[str, str] = {}
    for r in runs:
        if r.hooks.loader_options is not None:
            options.update(r.hooks.loader_options(r.options))
    return options


def _panel(runs: Sequence[FamilyRun]) -> Panel:
    """The metric panel the first family with one asks for (checked), else the default."""
    for r in runs:
        if r.hooks.panel is not None:
            return r.hooks.panel(r.options)
    return Panel()


def _snapshots(request: RunRequest) -> tuple[dict[str, Snapshot], list[Snapshot]]:
    """Every pinned snapshot, and those asked for (else the default ones); an unknown
    or inapplicable ``--metric`` is refused here, before any work."""
    from monitor.jobs.run import check_requested_metric
    from monitor.kinds import get_kind
    from monitor.snapshots.registry import get_snapshot, load_snapshots

    snaps = load_snapshots()
    chosen = (
        [get_snapshot(s, snaps) for s in request.snapshots]
        if request.snapshots
        else [s for s in snaps.values() if s.default]
    )
    for s in chosen:
        check_requested_metric(s, get_kind(s.kind), request.scoring.metric)
    return snaps, chosen


def _verify_sources(chosen: list[Snapshot], on_event: EventSink) -> None:
    """A changed or missing model folder refuses the run (exit 2); a credential in a
    committed snapshot file is named."""
    from monitor.snapshots.model import LocalDirSource
    from monitor.snapshots.resolve import verify_local_dir

    for s in chosen:
        if isinstance(s.source, LocalDirSource):
            verify_local_dir(s)
    warn_stored_credentials(chosen, on_event)


def warn_stored_credentials(snapshots, on_event: EventSink) -> None:
    """A snapshot file is committed: a credential in its ``base_url`` is accepted (it is
    redacted everywhere) but named, so that it moves to an environment variable."""
    from monitor.redaction import url_credentials

    for s in snapshots:
        found = url_credentials(getattr(s.source, "base_url", None))
        if found:
            on_event(
                f"warning: snapshot {s.id}: source.base_url carries credentials "
                f"({', '.join(found)}); they are redacted from the store and every output, "
                "but move the URL to an environment variable named by source.base_url_env "
                "(and the key to source.api_key_env)"
            )


def _load(manifest, specs, request: RunRequest, options: dict[str, str], on_event: EventSink):
    """Fetch (or import from the mirror) and load the selected benchmarks; ``--size`` is
    refused where no loaded benchmark's family takes it."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.contract.registry import families
    from monitor.jobs.run import sized_benchmarks

    fetch(manifest, [s.id for s in specs], on_event=on_event)
    benches = load_benchmarks(
        [s.id for s in specs],
        errata=request.scoring.errata,
        manifest=manifest,
        options=options or None,
    )
    if "size" in options and not sized_benchmarks(benches):
        sized = ", ".join(f.name for f in families() if f.sized)
        names = ", ".join(sorted({b.benchmark for b in benches}))
        raise UserInputError(f"--size applies to {sized} benchmarks; not to {names}")
    return benches


def _add(
    runs: Sequence[FamilyRun],
    manifest: BenchmarkManifest,
    snaps: dict[str, Snapshot],
    seed: int,
    on_event: EventSink,
    benches: list[LoadedBenchmark],
) -> tuple[list[LoadedBenchmark], list[ScoreTask]]:
    """What each family's options add: ``benches`` with its benchmarks after them (scored
    by each snapshot's driver), and its tasks (scored by the family)."""
    benches, tasks = list(benches), []
    for r in runs:
        if r.hooks.add is not None:
            added = r.hooks.add(r.options, manifest, snapshots=snaps, seed=seed, on_event=on_event)
            benches += added.benchmarks
            tasks += added.tasks
    return benches, tasks


def choose_metrics(
    chosen: list[Snapshot], request: RunRequest, benches: list[LoadedBenchmark], on_skip: EventSink
) -> dict[str, str]:
    """Each snapshot's metric for these benchmarks, chosen once (a run has one metric:
    choice questions and pairs are two commands). A snapshot with none is refused, or
    under ``only_applicable`` skipped by name."""
    from monitor.jobs.run import item_kinds, metric_for
    from monitor.kinds import get_kind

    kinds = item_kinds(benches)
    metrics = {}
    for s in chosen:
        try:
            metrics[s.id] = metric_for(s, get_kind(s.kind), request.scoring.metric, kinds)
        except NotApplicable as exc:
            if not request.only_applicable:
                raise
            on_skip(f"skipped {s.id}: {exc} (--only-applicable)")
    return metrics


def _check_panel_metrics(chosen: list[Snapshot], metrics: dict[str, str]) -> None:
    """Refuse ``--metrics`` for a snapshot whose run has no panel (another metric)."""
    from monitor.metrics.panel import PANEL_METRICS

    for s in chosen:
        if s.id in metrics and metrics[s.id] not in PANEL_METRICS:
            raise UserInputError(
                f"--metrics adds to the panel of a {', '.join(PANEL_METRICS)} run; "
                f"{s.id} is scored with {metrics[s.id]}"
            )


def _run_options(request: RunRequest, panel: Panel) -> RunOptions:
    """The options every driver reads, from the request's models."""
    backend, scoring = request.backend, request.scoring
    return RunOptions(
        batch_size=backend.batch_size,
        device=backend.device,
        dtype=backend.dtype,
        repeat=scoring.repeat,
        metric=scoring.metric,
        seed=scoring.seed,
        trigger=scoring.trigger,
        resume=scoring.resume,
        errata=scoring.errata,
        panel=panel.scored,
        panel_metrics=panel.metrics,
        origin=scoring.origin or _detected_origin(),
        reuse=scoring.reuse,
    )


def _detected_origin() -> str:
    """The run's origin from the environment; a bad ``$MONITOR_RUN_ORIGIN`` is refused
    as the user's input (exit 2), before the store is opened."""
    from monitor.provenance import ORIGIN_ENV, detect_origin

    try:
        return detect_origin()
    except ValueError as exc:
        raise UserInputError(f"${ORIGIN_ENV}: {exc}") from exc
