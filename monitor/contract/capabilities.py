"""What a family can do, as typed Protocols grouped into capability objects.

Each Protocol is one hook: a callable with the parameters the calling room passes (the
names and keywords are the contract; ``tests/test_family_contract.py`` compares every
family's functions with them). Capabilities group the hooks by the room that calls them:
``Items`` (benchmarks), ``Scoring`` (jobs and scoring), ``Drift`` (drift and the
``drift`` command), ``Terminal`` (``run`` and ``show``), ``Report`` (the report),
``Importers`` (``bias-monitor import``) and ``Run`` (the application layer's ``run``: the
family's options and what they add). A hook a family does not supply is None.

Comparisons travel as drift's ``Comparison`` (its generic record, or a family's own type
that satisfies ``drift.session.FamilyResult``); a family's drift, report and terminal
hooks are only ever handed the comparisons of that family, so a family may annotate them
with its own type.

The types named here live in the rooms above this package and are imported for type
checking only (``exclude_type_checking_imports`` in the import contracts).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, TypedDict, Unpack

if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path

    from pydantic import BaseModel
    from rich.console import RenderableType

    from monitor.benchmarks.errata import ErrataFile
    from monitor.benchmarks.items import BenchmarkVersion, Item, LoadedBenchmark
    from monitor.benchmarks.manifest import BenchmarkManifest, BenchmarkSpec
    from monitor.contract.family import Family
    from monitor.drift.compare import UnscoredAxis
    from monitor.drift.deltas import SignFlipBatch
    from monitor.drift.noise import NoiseBook
    from monitor.drift.session import Comparison, DriftResult
    from monitor.importers.spec import Importer
    from monitor.jobs.context import JobContext
    from monitor.jobs.options import EventSink, ProgressFactory, RunOptions, RunOutcome
    from monitor.metrics.registry import MetricSpec
    from monitor.quality.suites import SuiteResult
    from monitor.readmodel.reader import RunReader
    from monitor.records import Measure, ScoreRow
    from monitor.report.section import FamilySection
    from monitor.scoring.api_tasks import ApiScoring
    from monitor.snapshots.model import Snapshot
    from monitor.store.db import Store
    from monitor.store.view import StoreView

# What a snapshot kind's backend can do (``monitor.kinds.KindSpec.offers``) and what a
# metric needs of it (``MetricSpec.needs``): a kind offers every metric whose need it meets.
BackendCapability = Literal[
    "token-logprobs",  # log-probabilities of every token of a text (CLL, ULL)
    "continuation-logliks",  # log-likelihoods of continuations after a shared prefix
    "masked-logprobs",  # pseudo-log-likelihoods from a masked LM (AUL)
    "chat-answers",  # answers from a chat API, with top log-probs where it gives them
    "embeddings",  # vectors of words or sentences
]


# ----------------------------------------------------------------------------- metrics


class MetricSpecs(Protocol):
    """The family's metric specs, given the family they belong to (each spec names it)."""

    def __call__(self, family: Family) -> Sequence[MetricSpec]: ...


class Measures(Protocol):
    """A run's measures from its stored rows, given its spec's own per-axis aggregate,
    which the family adds to or refines."""

    def __call__(
        self, rows: Sequence[ScoreRow], items_by_id: Mapping[str, Item], *, aggregate: list[Measure]
    ) -> list[Measure]: ...


@dataclass(frozen=True)
class Metrics:
    """The family's metric specs, and what a run's measures add to a spec's aggregate
    (None: the spec's aggregate is all its measures)."""

    specs: MetricSpecs
    measures: Measures | None = None


# ------------------------------------------------------------------------------- items


@dataclass(frozen=True)
class LoadRequest:
    """What the benchmark loader hands a family's ``LoadItems``, built once per file:
    ``spec`` (the manifest entry), ``data`` (its verified bytes), ``version`` (what the
    items' provenance records), ``options`` (``load_benchmarks``' own, e.g. ``size``; the
    entry's are in ``spec.options``), ``errata`` (the corrections, only for a family whose
    ``Items.takes_errata``; None otherwise) and ``data_dir`` (the data folder, where a
    parser reads companion files; None: the default mirror). One object, so a loader
    takes what it uses and a new field changes no family's signature."""

    spec: BenchmarkSpec
    data: bytes
    version: BenchmarkVersion
    options: Mapping[str, object] = field(default_factory=dict)
    errata: ErrataFile | None = None
    data_dir: Path | None = None


class LoadItems(Protocol):
    """Parse a pinned benchmark file (its verified bytes) into items and exclusions."""

    def __call__(self, request: LoadRequest) -> LoadedBenchmark: ...


class BenchmarkSuite(Protocol):
    """The family's benchmark-data quality suite, run whenever one of its files is
    fetched or imported; ``expected_rows``: the manifest's ``rows``."""

    def __call__(self, loaded: LoadedBenchmark, *, expected_rows: int) -> SuiteResult: ...


@dataclass(frozen=True)
class Items:
    """How the family reads and checks its benchmark files.

    ``load`` parses one manifest format's file; ``takes_errata``: the family's rows are
    ones the errata edit, so ``load`` is handed the corrections (False: errata for its
    benchmarks are refused, naming them ``errata_noun``). ``quality`` is its
    benchmark-data suite.
    """

    load: LoadItems
    quality: BenchmarkSuite
    errata_noun: str = "items"
    takes_errata: bool = False


# ----------------------------------------------------------------------------- scoring


class LocalOptions(TypedDict, total=False):
    """What the local driver passes a ``ScoreLocal`` beside the backend, items and metric,
    each left out where the driver has none: ``batch_size`` (sequences per forward pass;
    the backend's by default), ``progress(n)`` after each finished batch, ``already_scored``
    (a resumed run's item ids, skipped), ``on_batch(rows)`` with each finished batch before
    the next starts, and the metric panel (``panel``: score it beside the metric, default
    True; ``panel_metrics``: asked on top of its defaults), which a family without a panel
    ignores. Written once here, so a family's scorer takes them as ``**options`` and reads
    what it uses."""

    batch_size: int | None
    progress: Callable[[int], None] | None
    already_scored: Collection[str]
    on_batch: Callable[[list[ScoreRow]], None] | None
    panel: bool
    panel_metrics: Sequence[str]


class ScoreLocal(Protocol):
    """Score items with a local backend, in item order (``LocalOptions``: batches handed
    on as they finish, a resumed run's items skipped)."""

    def __call__(
        self, backend: object, items: list[Item], metric: str, **options: Unpack[LocalOptions]
    ) -> list[ScoreRow]: ...


class ScoreApi(Protocol):
    """How the chat API driver plans and reads ``metric`` (None: no chat API scores it)."""

    def __call__(self, metric: str) -> ApiScoring | None: ...


class ScoreSnapshot(Protocol):
    """A driver of its own: scores a snapshot and stores its runs (every repeat)."""

    def __call__(self, ctx: JobContext) -> list[RunOutcome]: ...


@dataclass(frozen=True)
class Scoring:
    """How the family's items are scored.

    ``local``: by the local driver with a log-prob backend; ``api``: by the chat API
    driver; ``driver``: a driver of the family's own, used by every snapshot kind whose
    backend meets its metrics' needs and that names no driver itself (the association
    tests' embedding driver). A task scored some other way (a model and a judge) is the
    family's ``Run.add``.
    """

    local: ScoreLocal | None = None
    api: ScoreApi | None = None
    driver: ScoreSnapshot | None = None


# ------------------------------------------------------------------------------- drift


@dataclass(frozen=True)
class CompareRequest:
    """What drift's session hands a family's ``Compare`` for one pair of runs: the
    ``view`` both are read from, ``new_run_id`` and ``baseline_run_id``, ``alpha`` (the
    session's false discovery rate, drift's ``ALPHA``), ``confidence`` (the level of its
    intervals, drift's ``CONFIDENCE``), ``noise_book`` (the session's shared reads of
    repeat groups; None: the comparator makes its own), ``role`` (what the baseline is to
    the new run: "previous run", a pinned reference, ...), ``sign_flips`` (the session's
    batch for the delta tests' p-values; None: the comparisons come back complete) and
    ``controls`` (benchmark -> its control benchmarks; None: the manifest's). One object,
    so a comparator reads what it uses and a new field changes no family's signature."""

    view: StoreView
    new_run_id: str
    baseline_run_id: str
    alpha: float = 0.05
    confidence: float = 0.95
    noise_book: NoiseBook | None = None
    role: str = "previous run"
    sign_flips: SignFlipBatch | None = None
    controls: Mapping[str, Sequence[str]] | None = None


class Compare(Protocol):
    """Drift's comparator: the paired comparisons of two runs of the family."""

    def __call__(self, request: CompareRequest) -> Sequence[Comparison]: ...


class Unscored(Protocol):
    """The subjects only one run of the pair scored (named by drift, never compared),
    handed the ``CompareRequest`` the family's ``Compare`` was."""

    def __call__(self, request: CompareRequest) -> list[UnscoredAxis]: ...


class Explain(Protocol):
    """The comparisons with their verdicts in words, written after the session's BH
    adjustment, when its number of tests is known."""

    def __call__(
        self, comparisons: Sequence[Comparison], *, alpha: float, n_tests: int
    ) -> Sequence[Comparison]: ...


class DriftLines(Protocol):
    """``drift``'s default output for the family's own comparison type."""

    def __call__(
        self,
        comparisons: Sequence[Comparison],
        snapshot_of: dict[str, str],
        width: int,
        level: str,
        *,
        drift: DriftResult,
        show_flips: bool = False,
    ) -> list[str]: ...


class DriftTable(Protocol):
    """Prints the family's part of ``drift --format table-wide``."""

    def __call__(
        self,
        comparisons: Sequence[Comparison],
        level: str,
        *,
        drift: DriftResult | None = None,
        show_flips: bool = False,
    ) -> None: ...


@dataclass(frozen=True)
class DriftJsonRequest:
    """What ``drift --format json`` hands a family's ``DriftJson``: its ``comparisons``
    (possibly none), ``snapshot_of`` (each run's snapshot id), the whole ``drift`` result
    (its unscored axes; None where there is none) and ``show_flips`` (list the items whose
    answer moved; a family whose items do not flip ignores it). One object, so a family
    reads what it shows and a new field changes no family's signature."""

    comparisons: Sequence[Comparison]
    snapshot_of: Mapping[str, str]
    drift: DriftResult | None = None
    show_flips: bool = False


class DriftJson(Protocol):
    """The family's keys of ``drift --format json`` (called with no comparisons too)."""

    def __call__(self, request: DriftJsonRequest) -> dict[str, object]: ...


@dataclass(frozen=True)
class Drift:
    """How two runs of the family compare and how ``drift`` shows it.

    ``compare`` pairs the runs' items; the session adjusts every p for the FDR.
    ``lines``/``table``/``json`` draw a comparison type of the family's own; None: its
    comparisons are drift's generic records, drawn by the CLI.
    """

    compare: Compare
    unscored: Unscored | None = None
    explain: Explain | None = None
    lines: DriftLines | None = None
    table: DriftTable | None = None
    json: DriftJson | None = None


# ---------------------------------------------------------------------------- terminal


class CliTable(Protocol):
    """The family's table for ``run`` and ``show``."""

    def __call__(self, measures: Sequence[Measure], title: str) -> RenderableType: ...


class ShowTables(Protocol):
    """``show``'s tables where they differ from ``run``'s."""

    def __call__(
        self, measures: Sequence[Measure], metric: str, title: str
    ) -> list[RenderableType]: ...


class ShowJson(Protocol):
    """The family's own keys of ``show --format json``."""

    def __call__(self, measures: Sequence[Measure], metric: str) -> dict[str, object]: ...


class ItemScores(Protocol):
    """``show --items``' per-item rows where the family's items are not sentence pairs."""

    def __call__(
        self, view: StoreView, run_id: str, *, with_texts: bool
    ) -> list[dict[str, object]]: ...


@dataclass(frozen=True)
class Terminal:
    """How ``run`` and ``show`` draw the family's measures (None: every measure a row)."""

    cli_table: CliTable | None = None
    show_tables: ShowTables | None = None
    show_json: ShowJson | None = None
    item_scores: ItemScores | None = None


# ------------------------------------------------------------------------------ report


@dataclass(frozen=True)
class ReportScope:
    """What the report asks of every family's section, built once per report: ``since``
    (the trends' window; None: every run), ``flags`` (drift's flag of each (new run,
    benchmark, axis)), ``new_runs`` (each compared pair's new run) and ``with_flips``
    (list the items whose answer moved: ``report --show-flips``; a family whose items do
    not flip ignores it)."""

    since: datetime | None
    flags: dict[tuple[str, str, str], str]
    new_runs: Sequence[str]
    with_flips: bool = False


class BuildSection(Protocol):
    """The family's section of the report from its comparisons and the stored runs, in the
    report's ``scope``; None when it has nothing of its own to show."""

    def __call__(
        self, view: RunReader, comparisons: Sequence[Comparison], scope: ReportScope
    ) -> FamilySection | None: ...


@dataclass(frozen=True)
class Report:
    """The family's part of the report: one pattern for every family.

    ``section`` is its section model (a ``report.section.FamilySection`` declared in its
    folder), which holds what it shows and renders its parts (lead, answer, block,
    appendix, its headline and verdicts; each with a default that shows nothing, or, for
    the headline and verdicts, its comparisons among drift's generic records). ``build``
    fills it (None: the default section, for a family whose comparisons are drift's
    generic records and that shows nothing else). A family without ``section`` is not in
    the report.
    """

    section: type[FamilySection] | None = None
    build: BuildSection | None = None


# --------------------------------------------------------------------------- importers


class ImporterDeclarations(Protocol):
    """``bias-monitor import <name>`` commands, declared as data
    (``monitor.importers.spec.Importer``: what the command reads, its options model and
    the work, which prints nothing); the CLI builds one command from each, in one loop."""

    def __call__(self) -> Mapping[str, Importer]: ...


@dataclass(frozen=True)
class Importers:
    """What the family adds to ``bias-monitor import``."""

    declared: ImporterDeclarations | None = None


# --------------------------------------------------------------------------------- run


class RunLoaderOptions(Protocol):
    """The benchmark loader's options that the family's ``run`` options ask for (``--size``
    -> ``size``), each value checked before anything is read (a refused one is a
    ``UserInputError``); handed to every loader of the run (``load_benchmarks``)."""

    def __call__(self, options: BaseModel) -> Mapping[str, str]: ...


class RunReplacesDefaults(Protocol):
    """Whether these options bring benchmarks of their own that, when no ``-b`` is given,
    are all the run scores instead of the manifest's default selection."""

    def __call__(self, options: BaseModel) -> bool: ...


class RunCheck(Protocol):
    """The family's ``run`` options checked against the benchmarks selected from the
    manifest, before any file is read (an option that applies to some formats only)."""

    def __call__(self, options: BaseModel, specs: Sequence[BenchmarkSpec]) -> None: ...


@dataclass(frozen=True)
class TaskRequest:
    """What ``run`` hands a family's ``ScoreTask`` for one snapshot: the ``store`` the run
    is written to, the ``snapshot`` scored, the run's ``options`` (repeats, seed, ...),
    ``on_event`` (its messages) and ``progress_factory`` (its progress bars; None: none).
    One object, so a task reads what it uses and a new field changes no family's
    signature."""

    store: Store
    snapshot: Snapshot
    options: RunOptions
    on_event: EventSink
    progress_factory: ProgressFactory | None = None


class ScoreTask(Protocol):
    """One snapshot scored on a task the family scores itself (not by the snapshot kind's
    driver), stored as a run of its own."""

    def __call__(self, request: TaskRequest) -> RunOutcome: ...


@dataclass(frozen=True)
class RunAdditions:
    """What a family's options add to a run: ``benchmarks`` that each snapshot's driver
    scores beside the manifest's, and ``tasks`` the family scores itself, each one run
    per snapshot after the driver's."""

    benchmarks: Sequence[LoadedBenchmark] = ()
    tasks: Sequence[ScoreTask] = ()


class RunAdd(Protocol):
    """Benchmarks and tasks the family's options add to the run (read once, after the
    manifest's benchmarks are loaded); ``snapshots``: every pinned snapshot, by id (a task
    may name one, such as a judge)."""

    def __call__(
        self,
        options: BaseModel,
        manifest: BenchmarkManifest,
        *,
        snapshots: Mapping[str, Snapshot],
        seed: int,
        on_event: EventSink,
    ) -> RunAdditions: ...


@dataclass(frozen=True)
class Panel:
    """The metric panel a local scorer fills beside the run's metric (``ScoreLocal``'s
    ``panel`` and ``panel_metrics``): whether it is scored, and the metrics asked on top
    of its default ones."""

    scored: bool = True
    metrics: tuple[str, ...] = ()


class RunPanel(Protocol):
    """The panel these options ask for, checked (a metric that is no panel metric is a
    ``UserInputError``)."""

    def __call__(self, options: BaseModel) -> Panel: ...


@dataclass(frozen=True)
class Run:
    """What the family adds to ``run``.

    ``options``: a pydantic model whose fields are ``run`` flags (``json_schema_extra
    ["flag"]`` the flag, ``description`` its help); the CLI lists them in ``run --help``
    and a Python caller passes an instance in ``RunRequest.family_options``. The hooks
    are handed that instance (the request's, else the model's defaults), so a family
    without ``options`` has none of them called. In the order ``run`` calls them:
    ``loader_options`` (its flags as loader options, checked first), ``panel`` (the local
    scorer's metric panel), ``replaces_defaults`` and ``check`` (against the manifest's
    selection), ``add`` (benchmarks and tasks of its own).
    """

    options: type[BaseModel] | None = None
    loader_options: RunLoaderOptions | None = None
    panel: RunPanel | None = None
    replaces_defaults: RunReplacesDefaults | None = None
    check: RunCheck | None = None
    add: RunAdd | None = None


# The capabilities' hooks, by capability, as ARCHITECTURE.md lists them (a test compares).
CAPABILITIES: dict[str, type] = {
    "items": Items,
    "metrics": Metrics,
    "scoring": Scoring,
    "drift": Drift,
    "terminal": Terminal,
    "report": Report,
    "importers": Importers,
    "run": Run,
}
