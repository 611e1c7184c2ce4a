"""Planning a ``run``: every input checked, snapshots and benchmarks resolved, and each
snapshot's metric chosen once, before the store is opened (a refused request writes
nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from monitor.app.family_hooks import check_translatable, is_judged_generation
from monitor.app.family_hooks import official_indic_templates as official
from monitor.app.run_request import RunEvents, RunRequest
from monitor.benchmarks.items import LoadedBenchmark
from monitor.errors import NotApplicable, UserInputError
from monitor.families.choice_qa.run_options import ChoiceRunOptions
from monitor.families.pairs.run_options import PairRunOptions
from monitor.jobs.options import EventSink, RunOptions
from monitor.snapshots.model import Snapshot


@dataclass(frozen=True)
class RunPlan:
    """What the scoring loop needs: snapshots that apply, each one's metric, the
    benchmarks (the judged generation task apart), the judge, the store and options."""

    snapshots: list[Snapshot]
    metrics: dict[str, str]
    benches: list[LoadedBenchmark]
    generation: list[LoadedBenchmark]
    judge: Snapshot | None
    db_path: Path
    options: RunOptions


def plan_run(request: RunRequest, events: RunEvents) -> RunPlan:
    """Check and resolve ``request`` in the order a user's mistakes are best reported:
    flags, snapshots, metric, local folders, benchmarks, store, then data and metrics."""
    from monitor.benchmarks.manifest import load_manifest
    from monitor.paths import default_db_path
    from monitor.snapshots.registry import get_snapshot
    from monitor.store.db import check_writable

    pairs, choice = request.family(PairRunOptions), request.family(ChoiceRunOptions)
    loader_options = _checked_flags(request, choice)
    snaps, chosen = _snapshots(request)
    extra = pairs.extra_panel_metrics()
    _verify_sources(chosen, events.on_event)
    manifest = load_manifest()
    indic_only = pairs.indic_bias is not None and not request.benchmarks
    specs = (
        []
        if indic_only
        else manifest.select(list(request.benchmarks) or None, controls=request.scoring.controls)
    )
    if "translations" in loader_options:
        check_translatable(specs)
    pairs.check_indic()
    db_path = Path(request.db) if request.db else default_db_path()
    check_writable(db_path)
    benches = _load(manifest, specs, request, loader_options, events.on_event)
    generation = _indic(manifest, pairs, request.scoring.seed, events.on_event)
    benches += [b for b in generation if not is_judged_generation(b)]
    generation = [b for b in generation if is_judged_generation(b)]
    if generation and pairs.judge is None:
        raise UserInputError("--indic-task generation needs --judge SNAPSHOT (a chat model)")
    judge = get_snapshot(pairs.judge, snaps) if pairs.judge is not None else None
    metrics = choose_metrics(chosen, request, benches, events.on_skip)
    if extra:
        _check_panel_metrics(chosen, metrics)
    return RunPlan(
        snapshots=[s for s in chosen if s.id in metrics],
        metrics=metrics,
        benches=benches,
        generation=generation,
        judge=judge,
        db_path=db_path,
        options=_run_options(request, extra),
    )


def _checked_flags(request: RunRequest, choice: ChoiceRunOptions) -> dict[str, str]:
    """The flags whose values are checked before anything is read; returns the loader
    options the choice-question flags ask for."""
    dtype, errata = request.backend.dtype, request.scoring.errata
    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise UserInputError(f"unknown --dtype {dtype!r}; use auto, float32, bfloat16 or float16")
    if errata not in ("current", "none"):
        raise UserInputError(f"unknown --errata {errata!r}; use current or none")
    return choice.loader_options()


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


def _indic(manifest, pairs: PairRunOptions, seed: int, on_event: EventSink):
    """The official Indic-Bias sets ``--indic-bias`` asks for (none without it)."""
    if pairs.indic_bias is None:
        return []
    return official(
        manifest,
        pairs.indic_bias,
        pairs.indic_task,
        pairs.indic_partners,
        pairs.indic_limit,
        seed,
        on_event,
    )


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


def _run_options(request: RunRequest, extra: tuple[str, ...]) -> RunOptions:
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
        panel=request.family(PairRunOptions).panel,
        panel_metrics=extra,
    )
