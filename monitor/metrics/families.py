"""Kinds of results: what a metric's per-item rows are, and how the rest of the monitor
treats them.

A *result family* is declared once here and read by the quality gate (which checks
apply), drift (how two runs of it are compared) and the reports (which measure is the
headline). Rooms dispatch on these declarations, never on a metric's name, so a new kind
of result is a new family and its metric specs, not edits across the store, the gate and
drift. See ARCHITECTURE.md, "Adding a kind of result".

Pure declarations: no I/O, no imports beyond the records.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from monitor.records import MeasureKind


@dataclass(frozen=True)
class ItemNumbers:
    """Which per-item columns of ``scores`` a metric fills, so the gate can require them.

    ``required`` must be present (not NULL, not NaN) on every row, except rows whose
    outcome is in ``unless_outcome_in`` (an API answer that chose neither option has no
    option probabilities). ``non_positive`` columns are additionally log-probabilities or
    means of them, so never above 0. Wherever any number is present it must be finite and
    in range, whatever the family; that part needs no declaration.
    """

    label: str
    required: tuple[str, ...]
    unless_outcome_in: tuple[str, ...] = ()
    non_positive: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResultFamily:
    """One kind of result.

    ``item_kinds``: the item kinds its metrics score (``monitor.benchmarks.items.Item.kind``).
    ``measure_kinds``: what its per-run measures are (rates, effect sizes, ranking scores).
    ``headline``: the measure that tables and trend plots show first.
    ``outcomes``: whether per-item rows carry a stereo/anti/tie/... outcome.
    ``hooks``: what the family's folder (``monitor/families/<name>/``) supplies to the
    generic rooms, its drift comparator (``compare``) included, as ``"module:function"``
    references resolved on first use (the way ``monitor.kinds`` names loaders and
    drivers, and plugin entry points work): the rooms call :meth:`hook` and never import
    the family's modules, so the layer contracts hold and a new family is its folder plus
    one line in ``FOLDER_FAMILIES``.
    The hook names and their signatures are listed in ``monitor/families/__init__.py``.
    ``show_title`` heads the family's table in ``show`` (default: "measures of <snapshot>");
    ``item_noun`` and ``count_note`` word the line under ``run``'s table ("scored 11
    terms; ...; d > 0: ...").
    ``sized``: its loader takes ``run --size mini|default|full`` (a stratified subset);
    ``run`` refuses ``--size`` when no benchmark of the run is of such a family.
    ``drift_units``: what its Δ and MDE are in, said once in ``drift``'s first line when
    it was compared ("Δ and MDE in percentage points"); empty where its lines say it.
    ``words``: what a reader calls its results, in the report's one-sentence verdict
    ("choice questions"); empty: the family's ``name``.
    """

    name: str
    summary: str
    item_kinds: tuple[str, ...]
    measure_kinds: tuple[MeasureKind, ...]
    headline: str
    outcomes: bool
    hooks: Mapping[str, str] = field(default_factory=dict)
    show_title: str | None = None
    item_noun: str = "items"
    count_note: str = ""
    sized: bool = False
    drift_units: str = ""
    words: str = ""

    def hook(self, name: str) -> Callable[..., Any] | None:
        """The family's ``name`` hook, imported on first use; None where it has none."""
        ref = self.hooks.get(name)
        if ref is None:
            return None
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)


# Families that live in their own folder (``monitor/families/<name>/``) declare themselves
# in ``<name>/spec.py``, pure data; one line each here registers them. They are named as
# references, like ``hooks``, so this room never imports a family folder.
FOLDER_FAMILIES = (
    "monitor.families.pairs.spec:PAIR_OUTCOME",
    "monitor.families.association.spec:ASSOCIATION_TEST",
    "monitor.families.choice_qa.spec:CHOICE_QA",
)


def _resolve(ref: str) -> ResultFamily:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


FAMILIES: dict[str, ResultFamily] = {f.name: f for f in (_resolve(r) for r in FOLDER_FAMILIES)}
PAIR_OUTCOME = FAMILIES["pair-outcome"]  # the family most metrics of the registry belong to
# The family of a benchmark whose items say nothing of their kind (every row excluded):
# sentence pairs, the family whose loaders exclude rows for reasons.
DEFAULT_FAMILY = PAIR_OUTCOME.name
