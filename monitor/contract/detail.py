"""Detail tables: the columns a family keeps beside the store's generic core records.

The store's ``items`` and ``scores`` hold what every family has (an item's identity,
kind and payload; a score's outcome, delta and details). A family whose rows carry more
(the pairs' two sentences and their log-probabilities) declares a ``DetailTable`` on its
``Family``; the store creates it on open, keys it like the core table it extends, moves
the family's values in and out of it, and applies the table's own migrations in order.

Pure declarations: column types are DuckDB type names, and a migration is a typed step
the store turns into SQL (no SQL outside ``monitor.store``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# A detail table extends one core table and shares its key: one detail row per item
# (``items``: item_id) or per score (``scores``: run_id, item_id).
Extends = Literal["items", "scores"]
KEYS: dict[str, tuple[str, ...]] = {"items": ("item_id",), "scores": ("run_id", "item_id")}
# The column types a declaration may use (what the store knows how to carry in Arrow).
ColumnType = Literal["VARCHAR", "VARCHAR[]", "DOUBLE", "INTEGER", "BIGINT", "BOOLEAN", "JSON"]
Default = str | int | float | bool | tuple[str, ...] | None


@dataclass(frozen=True)
class Bounds:
    """Where a number must lie wherever it is present (the results suite's check):
    ``minimum``/``maximum`` (None: open), and what the number is, as the check says it
    after the column's name (e.g. "is a log-probability, so ≤ 0")."""

    says: str
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class DetailColumn:
    """One column: its name (the record's attribute of that name, else the key of that
    name in the item's ``payload`` / the score's ``details``), DuckDB type and the value
    a record has when it carries nothing here. Only rows of the declaring family (by the
    item's kind; a score by its item's) get a detail row, and only when some column
    differs from its default; a missing row reads back as the defaults.

    ``finite``: the store flags a non-finite value as it reads the column and the results
    suite holds it to finite numbers where present; ``bounds``: the range it must lie in.
    ``shown``: ``show --items`` lists it (``always``), or only when texts are asked for
    (``with_texts``: benchmark text, which holds slurs and stereotypes).
    """

    name: str
    type: ColumnType
    default: Default = None
    finite: bool = False
    bounds: Bounds | None = None
    shown: Literal["always", "with_texts"] | None = None


@dataclass(frozen=True)
class AddColumn:
    """Migration step: add ``column`` (existing rows get its default)."""

    column: DetailColumn


@dataclass(frozen=True)
class DropColumn:
    """Migration step: drop the column ``name``."""

    name: str


@dataclass(frozen=True)
class RenameColumn:
    """Migration step: rename the column ``old`` to ``new``."""

    old: str
    new: str


MigrationStep = AddColumn | DropColumn | RenameColumn


@dataclass(frozen=True)
class DetailMigration:
    """A table's migration to ``version`` (2, 3, ...; version 1 is the table as first
    declared). ``columns`` always states the newest shape: a new store creates the table
    from it at the latest version, an older one is brought there by these steps in order."""

    version: int
    description: str
    steps: tuple[MigrationStep, ...]


@dataclass(frozen=True)
class DetailTable:
    """A family's own table beside a core one: ``name`` (unique across families, e.g.
    ``pair_scores``), the core table it ``extends`` (its key is that table's), its
    ``columns`` beyond the key, and its ``migrations`` in version order.

    ``record``: the family's record class (a subclass of the core ``Item`` / ``ScoreRow``
    whose extra fields are these columns) that the store reads the family's rows back
    as; None: the core record, the columns filled from its payload/details."""

    name: str
    extends: Extends
    columns: tuple[DetailColumn, ...]
    migrations: tuple[DetailMigration, ...] = ()
    record: type[Any] | None = None

    @property
    def key(self) -> tuple[str, ...]:
        """The core table's key, which this table shares (one row per core row at most)."""
        return KEYS[self.extends]

    @property
    def version(self) -> int:
        """The newest version: 1, or the last migration's."""
        return self.migrations[-1].version if self.migrations else 1
