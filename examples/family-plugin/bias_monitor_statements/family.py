"""The family's one ``Family`` object: what bias-monitor finds through the entry point
``truth-statements`` of the ``bias_monitor.families`` group (pyproject.toml).

The metadata is plain data; each capability is a function that builds it on first use
(bias-monitor calls it when a room needs it), so listing the families imports nothing of
this package but this module. bias-monitor's core calls these through its typed contract
(``monitor.contract``) and knows nothing else of this package.
"""

from __future__ import annotations

from pathlib import Path

from monitor.contract.capabilities import (
    Drift,
    Importers,
    Items,
    Metrics,
    Report,
    Scoring,
    Terminal,
)
from monitor.contract.family import Family

FAMILY_NAME = "truth-statements"  # frame.FAMILY_NAME, said here without importing it
FORMAT = "truth-statements-jsonl"  # items.FORMAT


def _items() -> Items:
    from bias_monitor_statements import items, quality

    return Items(load=items.load, quality=quality.validate_statements, errata_noun="statements")


def _metrics() -> Metrics:
    from bias_monitor_statements import measures, metrics

    return Metrics(specs=metrics.metric_specs, measures=measures.run_measures)


def _scoring() -> Scoring:
    from bias_monitor_statements import scoring

    return Scoring(local=scoring.score_local)


def _drift() -> Drift:
    from bias_monitor_statements import compare

    return Drift(compare=compare.compare)


def _terminal() -> Terminal:
    from bias_monitor_statements import table

    return Terminal(cli_table=table.cli_table)


def _report() -> Report:
    from bias_monitor_statements import section

    return Report(section=section.StatementsSection)


def _importers() -> Importers:
    from bias_monitor_statements import import_command

    return Importers(declared=import_command.importers)


FAMILY = Family(
    name=FAMILY_NAME,
    summary="short statements a model calls true or false, each endorsing or rejecting a "
    "stereotype: the share of answers on the stereotype's side, balanced over the two "
    "stances, with Wilson/MOVER intervals; paired exact McNemar between runs",
    item_kinds=("truth-statement",),
    measure_kinds=("rate",),
    headline="balanced_rate",
    outcomes=True,
    formats=(FORMAT,),
    items=_items,
    metrics=_metrics,
    scoring=_scoring,
    drift=_drift,
    terminal=_terminal,
    report=_report,
    importers=_importers,
    benchmarks=Path(__file__).with_name("benchmarks.toml"),
    item_noun="statements",
    words="true/false statements",
)
