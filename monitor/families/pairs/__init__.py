"""The pair family: a stereotype / anti-stereotype pair decided per item (Indian-BhED,
CrowS-derived pairs, Indic-Bias identity pairs, judged generations).

``spec.py`` declares it. Its items: ``parse.py``, ``taxonomy.py`` and
``indic_official.py`` (the parsers), ``items.py`` (the loader hooks) and ``quality.py``
(the benchmark-data suite). Its scores: ``cll.py``, ``cll_reference.py`` and ``aul.py``
(the local metrics' pure functions), ``planners.py`` and ``panel_planner.py`` (what they
ask a model for), ``scoring.py`` (the local driver's hook), ``api_plans.py`` (the chat
API driver's: forced choice, sampled answers), ``judged.py`` and ``judged_task.py`` (the
Indic-Bias generation task: its judge's verdicts and its two-snapshot driver),
``metrics.py`` (the metric specs), ``consistency.py`` (rows rebuilt from their inputs)
and ``measures.py`` with ``identity.py`` (what a run's measures add). Its output:
``compare.py`` (the drift comparator), ``drift_output.py`` (``drift``'s lines, table and
JSON) and ``table.py`` (``run`` and ``show``). The rest (the API metrics' functions, the
imported studies' definitions, the report's sections and ``AxisComparison`` with drift's
statistics) still lives in the rooms, where the monitor began with it; see
ARCHITECTURE.md.
"""
