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
from monitor.contract.family import Family
from monitor.families.choice_qa import NAME


def _items() -> cap.Items:
    from monitor.families.choice_qa import items, quality

    return cap.Items(
        load=items.load,
        quality=quality.validate_choice_questions,
        errata_noun="choice questions",
    )


def _metrics() -> cap.Metrics:
    from monitor.families.choice_qa import measures, metrics

    return cap.Metrics(specs=metrics.metric_specs, measures=measures.run_measures)


def _scoring() -> cap.Scoring:
    from monitor.families.choice_qa import api_choice, scoring

    return cap.Scoring(local=scoring.score_local, api=api_choice.api_scoring)


def _drift() -> cap.Drift:
    from monitor.families.choice_qa import compare

    return cap.Drift(compare=compare.compare_choice_qa)


def _terminal() -> cap.Terminal:
    from monitor.families.choice_qa import table

    return cap.Terminal(cli_table=table.cli_table)


def _report() -> cap.Report:
    from monitor.families.choice_qa import section

    return cap.Report(section=section.ChoiceSection, build=section.build_section)


def _importers() -> cap.Importers:
    from monitor.families.choice_qa import import_commands

    return cap.Importers(declared=import_commands.importers)


def _run() -> cap.Run:
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
    items=_items,
    metrics=_metrics,
    scoring=_scoring,
    drift=_drift,
    terminal=_terminal,
    report=_report,
    importers=_importers,
    run=_run,
    sized=True,
    words="choice questions",
)
