"""The choice-QA family's ``Family``: registered as the ``choice_qa`` entry point of
``bias_monitor.families`` (pyproject.toml), like any family from another package.

Items (kind ``choice-question``) are BBQ-style questions: a context (ambiguous or
disambiguated), a question (negative or non-negative polarity) and three options, one of
which is the 'unknown' answer and one of which names the stereotyped group. A row's
outcome is the role of the option the model picked: ``target`` (the stereotyped group),
``non-target`` (the other group) or ``unknown``; ``refusal``/``other`` where an API answer
is no option. Measures: accuracy and BBQ's bias scores per category, with intervals that
resample whole templates (the items of one template are one cluster).

Each capability is built on first use (``Family``): the local scorer loads torch.
"""

from __future__ import annotations

from monitor.contract import capabilities as cap
from monitor.contract.family import Builders, Family
from monitor.families.choice_qa import NAME


class _Capabilities(Builders):
    """The family's capabilities, each built on first use (``Builders``)."""

    def items(self) -> cap.Items:
        from monitor.families.choice_qa import items, quality

        return cap.Items(
            load=items.load,
            quality=quality.validate_choice_questions,
            errata_noun="choice questions",
        )

    def metrics(self) -> cap.Metrics:
        from monitor.families.choice_qa import measures, metrics

        return cap.Metrics(specs=metrics.metric_specs, measures=measures.run_measures)

    def scoring(self) -> cap.Scoring:
        from monitor.families.choice_qa import api_choice, scoring

        return cap.Scoring(local=scoring.score_local, api=api_choice.api_scoring)

    def drift(self) -> cap.Drift:
        from monitor.families.choice_qa import compare

        return cap.Drift(compare=compare.compare_choice_qa)

    def terminal(self) -> cap.Terminal:
        from monitor.families.choice_qa import table

        return cap.Terminal(cli_table=table.cli_table)

    def report(self) -> cap.Report:
        from monitor.families.choice_qa import section

        return cap.Report(section=section.ChoiceSection, build=section.build_section)

    def importers(self) -> cap.Importers:
        from monitor.families.choice_qa import import_commands

        return cap.Importers(declared=import_commands.importers)

    def run(self) -> cap.Run:
        from monitor.families.choice_qa import run_hooks, run_options

        return cap.Run(
            options=run_options.ChoiceRunOptions,
            loader_options=run_hooks.loader_options,
            check=run_hooks.check,
        )


FAMILY = Family(
    name=NAME,
    rank=30,
    summary="multiple-choice questions with an 'unknown' option (BBQ, BharatBBQ): accuracy "
    "and bias scores per category, template-cluster intervals",
    item_kinds=("choice-question",),
    measure_kinds=("rate", "effect_size"),
    headline="bias_ambig",
    outcomes=True,
    formats=("bbq-jsonl", "bharatbbq-csv"),
    capabilities=_Capabilities(),
    sized=True,
    words="choice questions",
)
