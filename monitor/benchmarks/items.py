"""The item: one scored unit of a benchmark with a stable identity.

An item's id is a hash of the benchmark version and its normalised content, so the
same item in two runs has the same id and an edited one (e.g. by an erratum) gets a
new one. That identity is what makes paired drift tests between runs meaningful.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

from monitor.errors import DataIntegrityError


def normalise_text(text: str) -> str:
    """Unicode NFC and collapsed whitespace: differences that carry no meaning."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def make_content_id(benchmark_version: str, kind: str, payload: Any) -> str:
    """Stable id of an item that is not a sentence pair (a word set, an identity pair ...):
    sha256 over the benchmark namespace, the item kind and its canonical JSON payload."""
    body = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    text = json.dumps([benchmark_version, kind, body], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Item:
    """One scored unit of a benchmark, as every family has it: its identity and content.

    ``kind`` says what the item is (a sentence pair, a word of an association test, a
    choice question ...); its content is in ``payload`` (plain JSON). A family whose items
    carry more fields subclasses this record in its own folder (a sentence pair's two
    sentences and target words) and declares the store columns that hold them
    (``DetailTable.record``). ``template`` is the cluster key: items filled from one
    template move together, which drift's tests account for. Scoring, quality and drift
    read the kind, never guess it from which fields are empty.
    """

    item_id: str
    benchmark: str  # benchmark id from the manifest (data/benchmarks.toml or a family's)
    axis: str  # "caste" | "religion" | "gender" | "race" | CrowS bias_type ...
    region: str  # "india" | "us"
    benchmark_version: str
    source_row: int  # row index in the source file (0-based data row)
    template: str | None = None
    errata: tuple[str, ...] = ()  # ids of errata applied to this row
    kind: str = "item"
    payload: dict[str, Any] = field(default_factory=dict, hash=False, compare=True)

    def texts(self) -> tuple[str, ...]:
        """The sentences a model reads for this item, where the record holds them (a
        tokenizer's coverage of a benchmark is measured on these); none by default."""
        return ()


@dataclass(frozen=True)
class Exclusion:
    """A source row that is not scored, with a machine-readable reason and a human detail."""

    benchmark: str
    benchmark_version: str
    source_row: int
    reason: str  # e.g. "target_mask_mismatch", "duplicate", "empty_target", "unparseable_targets"
    detail: str


@dataclass(frozen=True)
class BenchmarkVersion:
    """What exactly a benchmark id meant for a run: source commit, file hash, errata version."""

    benchmark: str
    source_commit: str
    sha256: str
    errata_version: str  # "none" when the raw file is used

    @property
    def label(self) -> str:
        return (
            f"{self.benchmark}@{self.source_commit[:12]}:{self.sha256[:12]}"
            f":errata-{self.errata_version}"
        )

    def content_id(self, kind: str, payload: Any) -> str:
        """The id of an item of ``kind`` with ``payload`` read from this version's file:
        ``make_content_id`` in its ``id_namespace`` (errata left out)."""
        return make_content_id(id_namespace(self), kind, payload)

    def excluded(self, source_row: int, reason: str, detail: str) -> Exclusion:
        """Source row ``source_row`` of this version's file, left out for ``reason``."""
        return Exclusion(self.benchmark, self.label, source_row, reason, detail)


def source_version(label: str) -> str:
    """A benchmark version label without its errata part (``…:errata-N``).

    Item ids are hashed without the errata version, so runs before and after an errata
    release pair on every untouched item; only the source commit and file decide whether
    two runs scored the same benchmark. The errata change itself shows in the provenance
    diff (``dataset_versions``) as a measurement change.
    """
    return label.split(":errata-", 1)[0]


def id_namespace(version: BenchmarkVersion) -> str:
    """What an item id is hashed over besides the pair: source commit and file, not errata.

    Leaving the errata version out means an erratum changes the ids of the rows it
    touches and no others, so runs before and after an errata release still pair on
    every untouched item. The errata version stays in ``BenchmarkVersion`` for provenance.
    """
    return f"{version.benchmark}@{version.source_commit[:12]}:{version.sha256[:12]}"


def check_row_count(rows: Sequence[object], expected: int, *, name: str) -> None:
    """The manifest pins a row count: a different count means a different or damaged file."""
    if len(rows) != expected:
        raise DataIntegrityError(
            f"{name}: parsed {len(rows)} data rows, but the manifest expects {expected}"
        )


class ManifestEntry(Protocol):
    """What a loaded benchmark takes from its manifest entry (``BenchmarkSpec``)."""

    id: str
    axis: str
    region: str


class Parsed(Protocol):
    """What a parser hands a loaded benchmark: the items and the rows it left out."""

    items: list[Item]
    exclusions: list[Exclusion]


@dataclass
class ParsedRows:
    """``Parsed`` as two plain lists, for a loader that decides row by row itself
    (what it keeps as items, what it leaves out and why) rather than through a parser."""

    items: list[Item] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)


@dataclass
class LoadedBenchmark:
    """A parsed benchmark file: the items to score and the rows left out, with reasons.

    ``reference_rows``: excluded rows that the Indian-BhED code would still score (exact
    duplicates, target/blank mismatches), as items of their own; only a metric that
    reproduces that code (``MetricSpec.scores_excluded_rows``) scores them, and our
    exclusions stay recorded beside it. ``not_sampled``: source rows a sampled variant
    (the taxonomy benchmark's ``per_identity`` option) left out by design, not for a
    defect. ``sampling``: the options that decided the items, recorded with every run.
    """

    benchmark: str
    axis: str
    region: str
    version: BenchmarkVersion
    items: list[Item] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    source_rows: int = 0
    language: str = "en"
    reference_rows: list[Item] = field(default_factory=list)
    not_sampled: list[int] = field(default_factory=list)
    sampling: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_entry(
        cls, entry: ManifestEntry, version: BenchmarkVersion, parsed: Parsed, **more: Any
    ) -> Self:
        """A benchmark loaded under its manifest entry's id, axis and region, with the
        items and exclusions its parser found; ``more``: the other fields (source rows,
        language, sampling, ...)."""
        return cls(
            benchmark=entry.id,
            axis=entry.axis,
            region=entry.region,
            version=version,
            items=parsed.items,
            exclusions=parsed.exclusions,
            **more,
        )
