"""The pair family's loader (its ``load`` hook): sentence-pair CSVs (Indian-BhED, CrowS-
Pairs, and translations of them) and the Indic-Bias taxonomy (identity pairs), from a
verified file to items and exclusions.

Sentence pairs are the one kind of item errata edit (``data/errata.toml``), so this
loader takes the errata and the data folder (the taxonomy's companion files); the
parsers themselves are ``monitor.families.pairs.parse`` and ``monitor.families.pairs.taxonomy``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monitor.benchmarks.errata import apply_errata
from monitor.benchmarks.fetch import read_verified
from monitor.benchmarks.items import (
    BenchmarkVersion,
    LoadedBenchmark,
    check_row_count,
    id_namespace,
)
from monitor.benchmarks.manifest import BenchmarkManifest, BenchmarkSpec, load_manifest
from monitor.contract.capabilities import LoadRequest
from monitor.errors import UserInputError
from monitor.families.pairs import taxonomy
from monitor.families.pairs.indic_official import load_official
from monitor.families.pairs.parse import parse_rows, read_table

CSV_OPTIONS = {"indian-bhed": frozenset({"strip_sentences"}), "crows-pairs": frozenset()}


def load(request: LoadRequest) -> LoadedBenchmark:
    """The family's ``load`` hook: a pinned pair file with ``errata`` applied (None: the
    raw file). Of ``options`` (``load_benchmarks``' own) a sentence-pair file takes
    ``size`` (``run --size``: ``mini`` keeps whole templates per axis, ``sizes``); the
    others (a translation of choice questions) are not the pairs'."""
    spec, data, version, options = request.spec, request.data, request.version, request.options
    errata, data_dir = request.errata, request.data_dir
    name = f"{spec.id} ({spec.path})"
    size = str((options or {}).get("size", "full"))
    if spec.format == "indic-taxonomy":
        if size == "mini":
            raise UserInputError(
                f"--size mini applies to sentence-pair files, not to {spec.id}; the taxonomy "
                "has sized entries of its own (indic-taxonomy-ci, indic-taxonomy-mini)"
            )
        return _load_taxonomy(spec, data, version, data_dir, name)
    unknown = sorted(set(spec.options) - CSV_OPTIONS.get(spec.format, frozenset()))
    if unknown:
        raise UserInputError(f"{name}: unknown option(s) {', '.join(unknown)}")
    rows = read_table(data, spec.format, name=name)
    check_row_count(rows, spec.rows, name=name)
    errata_by_row: dict[int, tuple[str, ...]] = {}
    if errata is not None:
        rows, errata_by_row = apply_errata(rows, errata.for_benchmark(spec.id), name=name)
    parsed = parse_rows(
        rows,
        spec.format,
        version=version,
        axis=spec.axis,
        region=spec.region,
        errata_by_row=errata_by_row,
        # A normalisation of the input like an erratum: the raw file (errata none) keeps it.
        strip_sentences=bool(spec.options.get("strip_sentences")) and errata is not None,
    )
    loaded = LoadedBenchmark.of_entry(
        spec,
        version,
        parsed,
        source_rows=len(rows),
        language=spec.language,
        reference_rows=parsed.reference_rows,
        sampling=dict(spec.options),
    )
    return _sized(loaded, size, spec.options.get("seed", 0), name)


def _sized(loaded: LoadedBenchmark, size: str, seed: Any, name: str) -> LoadedBenchmark:
    """``loaded`` at ``size``: every item (``full``, ``default``: unchanged, unrecorded),
    or the ``mini`` sample, recorded with its seed, the rows left out ``not_sampled``."""
    from dataclasses import replace

    from monitor.families.pairs.sizes import SIZES, mini_sample

    if size not in SIZES:
        raise UserInputError(f"{name}: size {size!r} is not one of {', '.join(SIZES)}")
    if size != "mini":
        return loaded
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UserInputError(f"{name}: seed must be an integer")
    kept = mini_sample(loaded.items, seed)
    rows = {i.source_row for i in kept}
    return replace(
        loaded,
        items=kept,
        not_sampled=sorted({i.source_row for i in loaded.items} - rows),
        sampling={**loaded.sampling, "size": size, "seed": seed},
    )


def _load_taxonomy(
    spec: BenchmarkSpec,
    data: bytes,
    version: BenchmarkVersion,
    data_dir: Path | None,
    name: str,
) -> LoadedBenchmark:
    missing = [c for c in taxonomy.COMPANIONS if c not in spec.companions]
    if missing:
        raise UserInputError(f"{name}: the manifest lacks companion file(s) {', '.join(missing)}")
    options = taxonomy.TaxonomyOptions.from_options(spec.options, name=name)
    parsed = taxonomy.read_taxonomy(
        data,
        read_verified(spec.companion_spec("identities"), data_dir),
        read_verified(spec.companion_spec("tribe_pairs"), data_dir),
        name=name,
    )
    check_row_count(parsed.stereotypes, spec.rows, name=name)
    templates = taxonomy.load_templates()
    built = taxonomy.build_items(
        parsed,
        templates,
        options,
        version=version,
        namespace=id_namespace(version),
        region=spec.region,
    )
    return LoadedBenchmark.of_entry(
        spec,
        version,
        built,
        source_rows=len(parsed.stereotypes),
        language=spec.language,
        not_sampled=built.not_sampled,
        sampling={**options.as_dict(), "templates_version": templates.version},
    )


def load_taxonomy(
    manifest: BenchmarkManifest | None = None,
    benchmark: str = "indic-taxonomy",
    data_dir: Path | None = None,
) -> taxonomy.Taxonomy:
    """The pinned Indic-Bias taxonomy (identity lists and tribe comparators), for building
    identity pairs from other templates (``monitor.families.pairs.indic_official``)."""
    manifest = manifest if manifest is not None else load_manifest()
    spec = manifest.select([benchmark], controls=False)[0]
    return taxonomy.read_taxonomy(
        read_verified(spec, data_dir),
        read_verified(spec.companion_spec("identities"), data_dir),
        read_verified(spec.companion_spec("tribe_pairs"), data_dir),
        name=spec.id,
    )


def official_templates(
    manifest: BenchmarkManifest,
    folder: Path,
    tasks: list[str],
    *,
    partners: int,
    limit: int | None,
    seed: int,
    data_dir: Path | None = None,
) -> list[LoadedBenchmark]:
    """What ``run --indic-bias DIR`` reads (``run_hooks.add``): the requested
    tasks of a user's downloaded copy of the official Indic-Bias templates, each identity
    paired with partners from the pinned taxonomy (which the caller has fetched)."""
    tax = load_taxonomy(manifest, data_dir=data_dir)
    return load_official(folder, tasks, tax, partners=partners, limit=limit, seed=seed)
