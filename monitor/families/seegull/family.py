"""The family's one ``Family`` object: what bias-monitor finds through the entry point
``seegull`` of the ``bias_monitor.families`` group (pyproject.toml).

SeeGULL Multilingual in Hindi, Bengali, Marathi, Tamil and Telugu, on the plug-in
contract: the metadata is plain data, each capability a function that imports this
folder's modules on first use, and the core calls them through ``monitor.contract``
only. Its benchmarks are declared in its own ``benchmarks.toml``; its loader takes
``run --size`` (``sized``).
"""

from __future__ import annotations

from pathlib import Path

from monitor.contract.capabilities import Drift, Items, Metrics, Report, Scoring, Terminal
from monitor.contract.family import Family

FAMILY_NAME = "seegull"  # frames.FAMILY_NAME, said here without importing it
FORMAT = "seegull-stereotypes-csv"  # items.FORMAT


def _items() -> Items:
    from monitor.families.seegull import items, quality

    return Items(load=items.load, quality=quality.validate_seegull, errata_noun="rows")


def _metrics() -> Metrics:
    from monitor.families.seegull import measures, metrics

    return Metrics(specs=metrics.metric_specs, measures=measures.run_measures)


def _scoring() -> Scoring:
    from monitor.families.seegull import scoring

    return Scoring(local=scoring.score_local)


def _drift() -> Drift:
    from monitor.families.seegull import compare

    return Drift(compare=compare.compare)


def _terminal() -> Terminal:
    from monitor.families.seegull import table

    return Terminal(cli_table=table.cli_table)


def _report() -> Report:
    from monitor.families.seegull import section

    return Report(section=section.SeegullSection)


FAMILY = Family(
    name=FAMILY_NAME,
    summary="SeeGULL Multilingual stereotypes in five Indian languages: whether a causal LM "
    "finds an attribute likelier after a frame naming the identity annotators tie it to than "
    "after one naming a contrast identity of the same kind; two-way clustered intervals, "
    "balanced by direction; paired exact McNemar between runs",
    item_kinds=("seegull-stereotype",),
    measure_kinds=("rate",),
    headline="stereo_rate",
    outcomes=True,
    formats=(FORMAT,),
    items=_items,
    metrics=_metrics,
    scoring=_scoring,
    drift=_drift,
    terminal=_terminal,
    report=_report,
    benchmarks=Path(__file__).with_name("benchmarks.toml"),
    item_noun="stereotype contrasts",
    words="SeeGULL stereotypes",
    sized=True,
)
