"""The application layer's remaining calls that name a family's benchmark or format,
each behind one function (the hooks themselves come from the registry: the reader of
official templates, the judged scorer). What is left to move into the families' own run
hooks: the ``indic-taxonomy`` partners, the ``indic-bias-generation`` task and the
``bharatbbq-csv`` translations (ARCHITECTURE.md, "What is left of issue 45").
"""

from __future__ import annotations

from pathlib import Path

from monitor.benchmarks.items import LoadedBenchmark
from monitor.errors import UserInputError
from monitor.jobs.options import EventSink, ProgressFactory, RunOptions, RunOutcome
from monitor.snapshots.model import Snapshot
from monitor.store.db import Store


def official_indic_templates(
    manifest, folder: Path, tasks, partners: int, limit: int | None, seed: int, on_event: EventSink
) -> list[LoadedBenchmark]:
    """The official Indic-Bias templates from a downloaded copy; identity partners come
    from the pinned taxonomy, fetched (or imported from the mirror) like any benchmark."""
    from monitor.benchmarks.fetch import fetch
    from monitor.contract.registry import official_template_reader

    fetch(manifest, ["indic-taxonomy"], on_event=on_event)
    return official_template_reader()(
        manifest,
        folder,
        tasks or ["plausibility", "judgement"],
        partners=partners,
        limit=limit,
        seed=seed,
    )


def is_judged_generation(bench: LoadedBenchmark) -> bool:
    """The Indic-Bias generation task: scored by a judge model, not by a driver."""
    return bench.benchmark == "indic-bias-generation"


def score_judged_generation(
    store: Store,
    snapshot: Snapshot,
    judge: Snapshot | None,
    generation: list[LoadedBenchmark],
    options: RunOptions,
    *,
    temperature: float,
    max_tokens: int,
    judge_max_tokens: int,
    on_event: EventSink,
    progress_factory: ProgressFactory,
) -> RunOutcome:
    """One snapshot's generation run, judged by ``judge`` (the pairs' ``score_judged``)."""
    from monitor.contract.registry import judged_scorer

    return judged_scorer()(
        store,
        snapshot,
        judge,
        generation,
        options,
        temperature=temperature,
        max_tokens=max_tokens,
        judge_max_tokens=judge_max_tokens,
        on_event=on_event,
        progress_factory=progress_factory,
    )


def check_translatable(specs) -> None:
    """Only BharatBBQ files have translations the loader can pair row by row."""
    others = [s.id for s in specs if s.format != "bharatbbq-csv"]
    if not specs:
        raise UserInputError("--translations needs a BharatBBQ benchmark (-b bharatbbq-caste)")
    if others:
        raise UserInputError(
            "--translations applies to BharatBBQ benchmarks (bharatbbq-*) only, not to "
            + ", ".join(others)
        )
