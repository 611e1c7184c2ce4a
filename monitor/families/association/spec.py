"""The association-test family's declaration: pure data, read by ``monitor.metrics.families``.

Items (kind ``word-set-term``) are the terms of a WEAT/SEAT test: target words (sets X, Y)
and attribute words (sets A, B). A row's ``delta`` is a term's association s(w, A, B) (a
target) or s(a, X, Y) (an attribute); rows carry no stereo/anti outcome, only ``other`` for
a term the model could not embed. Measures: the effect size d per test with a one-sided
permutation p and a bootstrap interval over target words. Drift pairs the target words both
runs embedded and gives Δd a paired bootstrap interval and p.
"""

from __future__ import annotations

from monitor.metrics.families import ResultFamily

_HERE = "monitor.families.association"

ASSOCIATION_TEST = ResultFamily(
    name="association-test",
    summary="embedding association tests (WEAT/SEAT): an effect size with a permutation p "
    "and a bootstrap interval per test",
    item_kinds=("word-set-term",),
    measure_kinds=("effect_size",),
    headline="effect_size",
    outcomes=False,
    hooks={
        "load": f"{_HERE}.items:load",
        "benchmark_quality": f"{_HERE}.quality:validate_word_sets",
        "compare": f"{_HERE}.compare:compare_effect_sizes",
        "cli_table": f"{_HERE}.table:cli_table",
        "item_scores": f"{_HERE}.table:item_scores",
        "drift_lines": f"{_HERE}.table:drift_lines",
        "drift_table": f"{_HERE}.table:drift_table",
        "drift_json": f"{_HERE}.table:drift_json",
        "report_input": f"{_HERE}.section:report_input",
        "report_block": f"{_HERE}.section:report_block",
        "report_headline": f"{_HERE}.section:report_headline",
        "report_verdicts": f"{_HERE}.section:report_verdicts",
    },
    show_title="association tests (effect size d, bootstrap intervals)",
    item_noun="terms",
    count_note="; d > 0: X goes with A (and Y with B)",
)
