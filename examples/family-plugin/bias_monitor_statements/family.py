"""The family's one ``Family`` object: what bias-monitor finds through the entry point
``truth-statements`` of the ``bias_monitor.families`` group (pyproject.toml).

Everything here is a direct reference to this package's functions; bias-monitor's core
calls them through its typed contract (``monitor.contract``) and knows nothing else of
this package.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from monitor.contract.capabilities import Drift, Importers, Items, Report, Scoring, Terminal
from monitor.contract.family import Family

from bias_monitor_statements import (
    compare,
    importers,
    items,
    measures,
    metrics,
    quality,
    scoring,
    section,
    table,
)
from bias_monitor_statements.frame import FAMILY_NAME

FAMILY = Family(
    name=FAMILY_NAME,
    summary="short statements a model calls true or false, each endorsing or rejecting a "
    "stereotype: the share of answers on the stereotype's side, balanced over the two "
    "stances, with Wilson/MOVER intervals; paired exact McNemar between runs",
    item_kinds=(items.KIND,),
    measure_kinds=("rate",),
    headline=measures.HEADLINE,
    outcomes=True,
    formats=(items.FORMAT,),
    items=Items(load=items.load, errata_noun="statements"),
    metrics=metrics.metric_specs,
    quality=quality.validate_statements,
    measures=measures.run_measures,
    scoring=Scoring(local=scoring.score_local),
    drift=Drift(compare=compare.compare),
    terminal=Terminal(cli_table=table.cli_table),
    report=Report(section=section.report_section),
    importers=Importers(predictions=importers.importers),
    benchmarks=Path(str(files("bias_monitor_statements").joinpath("benchmarks.toml"))),
    item_noun="statements",
    words="true/false statements",
)
