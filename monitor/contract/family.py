"""``Family``: one kind of result, with everything the rooms need of it.

A family folder (``monitor/families/<name>/``, or a package of its own) exports one
``Family`` and registers it under the ``bias_monitor.families`` entry-point group. The
rooms read its metadata and call its capabilities (``monitor.contract.capabilities``)
through ``monitor.contract.registry``; they never import a family's modules.

Pure declarations: no I/O, no room imported at run time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING

from monitor.contract.capabilities import (
    CAPABILITIES,
    Drift,
    Importers,
    Items,
    Metrics,
    Report,
    Run,
    Scoring,
    Terminal,
)

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from monitor.contract.detail import DetailTable
    from monitor.records import MeasureKind


class Builders(ABC):
    """A family's capabilities (``monitor.contract.capabilities``), one method each that
    builds it: ``items`` (load and check its files) and ``metrics`` (its metric specs,
    each saying what it needs of a backend, and what a run's measures add), which every
    family writes; ``scoring``, ``terminal``, ``report``, ``importers`` and ``run`` (its
    ``run`` options and what they add to a run), which default to the empty capability
    (every hook None); and ``drift``, None for a family without a drift comparator.

    A method imports the family's modules (numpy, scipy, the store, torch for a local
    scorer) in its body, so each is imported only when a room first asks for that
    capability: loading the registry costs the imports of the families' ``family.py``
    alone, and the CLI starts without them. ``Family`` calls each method once and keeps
    what it returned.
    """

    drift: Callable[[], Drift] | None = None

    @abstractmethod
    def items(self) -> Items:
        """How the family reads and checks its benchmark files."""

    @abstractmethod
    def metrics(self) -> Metrics:
        """Its metric specs, and what a run's measures add."""

    def scoring(self) -> Scoring:
        return Scoring()

    def terminal(self) -> Terminal:
        return Terminal()

    def report(self) -> Report:
        return Report()

    def importers(self) -> Importers:
        return Importers()

    def run(self) -> Run:
        return Run()


@dataclass(frozen=True, eq=False)
class Family:
    """One kind of result and what it supplies to the rooms.

    What it is: ``item_kinds`` (``Item.kind``), ``measure_kinds`` (rates, effect sizes),
    ``headline`` (the measure tables and trends show first), ``outcomes`` (whether rows
    carry a stereo/anti/... outcome), ``formats`` (the manifest formats its items
    capability loads), ``benchmarks`` (a manifest TOML of its own, same schema as
    ``data/benchmarks.toml``, merged with it; a file may ship inside the family's package,
    pinned by sha256, without a URL).

    Its capabilities come from ``capabilities`` (a ``Builders``: one method per
    capability, called on first use): the rooms call ``family.items()``,
    ``family.drift()`` (``drift`` is None without a comparator) and so on. A room may
    call one again: ``Family`` keeps each (its modules are imported, and the capability
    built, once).

    Words: ``show_title`` heads its table in ``show``; ``item_noun`` and ``count_note``
    word the line under ``run``'s table; ``drift_units`` is said once in ``drift``'s
    first line; ``words`` is what a reader calls its results in the report's one-line
    verdict (empty: ``name``). ``sized``: its loader takes ``run --size``.

    ``kind_default``: its items are what a snapshot kind's default metric scores (the
    pairs' for causal and masked LMs' ``cll``/``aul``, the association tests' for
    embedding models' ``weat``). A family without it (the choice questions, a plug-in)
    has its items scored by the first of its own metrics the snapshot's kind offers, and
    they cannot share a run with another family's items (a run has one metric).

    ``skips_unreadable``: a benchmark of its run whose script the model's tokenizer cannot
    represent (``scoring.coverage``) is left out of the run, named with the reason, and
    the rest scored, instead of the snapshot refused (a family of one language per
    benchmark); with nothing left the snapshot is refused, naming every one.

    ``rank`` places it in the registry's order (lower first, then by entry-point name),
    which is the order of the report's parts, ``drift``'s output and a kind's metrics:
    the in-tree families take 10, 20 and 30 (the pairs first, whose ``cll`` is the causal
    LMs' default metric); a plug-in comes after them unless it asks otherwise.
    """

    name: str
    summary: str
    item_kinds: tuple[str, ...]
    measure_kinds: tuple[MeasureKind, ...]
    headline: str
    outcomes: bool
    formats: tuple[str, ...]
    capabilities: Builders
    benchmarks: Path | None = None
    show_title: str | None = None
    item_noun: str = "items"
    count_note: str = ""
    sized: bool = False
    kind_default: bool = False
    skips_unreadable: bool = False
    drift_units: str = ""
    words: str = ""
    rank: int = 100
    # Columns beyond the store's generic items/scores, in tables of the family's own
    # (``monitor.contract.detail``), which the store creates and migrates on open.
    detail_tables: tuple[DetailTable, ...] = ()
    # Set from ``capabilities``, each built once, on the first call.
    items: Callable[[], Items] = field(init=False)
    metrics: Callable[[], Metrics] = field(init=False)
    scoring: Callable[[], Scoring] = field(init=False)
    drift: Callable[[], Drift] | None = field(init=False)
    terminal: Callable[[], Terminal] = field(init=False)
    report: Callable[[], Report] = field(init=False)
    importers: Callable[[], Importers] = field(init=False)
    run: Callable[[], Run] = field(init=False)

    def __post_init__(self) -> None:
        # The contract, not every family, keeps what each builder returned: a family
        # writes the method that imports its modules and builds the capability.
        for name in CAPABILITIES:
            build = getattr(self.capabilities, name)
            object.__setattr__(self, name, None if build is None else cache(build))
