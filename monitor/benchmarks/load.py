"""Load benchmarks for a run: verified cached file → rows → errata → items and exclusions.

This is the one entry point other rooms use; it reads only files that pass their
pinned checksum, so a run can never score a file other than the one its provenance
names.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monitor.benchmarks.errata import ErrataFile, load_errata
from monitor.benchmarks.fetch import read_verified
from monitor.benchmarks.items import BenchmarkVersion, LoadedBenchmark
from monitor.benchmarks.manifest import BenchmarkManifest, BenchmarkSpec, load_manifest
from monitor.contract.capabilities import LoadRequest
from monitor.contract.registry import formats
from monitor.errors import UserInputError


def load_benchmarks(
    ids: list[str] | None = None,
    *,
    errata: str = "current",
    data_dir: Path | None = None,
    manifest: BenchmarkManifest | None = None,
    errata_file: Path | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[LoadedBenchmark]:
    """Parse the selected benchmarks from the data cache: exactly ``ids``, or the defaults
    with their controls when ``ids`` is None (the CLI expands controls itself, with
    ``BenchmarkManifest.select``, before fetching and loading).

    ``errata``: ``"current"`` applies ``data/errata.toml`` (or ``errata_file``) at the
    version it declares; ``"none"`` uses the raw files; any other value must equal the
    declared version, so a run asking for an errata version that is not here fails.

    ``options`` go to the family loaders (``Family.items.load``, found by the manifest
    entry's format), on top of each manifest entry's own options: e.g. ``{"size":
    "mini"}`` for choice questions; a loader that takes no such option ignores it.
    """
    manifest = manifest if manifest is not None else load_manifest()
    specs = manifest.select(ids, controls=ids is None)
    corrections = _resolve_errata(errata, errata_file)
    if corrections is not None:
        unknown = sorted({e.benchmark for e in corrections.erratum} - set(manifest.benchmarks))
        if unknown:
            # An erratum for an id the manifest lacks would silently never apply.
            raise UserInputError(
                f"errata file names unknown benchmark id(s) {', '.join(unknown)}; "
                f"known ids: {', '.join(manifest.benchmarks)}"
            )
    return [_load_one(manifest, spec, corrections, data_dir, options) for spec in specs]


def _resolve_errata(errata: str, errata_file: Path | None) -> ErrataFile | None:
    if errata == "none":
        return None
    loaded = load_errata(errata_file)
    if errata not in ("current", loaded.version):
        raise UserInputError(
            f"errata version {errata!r} is not available; the errata file holds version "
            f"{loaded.version!r} (use 'current' or 'none')"
        )
    return loaded


def _load_one(
    manifest: BenchmarkManifest,
    spec: BenchmarkSpec,
    corrections: ErrataFile | None,
    data_dir: Path | None,
    options: Mapping[str, Any] | None = None,
) -> LoadedBenchmark:
    data = read_verified(spec, data_dir)
    version = BenchmarkVersion(
        benchmark=spec.id,
        source_commit=manifest.source_of(spec).commit,
        sha256=spec.sha256,
        errata_version=corrections.version if corrections is not None else "none",
    )
    items = formats()[spec.format].items()
    if not items.takes_errata and corrections is not None and corrections.for_benchmark(spec.id):
        raise UserInputError(f"errata for {spec.id}: {items.errata_noun} take no errata")
    return items.load(
        LoadRequest(
            spec,
            data,
            version,
            options or {},
            errata=corrections if items.takes_errata else None,
            data_dir=data_dir,
        )
    )
