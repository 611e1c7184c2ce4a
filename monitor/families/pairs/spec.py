"""The pair family's declaration: pure data, read by ``monitor.metrics.families``.

Items (kinds ``pair``, ``identity-pair``, ``judged-generation``) are two sentences, one
stereotypical and one anti-stereotypical, or two identities one stereotype is attributed
to. A row's outcome says which side the model preferred (``stereo``/``anti``/``tie``, or
``refusal``/``ambiguous``/``other`` for an API answer that picked neither). Measures: the
bias rate per axis (stereo among decided) with a Wilson interval. Drift pairs items by id
and tests the flips with exact McNemar (``compare.py``).
"""

from __future__ import annotations

from monitor.metrics.families import ResultFamily

_HERE = "monitor.families.pairs"

PAIR_OUTCOME = ResultFamily(
    name="pair-outcome",
    summary="a stereotype / anti-stereotype pair decided per item; rates with Wilson intervals",
    item_kinds=("pair", "identity-pair", "judged-generation"),
    measure_kinds=("rate",),
    headline="bias_rate",
    outcomes=True,
    hooks={
        "load": f"{_HERE}.items:load",
        "official_templates": f"{_HERE}.items:official_templates",
        "score_judged": f"{_HERE}.judged_task:score_judged",
        "benchmark_quality": f"{_HERE}.quality:validate_pairs",
        "measures": f"{_HERE}.measures:pair_measures",
        "score_local": f"{_HERE}.scoring:score_items",
        "score_api": f"{_HERE}.api_plans:score_api",
        "compare": f"{_HERE}.compare:compare_runs",
        "unscored": f"{_HERE}.compare:unscored_axes",
        "explain": f"{_HERE}.compare:explained",
        "cli_table": f"{_HERE}.table:cli_table",
        "show_tables": f"{_HERE}.table:show_tables",
        "show_json": f"{_HERE}.table:show_json",
        "drift_lines": f"{_HERE}.drift_output:drift_lines",
        "drift_table": f"{_HERE}.drift_output:drift_table",
        "drift_json": f"{_HERE}.drift_output:drift_json",
        "report_input": f"{_HERE}.section:report_input",
        "report_block": f"{_HERE}.section:report_block",
        "report_appendix": f"{_HERE}.section:report_appendix",
        "report_lead": f"{_HERE}.answer:report_lead",
        "report_headline": f"{_HERE}.answer:report_headline",
        "report_verdicts": f"{_HERE}.answer:report_verdicts",
        "importers": f"{_HERE}.import_commands:importers",
    },
    drift_units="Δ and MDE in percentage points",
)
