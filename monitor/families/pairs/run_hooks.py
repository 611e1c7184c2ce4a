"""What the pair family adds to ``run`` (its ``Run`` capability): the metric panel its
local scorer fills, and ``--indic-bias DIR``: the official Indic-Bias templates read from
the user's copy, their identity partners from the pinned taxonomy, and the generation
task, which a judge model reads (``--judge``) instead of the snapshot kind's driver.

The application layer calls these through the registry, in the order of
``monitor.contract.capabilities.Run``; it knows neither the flags nor the benchmarks.
Heavy modules (the loaders, the judged driver) are imported when a hook runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from monitor.contract.capabilities import Panel, RunAdditions, TaskRequest
from monitor.families.pairs.run_options import PairRunOptions

if TYPE_CHECKING:
    from monitor.benchmarks.items import LoadedBenchmark
    from monitor.benchmarks.manifest import BenchmarkManifest, BenchmarkSpec
    from monitor.jobs.options import EventSink, RunOutcome
    from monitor.snapshots.model import Snapshot

# The pinned taxonomy the official templates take their identity partners from.
TAXONOMY = "indic-taxonomy"
# The tasks read when ``--indic-task`` is not given.
DEFAULT_TASKS = ("plausibility", "judgement")


def panel(options: PairRunOptions) -> Panel:
    """``--panel/--no-panel`` and ``--metrics``, checked."""
    return Panel(scored=options.panel, metrics=options.extra_panel_metrics())


def replaces_defaults(options: PairRunOptions) -> bool:
    """``--indic-bias DIR`` without ``-b`` scores the official templates alone."""
    return options.indic_bias is not None


def check(options: PairRunOptions, specs: Sequence[BenchmarkSpec]) -> None:
    """The Indic-Bias task options mean nothing without the dataset's folder."""
    options.check_indic()


def add(
    options: PairRunOptions,
    manifest: BenchmarkManifest,
    *,
    snapshots: Mapping[str, Snapshot],
    seed: int,
    on_event: EventSink,
) -> RunAdditions:
    """The official templates ``--indic-bias`` asks for (nothing without it): the
    plausibility and judgement sets for the snapshot's driver, and the generation set as
    a task of its own, judged by ``--judge`` (required with it)."""
    if options.indic_bias is None:
        return RunAdditions()
    from monitor.benchmarks.fetch import fetch
    from monitor.errors import UserInputError
    from monitor.families.pairs.indic_official import benchmark_id
    from monitor.families.pairs.items import official_templates
    from monitor.snapshots.registry import get_snapshot

    fetch(manifest, [TAXONOMY], on_event=on_event)
    loaded = official_templates(
        manifest,
        options.indic_bias,
        list(options.indic_task or DEFAULT_TASKS),
        partners=options.indic_partners,
        limit=options.indic_limit,
        seed=seed,
    )
    generation_id = benchmark_id("generation")
    generation = [b for b in loaded if b.benchmark == generation_id]
    if generation and options.judge is None:
        raise UserInputError("--indic-task generation needs --judge SNAPSHOT (a chat model)")
    judge = get_snapshot(options.judge, snapshots) if options.judge is not None else None
    tasks = [JudgedGeneration(judge, generation, options)] if judge and generation else []
    return RunAdditions(benchmarks=[b for b in loaded if b.benchmark != generation_id], tasks=tasks)


@dataclass(frozen=True)
class JudgedGeneration:
    """The generation task as a ``ScoreTask``: each snapshot answers the scenarios,
    ``judge`` reads the answers (``judged_task.score_judged``), one run per snapshot."""

    judge: Snapshot
    generation: list[LoadedBenchmark]
    options: PairRunOptions

    def __call__(self, request: TaskRequest) -> RunOutcome:
        from monitor.families.pairs.judged_task import score_judged

        return score_judged(
            request.store,
            request.snapshot,
            self.judge,
            self.generation,
            request.options,
            temperature=self.options.temperature,
            max_tokens=self.options.generation_max_tokens,
            judge_max_tokens=self.options.judge_max_tokens,
            on_event=request.on_event,
            progress_factory=request.progress_factory,
        )
