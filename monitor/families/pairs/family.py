"""The pair family's ``Family``: registered as the ``pairs`` entry point of
``bias_monitor.families`` (pyproject.toml), like any family from another package.

Items (kinds ``pair``, ``identity-pair``, ``judged-generation``) are two sentences, one
stereotypical and one anti-stereotypical, or two identities one stereotype is attributed
to. A row's outcome says which side the model preferred (``stereo``/``anti``/``tie``, or
``refusal``/``ambiguous``/``other`` for an API answer that picked neither). Measures: the
bias rate per axis (stereo among decided) with a Wilson interval. Drift pairs items by id
and tests the flips with exact McNemar (``compare.py``).

Each capability is built on first use (``Family``): this module imports no other module
of the folder at load time, so the CLI starts without numpy, scipy or the store.
"""

from __future__ import annotations

from monitor.contract import capabilities as cap
from monitor.contract.family import Builders, Family
from monitor.families.pairs import NAME
from monitor.families.pairs.details import DETAIL_TABLES


class _Capabilities(Builders):
    """The family's capabilities, each built on first use (``Builders``)."""

    def items(self) -> cap.Items:
        from monitor.families.pairs import items, quality

        return cap.Items(
            load=items.load,
            quality=quality.validate_pairs,
            takes_errata=True,
        )

    def metrics(self) -> cap.Metrics:
        from monitor.families.pairs import measures, metrics

        return cap.Metrics(specs=metrics.metric_specs, measures=measures.pair_measures)

    def scoring(self) -> cap.Scoring:
        from monitor.families.pairs import api_plans, scoring

        return cap.Scoring(local=scoring.score_items, api=api_plans.score_api)

    def drift(self) -> cap.Drift:
        from monitor.families.pairs import compare, drift_output

        return cap.Drift(
            compare=compare.compare_runs,
            unscored=compare.unscored_axes,
            explain=compare.explained,
            lines=drift_output.drift_lines,
            table=drift_output.drift_table,
            json=drift_output.drift_json,
        )

    def terminal(self) -> cap.Terminal:
        from monitor.families.pairs import table

        return cap.Terminal(
            cli_table=table.cli_table, show_tables=table.show_tables, show_json=table.show_json
        )

    def report(self) -> cap.Report:
        from monitor.families.pairs import section

        return cap.Report(section=section.PairsSection, build=section.build_section)

    def importers(self) -> cap.Importers:
        from monitor.families.pairs import import_commands

        return cap.Importers(declared=import_commands.importers)

    def run(self) -> cap.Run:
        from monitor.families.pairs import run_hooks, run_options

        return cap.Run(
            options=run_options.PairRunOptions,
            panel=run_hooks.panel,
            replaces_defaults=run_hooks.replaces_defaults,
            check=run_hooks.check,
            add=run_hooks.add,
        )


FAMILY = Family(
    name=NAME,
    rank=10,
    summary="a stereotype / anti-stereotype pair decided per item; rates with Wilson intervals",
    item_kinds=("pair", "identity-pair", "judged-generation"),
    measure_kinds=("rate",),
    headline="bias_rate",
    outcomes=True,
    formats=("indian-bhed", "crows-pairs", "indic-taxonomy"),
    capabilities=_Capabilities(),
    kind_default=True,
    sized=True,  # run --size mini on sentence pairs (families/pairs/sizes.py)
    drift_units="Δ and MDE in percentage points",
    detail_tables=DETAIL_TABLES,
)
