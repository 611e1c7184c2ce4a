"""The families the monitor knows, found through the ``bias_monitor.families`` entry points.

Every family, the in-tree ones included, is an entry point of that group naming its
``Family`` object (``package.module:FAMILY``); pyproject.toml registers the
in-tree three exactly as an outside package registers its own. The group is read on first
use, not at import (so no room imports a family while it is itself being imported), and
cached for the process.

Order: by ``Family.rank``, then entry-point name (entry points themselves come in no
reliable order): the pairs first, whose metrics are the causal LMs' defaults, and a
plug-in after the in-tree families unless it says otherwise. This is the order of every
report part, drift's output, a kind's metrics and the ``import`` commands.

This module and the pinned-package model assembler (``monitor.snapshots.resolve``) are
the only places that import a module named by a string.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, TypeVar

from monitor.contract.family import Family
from monitor.errors import UserInputError

if TYPE_CHECKING:
    from monitor.metrics.registry import MetricSpec

GROUP = "bias_monitor.families"

T = TypeVar("T")


class FamilyRegistryError(UserInputError):
    """The installed families cannot be loaded as they are (one line, no traceback)."""


def _load(ep: EntryPoint) -> Family:
    try:
        obj = ep.load()
    except Exception as exc:  # a plug-in's own bug: name it, do not dump its traceback
        raise FamilyRegistryError(
            f"family plug-in {ep.name!r} ({ep.value}) failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(obj, Family):
        raise FamilyRegistryError(
            f"family plug-in {ep.name!r} ({ep.value}) is a {type(obj).__name__}, not a "
            "monitor.contract.Family"
        )
    return obj


@cache
def _families() -> dict[str, Family]:
    eps = sorted(entry_points(group=GROUP), key=lambda ep: ep.name)
    if not eps:
        raise FamilyRegistryError(
            f"no result families are registered (entry-point group {GROUP!r}); install the "
            "package: make install"
        )
    out: dict[str, Family] = {}
    where: dict[str, str] = {}
    for ep in eps:
        family = _load(ep)
        if family.name in out:
            raise FamilyRegistryError(
                f"two families are named {family.name!r}: entry points {where[family.name]!r} "
                f"and {ep.name!r}; uninstall one of them"
            )
        out[family.name] = family
        where[family.name] = ep.name
    out = dict(sorted(out.items(), key=lambda kv: (kv[1].rank, where[kv[0]])))
    formats: dict[str, str] = {}
    for family in out.values():
        for fmt in family.formats:
            if fmt in formats:
                raise FamilyRegistryError(
                    f"manifest format {fmt!r} is claimed by families {formats[fmt]!r} and "
                    f"{family.name!r}"
                )
            formats[fmt] = family.name
    return out


def families() -> tuple[Family, ...]:
    """Every registered family, in the registry's order."""
    return tuple(_families().values())


def find_family(name: str) -> Family | None:
    """The family named ``name``; None where none is registered under it."""
    return _families().get(name)


def get_family(name: str) -> Family:
    """The family named ``name``; an unknown name is a ``UserInputError`` naming the known."""
    family = find_family(name)
    if family is None:
        known = ", ".join(_families())
        raise UserInputError(f"unknown result family {name!r}; known families: {known}")
    return family


def lookup(table: Mapping[str, T], name: str, what: str, plural: str) -> T:
    """``table[name]``; an unknown name is a one-line ``UserInputError`` that names the
    known ones, sorted: how every registry (kinds, metrics) refuses a name."""
    try:
        return table[name]
    except KeyError:
        known = ", ".join(sorted(table))
        raise UserInputError(f"unknown {what} {name!r}; known {plural}: {known}") from None


def formats() -> dict[str, Family]:
    """Every manifest format, with the family that loads it."""
    return {fmt: f for f in families() for fmt in f.formats}


def family_of_items(item_kinds: set[str]) -> list[Family]:
    """The families whose item kinds are among ``item_kinds``, in the registry's order."""
    return [f for f in families() if item_kinds & set(f.item_kinds)]


@cache
def metric_specs() -> Mapping[str, MetricSpec]:
    """Every family's metric specs by name, in the registry's order (the pairs' first, so
    ``cll`` leads); a name two families declare is refused."""
    out: dict[str, MetricSpec] = {}
    for family in families():
        for spec in family.metrics().specs(family):
            if spec.name in out:
                raise FamilyRegistryError(
                    f"metric {spec.name!r} is declared by families {out[spec.name].family.name!r} "
                    f"and {family.name!r}"
                )
            out[spec.name] = spec
    return out


def load_reference(reference: str) -> object:
    """The object a ``"module:attribute"`` reference names, imported now (snapshot kinds
    name their backend loaders and drivers so, to load torch or an HTTP client only when
    a run needs one)."""
    module, _, attr = reference.partition(":")
    return getattr(importlib.import_module(module), attr)
