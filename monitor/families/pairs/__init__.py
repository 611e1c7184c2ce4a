"""The pair family: a stereotype / anti-stereotype pair decided per item (Indian-BhED,
CrowS-derived pairs, Indic-Bias identity pairs, judged generations).

``family.py`` declares it (``FAMILY``). Its items: ``parse.py``, ``taxonomy.py`` and
``indic_official.py`` (the parsers), ``items.py`` (the loader hooks) and ``quality.py``
(the benchmark-data suite). Its scores: ``cll.py``, ``cll_reference.py`` and ``aul.py``
(the local metrics' pure functions), ``planners.py`` and ``panel_planner.py`` (what they
ask a model for), ``scoring.py`` (the local driver's hook), ``api_plans.py`` (the chat
API driver's: forced choice, sampled answers), ``judged.py`` and ``judged_task.py`` (the
Indic-Bias generation task: its judge's verdicts and its two-snapshot driver),
``metrics.py`` (the metric specs), ``consistency.py`` (rows rebuilt from their inputs)
and ``measures.py`` with ``identity.py`` (what a run's measures add). Published results:
``caste_import.py``, ``caste_history.py`` and ``caste_gpt5.py`` (the caste study's
files as runs), ``caste_study.py`` and ``sampled_study.py`` (the studies' own
definitions) and ``import_commands.py`` (their ``bias-monitor import`` commands). Its
output: ``comparison.py`` (``AxisComparison``), ``compare.py`` (the drift comparator) and
``explain.py`` (its verdicts in words), ``drift_output.py`` (``drift``'s lines, table and
JSON), ``table.py`` (``run`` and ``show``), and the report's parts: ``answer.py`` (the
answer it leads with), ``section.py`` and ``section_history.py`` (the pairs' fields, their
detail and appendix). What it shares with other families stays in the rooms (the API
metrics' answer reading, drift's statistics, the report's JSON schema); see
ARCHITECTURE.md.
"""

NAME = "pair-outcome"  # ``FAMILY.name``: the family its comparisons and measures name
