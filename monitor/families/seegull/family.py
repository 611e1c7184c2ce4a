"""The family's one ``Family`` object: what bias-monitor finds through the entry point
``seegull`` of the ``bias_monitor.families`` group (pyproject.toml).

SeeGULL Multilingual in Hindi, Bengali, Marathi, Tamil and Telugu, on the plug-in
contract: the metadata is plain data, each capability a function that imports this
folder's modules on first use, and the core calls them through ``monitor.contract``
only. Its benchmarks are declared in its own ``benchmarks.toml``; its loader takes
``run --size`` (``sized``). A language whose script the model's tokenizer cannot
represent is skipped with the reason and the others scored (``skips_unreadable``).
"""

from __future__ import annotations

from pathlib import Path

from monitor.contract import capabilities as cap
from monitor.contract.family import Builders, Family

FAMILY_NAME = "seegull"  # frames.FAMILY_NAME, said here without importing it
FORMAT = "seegull-stereotypes-csv"  # items.FORMAT


class _Capabilities(Builders):
    """The family's capabilities, each built on first use (``Builders``)."""

    def items(self) -> cap.Items:
        from monitor.families.seegull import items, quality

        return cap.Items(load=items.load, quality=quality.validate_seegull, errata_noun="rows")

    def metrics(self) -> cap.Metrics:
        from monitor.families.seegull import measures, metrics

        return cap.Metrics(specs=metrics.metric_specs, measures=measures.run_measures)

    def scoring(self) -> cap.Scoring:
        from monitor.families.seegull import api_choice, scoring

        return cap.Scoring(local=scoring.score_local, api=api_choice.score_api)

    def drift(self) -> cap.Drift:
        from monitor.families.seegull import compare

        return cap.Drift(compare=compare.compare)

    def terminal(self) -> cap.Terminal:
        from monitor.families.seegull import table

        return cap.Terminal(cli_table=table.cli_table)

    def report(self) -> cap.Report:
        from monitor.families.seegull import section

        return cap.Report(section=section.SeegullSection)


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
    capabilities=_Capabilities(),
    benchmarks=Path(__file__).with_name("benchmarks.toml"),
    item_noun="stereotype contrasts",
    words="SeeGULL stereotypes",
    sized=True,
    skips_unreadable=True,  # one language per benchmark: an unreadable one is skipped
)
