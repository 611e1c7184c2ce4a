"""The choice-QA family's declaration: pure data, read by ``monitor.metrics.families``.

Items (kind ``choice-question``) are BBQ-style questions: a context (ambiguous or
disambiguated), a question (negative or non-negative polarity) and three options, one of
which is the 'unknown' answer and one of which names the stereotyped group. A row's
outcome is the role of the option the model picked: ``target`` (the stereotyped group),
``non-target`` (the other group) or ``unknown``; ``refusal``/``other`` where an API answer
is no option. Measures: accuracy and BBQ's bias scores per category, with intervals that
resample whole templates (the items of one template are one cluster).
"""

from __future__ import annotations

from monitor.metrics.families import ResultFamily

_HERE = "monitor.families.choice_qa"

CHOICE_QA = ResultFamily(
    name="choice-qa",
    summary="multiple-choice questions with an 'unknown' option (BBQ, BharatBBQ): accuracy "
    "and bias scores per category, template-cluster intervals",
    item_kinds=("choice-question",),
    measure_kinds=("rate", "effect_size"),
    headline="bias_ambig",
    outcomes=True,
    hooks={
        "load": f"{_HERE}.items:load",
        "benchmark_quality": f"{_HERE}.quality:validate_choice_questions",
        "score_local": f"{_HERE}.scoring:score_local",
        "measures": f"{_HERE}.measures:run_measures",
        "importers": f"{_HERE}.import_commands:importers",
        "score_api": f"{_HERE}.api_choice:api_scoring",
        "compare": f"{_HERE}.compare:compare_choice_qa",
        "report_section": f"{_HERE}.section:report_section",
        "report_input": f"{_HERE}.charts:report_input",
        "report_block": f"{_HERE}.charts:report_block",
        "cli_table": f"{_HERE}.table:cli_table",
    },
    sized=True,
    words="choice questions",
)
