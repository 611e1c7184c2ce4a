"""An explicit, versioned errata layer over third-party benchmark files.

Upstream files are never edited in place: a correction is a row in ``data/errata.toml``
that names the exact raw cell it replaces. Applying it checks that the cell still holds
the ``old`` text, so an erratum written for one file can never silently rewrite a
different one (a new upstream commit, a re-ordered file). The errata version is part of
``BenchmarkVersion``; ``errata="none"`` reproduces the raw file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from monitor import paths
from monitor.benchmarks.manifest import BenchmarkId, NonEmpty, read_toml
from monitor.errors import DataIntegrityError, UserInputError


class Erratum(BaseModel):
    """Replace one raw cell: row ``source_row`` (0-based data row), column ``field``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: BenchmarkId
    benchmark: NonEmpty
    source_row: Annotated[int, Field(ge=0)]
    field: NonEmpty  # column name exactly as in the CSV header
    old: str  # the exact raw cell text expected in the file
    new: str
    reason: NonEmpty


class ErrataFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
    erratum: list[Erratum] = []

    @model_validator(mode="after")
    def _unique(self) -> ErrataFile:
        if self.version == "none":
            raise ValueError('version "none" is reserved for the raw files')
        ids = [e.id for e in self.erratum]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate erratum id(s): {', '.join(dupes)}")
        # Two errata on one cell would depend on their order; one erratum per cell is clearer.
        cells = [(e.benchmark, e.source_row, e.field) for e in self.erratum]
        clash = sorted({c for c in cells if cells.count(c) > 1})
        if clash:
            b, r, f = clash[0]
            raise ValueError(f"more than one erratum for {b} row {r} field {f}")
        return self

    def for_benchmark(self, benchmark: str) -> list[Erratum]:
        return [e for e in self.erratum if e.benchmark == benchmark]


def default_errata_path() -> Path:
    return paths.config_dir() / "errata.toml"


def load_errata(path: Path | None = None) -> ErrataFile:
    """Read and validate the errata file; problems become one ``UserInputError`` line."""
    path = Path(path) if path is not None else default_errata_path()
    raw = read_toml(path, "errata file")
    try:
        return ErrataFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise UserInputError(f"errata file {path} is invalid: {loc}: {first['msg']}") from None


def apply_errata(
    rows: list[dict[str, str]], errata: Iterable[Erratum], *, name: str
) -> tuple[list[dict[str, str]], dict[int, tuple[str, ...]]]:
    """Return corrected copies of ``rows`` and, per touched row, the erratum ids applied.

    ``rows`` is left untouched. A stale erratum (row out of range, unknown column, or a
    cell that no longer holds ``old`` exactly) is a ``DataIntegrityError``: the file is
    not the one the erratum was written for. Cell text is not echoed (it may be offensive).
    """
    out = list(rows)
    applied: dict[int, list[str]] = {}
    for e in errata:
        where = f"stale erratum {e.id}: {name} row {e.source_row} field {e.field!r}"
        if e.source_row >= len(rows):
            raise DataIntegrityError(f"{where}: the file has only {len(rows)} data rows")
        row: Mapping[str, str] = out[e.source_row]
        if e.field not in row:
            raise DataIntegrityError(f"{where}: no such column")
        if row[e.field] != e.old:
            raise DataIntegrityError(f"{where}: the cell no longer holds the expected 'old' text")
        out[e.source_row] = {**row, e.field: e.new}
        applied.setdefault(e.source_row, []).append(e.id)
    return out, {r: tuple(ids) for r, ids in applied.items()}
