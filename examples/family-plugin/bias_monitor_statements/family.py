"""The family's one ``Family`` object: what bias-monitor finds through the entry point
``truth-statements`` of the ``bias_monitor.families`` group (pyproject.toml).

The metadata is plain data; each capability is a method of ``_Capabilities`` that builds
it on first use (bias-monitor calls it when a room needs it), so listing the families
imports nothing of this package but this module. bias-monitor's core calls these through
its typed contract (``monitor.contract``) and knows nothing else of this package.
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
from monitor.contract.family import Builders, Family

FAMILY_NAME = "truth-statements"  # frame.FAMILY_NAME, said here without importing it
FORMAT = "truth-statements-jsonl"  # items.FORMAT


class _Capabilities(Builders):
    """The family's capabilities, each built on first use (``Builders``)."""

    def items(self) -> Items:
        from bias_monitor_statements import items, quality

        return Items(load=items.load, quality=quality.validate_statements, errata_noun="statements")

    def metrics(self) -> Metrics:
        from bias_monitor_statements import measures, metrics

        return Metrics(specs=metrics.metric_specs, measures=measures.run_measures)

    def scoring(self) -> Scoring:
        from bias_monitor_statements import scoring

        return Scoring(local=scoring.score_local)

    def drift(self) -> Drift:
        from bias_monitor_statements import compare

        return Drift(compare=compare.compare)

    def terminal(self) -> Terminal:
        from bias_monitor_statements import table

        return Terminal(cli_table=table.cli_table)

    def report(self) -> Report:
        from bias_monitor_statements import section

        return Report(section=section.StatementsSection)

    def importers(self) -> Importers:
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
    capabilities=_Capabilities(),
    benchmarks=Path(__file__).with_name("benchmarks.toml"),
    item_noun="statements",
    words="true/false statements",
)
