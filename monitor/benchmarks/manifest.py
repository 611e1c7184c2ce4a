"""Pydantic schema of ``data/benchmarks.toml``: which third-party files a benchmark id means.

The manifest pins every benchmark to a source commit, a URL and a sha256, so that
a benchmark id names exactly one file everywhere. Unknown keys are refused (a typo in
the manifest would otherwise be silently ignored and the pin would not be what the
reader thinks it is).

A family may ship benchmarks of its own (``Family.benchmarks``: a TOML of this schema in
its package); ``load_manifest`` merges them with ``data/benchmarks.toml``. Such an entry
may leave out ``url``: its ``path`` is then a file beside that TOML, inside the family's
package, still pinned by ``sha256`` (``BenchmarkSpec.shipped``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from monitor import paths
from monitor.contract.registry import families, formats
from monitor.errors import UserInputError, closest

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
GitCommit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
BenchmarkId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._-]*$")]
HttpUrl = Annotated[str, StringConstraints(pattern=r"^https?://\S+$")]
NonEmpty = Annotated[str, StringConstraints(min_length=1)]
# Benchmark options: plain scalars only (they are recorded with every run that uses them).
OptionValue = int | float | str | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceSpec(_Strict):
    """A third-party repository at one commit, with its licence and citation for reports."""

    repo: NonEmpty
    commit: GitCommit
    licence: NonEmpty
    citation: NonEmpty


class CompanionFile(_Strict):
    """A further pinned file a benchmark needs besides its main one (the Indic-Bias
    taxonomy's identity list and tribe pairings), fetched and verified the same way."""

    path: NonEmpty
    url: HttpUrl
    sha256: Sha256

    @model_validator(mode="after")
    def _relative_path(self) -> CompanionFile:
        _check_relative(self.path)
        return self


def _check_relative(path: str) -> None:
    # The path is joined onto the cache dir; an absolute or ".." path would write outside it.
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or "\\" in path:
        raise ValueError(f"path {path!r} must be a relative path without '..'")


class BenchmarkSpec(_Strict):
    """One benchmark file. ``id`` is the table's key in the TOML, filled in on load.

    ``language`` is the BCP-47 code of the sentences (a model whose tokenizer cannot
    represent them refuses the benchmark); ``controls`` are benchmarks scored in every
    run that scores this one (the neutral control beside the caste axis); ``companions``
    are further pinned files the parser reads; ``options`` parametrise the parser (the
    taxonomy benchmark's sample size, partners per stereotype, seed and templates).
    """

    id: BenchmarkId
    source: NonEmpty
    format: NonEmpty  # one of the registered families' ``formats``; that family loads it
    axis: NonEmpty
    region: NonEmpty
    path: NonEmpty  # relative POSIX path under the data cache (and under --from / mirror dirs)
    url: HttpUrl | None = None  # None only for a file a family ships (``shipped``)
    sha256: Sha256
    rows: Annotated[int, Field(gt=0)]  # data rows as parsed by Python csv, header excluded;
    # for word sets: terms listed in the file, all sets of all tests
    default: bool = False
    group: BenchmarkId | None = None  # `-b GROUP` selects every benchmark of the group
    language: Annotated[str, StringConstraints(pattern=r"^[a-z]{2,3}(-[A-Za-z0-9]+)*$")] = "en"
    controls: tuple[BenchmarkId, ...] = ()
    companions: dict[str, CompanionFile] = Field(default_factory=dict)
    options: dict[str, OptionValue] = Field(default_factory=dict)
    # Set by ``load_manifest`` (never written in a TOML): the file inside the package of
    # the family that ships this benchmark, read in place of a cached download.
    shipped: Path | None = Field(default=None, exclude=True)

    @model_validator(mode="after")
    def _relative_path(self) -> BenchmarkSpec:
        _check_relative(self.path)
        if self.url is None and self.shipped is None:
            raise ValueError(f"benchmarks.{self.id}: url is required")
        known = formats()
        if self.format not in known:
            raise ValueError(
                f"benchmarks.{self.id}: unknown format {self.format!r}; the registered "
                f"families load {', '.join(known)}"
            )
        return self

    def companion_spec(self, name: str) -> BenchmarkSpec:
        """A companion file as a spec of its own, so fetching and verifying it is the same
        code path as for the main file."""
        c = self.companions[name]
        return self.model_copy(
            update={
                "id": f"{self.id}:{name}",
                "path": c.path,
                "url": c.url,
                "sha256": c.sha256,
                "companions": {},
            }
        )


class BenchmarkManifest(_Strict):
    schema_version: Literal[1]
    sources: dict[str, SourceSpec]
    benchmarks: dict[str, BenchmarkSpec]

    @model_validator(mode="before")
    @classmethod
    def _ids_from_keys(cls, data: Any) -> Any:
        # The TOML key is the id; writing it twice invites the two to disagree.
        if isinstance(data, dict) and isinstance(data.get("benchmarks"), dict):
            filled = {}
            for key, table in data["benchmarks"].items():
                if isinstance(table, dict):
                    if "id" in table and table["id"] != key:
                        raise ValueError(f"benchmarks.{key}: id {table['id']!r} differs from key")
                    table = {**table, "id": key}
                filled[key] = table
            data = {**data, "benchmarks": filled}
        return data

    @model_validator(mode="after")
    def _sources_exist(self) -> BenchmarkManifest:
        for spec in self.benchmarks.values():
            if spec.source not in self.sources:
                known = ", ".join(sorted(self.sources)) or "none"
                raise ValueError(
                    f"benchmarks.{spec.id}: unknown source {spec.source!r} (sources: {known})"
                )
            for control in spec.controls:
                if control not in self.benchmarks or control == spec.id:
                    raise ValueError(f"benchmarks.{spec.id}: unknown control {control!r}")
        return self

    def source_of(self, spec: BenchmarkSpec) -> SourceSpec:
        return self.sources[spec.source]

    def select(self, ids: list[str] | None = None, *, controls: bool = True) -> list[BenchmarkSpec]:
        """The benchmarks a command should use: the named ones, or the defaults when none named,
        each followed by its controls (unless ``controls`` is False).

        A name that is no benchmark id but a ``group`` stands for every benchmark of that
        group, in manifest order. Raises ``UserInputError`` for an unknown id, listing the
        known ones, so a typo on the command line fails before any work starts.
        """
        if ids is None:
            chosen = [b.id for b in self.benchmarks.values() if b.default]
        else:
            groups: dict[str, list[str]] = {}
            for b in self.benchmarks.values():
                if b.group is not None:
                    groups.setdefault(b.group, []).append(b.id)
            ids = [
                member
                for i in ids
                for member in (groups[i] if i not in self.benchmarks and i in groups else [i])
            ]
            unknown = [i for i in ids if i not in self.benchmarks]
            if unknown:
                raise UserInputError(
                    unknown_benchmarks(unknown, list(self.benchmarks), list(groups))
                )
            chosen = list(ids)
        if controls:
            chosen = [x for i in chosen for x in (i, *self.benchmarks[i].controls)]
        return [self.benchmarks[i] for i in dict.fromkeys(chosen)]

    def controls_of(self, benchmark: str) -> tuple[str, ...]:
        """The control benchmarks scored beside ``benchmark`` (none for an unknown id)."""
        spec = self.benchmarks.get(benchmark)
        return spec.controls if spec is not None else ()


# Suggestions per unknown id: a typo has one or two likely targets; a list of every id
# (over a hundred, most of them association tests) on one line helps nobody.
SUGGESTIONS = 5


def unknown_benchmarks(unknown: list[str], ids: list[str], groups: list[str]) -> str:
    """The one-line message for names that are neither a manifest id nor a group: each
    with at most ``SUGGESTIONS`` close ids or groups (the snapshots' "did you mean",
    ``closest``), then where the ids are listed, and the groups (a few)."""
    named = []
    for name in unknown:
        close = closest(name, [*ids, *groups], n=SUGGESTIONS)
        named.append(f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    noun = "id" if len(unknown) == 1 else "ids"
    return (
        f"unknown benchmark {noun} {', '.join(named)}; list the ids with bias-monitor data list"
        + (f"; groups: {', '.join(groups)}" if groups else "")
    )


def default_manifest_path() -> Path:
    return paths.config_dir() / "benchmarks.toml"


def _one_line(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{loc}: {first['msg']}{more}"


def load_manifest(path: Path | None = None) -> BenchmarkManifest:
    """Read and validate the manifest, merged with every family's own benchmarks
    (``Family.benchmarks``); any problem is one ``UserInputError`` naming the file.

    An id (or a source key with other contents) that two files both define is refused:
    one id names one file everywhere."""
    path = Path(path) if path is not None else default_manifest_path()
    raw = read_toml(path)
    for family in families():
        if family.benchmarks is not None:
            extra = _shipped(read_toml(family.benchmarks), family.benchmarks)
            raw = _merged(raw, path, extra, family.benchmarks)
    try:
        return BenchmarkManifest.model_validate(raw)
    except ValidationError as exc:
        raise UserInputError(f"benchmark manifest {path} is invalid: {_one_line(exc)}") from None


def _shipped(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """A family's manifest with each entry that has no ``url`` pointed at its file beside
    the TOML (``BenchmarkSpec.shipped``)."""
    tables = raw.get("benchmarks")
    if not isinstance(tables, dict):
        return raw
    out = {}
    for key, table in tables.items():
        if isinstance(table, dict) and "url" not in table and isinstance(table.get("path"), str):
            _check_relative(table["path"])
            table = {**table, "shipped": path.parent / table["path"]}
        out[key] = table
    return {**raw, "benchmarks": out}


def _merged(raw: dict[str, Any], path: Path, extra: dict[str, Any], where: Path) -> dict[str, Any]:
    """``raw`` (read from ``path``) with a family manifest's (``where``) sources and
    benchmarks added; an id both define, or a source key they define differently, is a
    ``UserInputError`` naming both files."""
    if extra.get("schema_version") != raw.get("schema_version"):
        raise UserInputError(
            f"benchmark manifest {where}: schema_version {extra.get('schema_version')!r} "
            f"differs from {path}'s {raw.get('schema_version')!r}"
        )
    sources = dict(raw.get("sources", {}))
    for key, table in extra.get("sources", {}).items():
        if key in sources and sources[key] != table:
            raise UserInputError(
                f"benchmark manifests {path} and {where} both define source {key!r}, "
                "differently; rename one"
            )
        sources[key] = table
    benchmarks = dict(raw.get("benchmarks", {}))
    for key, table in extra.get("benchmarks", {}).items():
        if key in benchmarks:
            raise UserInputError(
                f"benchmark manifests {path} and {where} both define benchmark id {key!r}; "
                "one id names one file everywhere: rename one"
            )
        benchmarks[key] = table
    return {**raw, "sources": sources, "benchmarks": benchmarks}


def read_toml(path: Path, what: str = "benchmark manifest") -> dict[str, Any]:
    """A benchmark room's TOML file (the manifest, the errata) as a table; a missing,
    unreadable or malformed file is one ``UserInputError`` line naming it as ``what``."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserInputError(f"{what} {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserInputError(f"cannot read {what} {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"{what} {path} is not valid TOML: {exc}") from None
    return raw
