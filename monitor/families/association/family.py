"""The association-test family's ``Family``: registered as the ``association`` entry point
of ``bias_monitor.families`` (pyproject.toml), like any family from another package.

Items (kind ``word-set-term``) are the terms of a WEAT/SEAT test: target words (sets X, Y)
and attribute words (sets A, B). A row's ``delta`` is a term's association s(w, A, B) (a
target) or s(a, X, Y) (an attribute); rows carry no stereo/anti outcome, only ``other`` for
a term the model could not embed. Measures: the effect size d per test with a one-sided
permutation p and a bootstrap interval over target words. Drift pairs the target words both
runs embedded and gives Δd a paired bootstrap interval and p. Its metrics need embeddings,
and it scores them with a driver of its own (``scoring.score_snapshot``), which every
embedding kind uses.

Each capability is built on first use (``Family``).
"""

from __future__ import annotations

from monitor.contract import capabilities as cap
from monitor.contract.family import Builders, Family
from monitor.families.association import NAME


class _Capabilities(Builders):
    """The family's capabilities, each built on first use (``Builders``)."""

    def items(self) -> cap.Items:
        from monitor.families.association import items, quality

        return cap.Items(
            load=items.load, quality=quality.validate_word_sets, errata_noun="word-set benchmarks"
        )

    def metrics(self) -> cap.Metrics:
        from monitor.families.association import metrics

        return cap.Metrics(specs=metrics.metric_specs)

    def scoring(self) -> cap.Scoring:
        from monitor.families.association import scoring

        return cap.Scoring(driver=scoring.score_snapshot)

    def drift(self) -> cap.Drift:
        from monitor.families.association import compare, table

        return cap.Drift(
            compare=compare.compare_effect_sizes,
            lines=table.drift_lines,
            table=table.drift_table,
            json=table.drift_json,
        )

    def terminal(self) -> cap.Terminal:
        from monitor.families.association import table

        return cap.Terminal(cli_table=table.cli_table, item_scores=table.item_scores)

    def report(self) -> cap.Report:
        from monitor.families.association import section

        return cap.Report(section=section.AssociationSection, build=section.build_section)


FAMILY = Family(
    name=NAME,
    rank=20,
    summary="embedding association tests (WEAT/SEAT): an effect size with a permutation p "
    "and a bootstrap interval per test",
    item_kinds=("word-set-term",),
    measure_kinds=("effect_size",),
    headline="effect_size",
    outcomes=False,
    formats=("weat-json", "sochindi-weat", "sochindi-seat"),
    capabilities=_Capabilities(),
    kind_default=True,
    show_title="association tests (effect size d, bootstrap intervals)",
    item_noun="terms",
    count_note="; d > 0: X goes with A (and Y with B)",
)
