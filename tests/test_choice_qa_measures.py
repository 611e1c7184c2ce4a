"""Choice-QA measures and the BharatBBQ authors' script, on hand-checked rows and the real file.

The hand-written rows below were worked through by hand (the expected numbers are in the
comments); the pinned script numbers are the full-precision output of the authors'
``Metrics/main.py`` (sahoonihar/BharatBBQ @ d4d193b28ab0, copied to /tmp, its ``:.2f``
formats changed to ``!r``) run with pandas 3.1.1 on ``Example_Predictions/Age_examples.csv``
for each model column.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from monitor.benchmarks.items import Item
from monitor.benchmarks.manifest import load_manifest
from monitor.contract.registry import get_family
from monitor.families.choice_qa.importers import read_bharatbbq
from monitor.families.choice_qa.measures import choice_measures
from monitor.families.choice_qa.reference import kept_rows, reference_measures, script_values
from monitor.metrics.registry import get_metric, run_measures
from monitor.records import ScoreRow

PREDICTIONS = Path("bharatbbq/Example_Predictions/Age_examples.csv")


def item(n: int, source: str, template: str, cond: str, pol: str, label: int, target, **kw):
    payload = {
        "source": source,
        "category": "X",
        "template": template,
        "context": f"context {n}",
        "question": f"question {n}",
        "options": ["A", "B", "Can't answer"] if source == "bharatbbq" else ["A", "?", "B"],
        "unknown": 2 if source == "bharatbbq" else 1,
        "label": label,
        "target": target,
        "polarity": pol,
        "context_condition": cond,
        "source_id": n,
        "proper_noun": kw.get("proper_noun", False),
        "language": "en",
    }
    benchmark = f"{source}-x"
    return Item(
        item_id=f"{source}{n}",
        benchmark=benchmark,
        axis="x",
        region="us",
        benchmark_version="v",
        source_row=n,
        template=template,
        kind="choice-question",
        payload=payload,
    )


def row(it: Item, choice) -> ScoreRow:
    return ScoreRow(it.item_id, "mc-imported", "1", "other", None, details={"choice": choice})


def by_name(measures):
    return {(m.benchmark, m.axis, m.measure): m for m in measures}


def test_bbq_scores_on_hand_checked_rows():
    # BBQ-like items: options A, ?, B (1 = unknown); target B (2) unless None.
    cases = [
        (item(0, "bbq", "1", "ambig", "neg", 1, 2), 2),  # target on neg: biased
        (item(1, "bbq", "1", "ambig", "neg", 1, 2), 1),  # unknown: correct
        (item(2, "bbq", "2", "ambig", "neg", 1, 2), 0),  # non-target on neg: not biased
        (item(3, "bbq", "2", "ambig", "nonneg", 1, 2), 0),  # non-target on nonneg: biased
        (item(4, "bbq", "1", "disambig", "neg", 2, 2), 2),  # correct, biased
        (item(5, "bbq", "1", "disambig", "nonneg", 0, 2), 0),  # correct, biased
        (item(6, "bbq", "2", "disambig", "neg", 0, 2), 1),  # unknown: wrong, not decided
        (item(7, "bbq", "2", "disambig", "neg", 0, None), 0),  # no target: accuracy only
        (item(8, "bbq", "2", "disambig", "neg", 0, 2), None),  # no option: wrong
    ]
    items = {it.item_id: it for it, _ in cases}
    m = by_name(choice_measures([row(it, c) for it, c in cases], items))
    acc_a, acc_d = m[("bbq-x", "x", "acc_ambig")], m[("bbq-x", "x", "acc_disambig")]
    assert (acc_a.k, acc_a.n, acc_a.value) == (1, 4, 0.25)
    assert (acc_d.k, acc_d.n, acc_d.value) == (3, 5, 0.6)
    s_dis = m[("bbq-x", "x", "bias_disambig")]
    assert (s_dis.k, s_dis.n, s_dis.value, s_dis.kind) == (2, 2, 1.0, "effect_size")
    # ambiguous: decided 3 (items 0, 2, 3), biased 2 -> s = 1/3; s_AMB = 0.75 * 1/3
    s_amb = m[("bbq-x", "x", "bias_ambig")]
    assert (s_amb.k, s_amb.n) == (2, 3) and s_amb.value == pytest.approx(0.25)
    # the overall row equals the one category here; intervals contain the values
    assert m[("bbq", "all", "bias_ambig")].value == s_amb.value
    for measure in m.values():
        assert measure.ci_low <= measure.value <= measure.ci_high
        assert measure.details["clusters"] == 2 and measure.details["few_clusters"]
    assert not [k for k in m if k[2].startswith("reference_")]  # bbq: no reference
    # the length-normalised choice adds accuracies only
    norm = choice_measures(
        [
            ScoreRow(it.item_id, "m", "1", "other", None, details={"choice": 0, "choice_norm": 1})
            for it, _ in cases
        ],
        items,
        choice_key="choice_norm",
        prefix="norm_",
    )
    assert {x.measure for x in norm} == {"acc_norm_ambig", "acc_norm_disambig"}
    assert by_name(norm)[("bbq-x", "x", "acc_norm_ambig")].value == 1.0


def test_measures_are_reproducible_and_order_free():
    cases = [(item(n, "bbq", str(n % 5), "ambig", "neg", 1, 2), n % 3) for n in range(40)]
    items = {it.item_id: it for it, _ in cases}
    rows = [row(it, c) for it, c in cases]
    first = choice_measures(rows, items)
    again = choice_measures(list(reversed(rows)), items)
    assert first == again
    assert any(m.ci_low < m.value < m.ci_high for m in first)


def bharat_rows(*, drop_r2: bool = False):
    """Rows in predictions-file order; options A, B, Can't answer (label 3 = unknown)."""
    spec = [  # (cond, pol, Label, Target, prediction, proper noun), 1-based like the file
        ("ambig", "neg", 3, 1, 1, False),  # r0: target_amb, stereotypical
        ("ambig", "nonneg", 3, 1, 2, False),  # r1: other group, stereotypical
        ("disambig", "neg", 1, 1, None if drop_r2 else 1, False),  # r2 biased pairing
        ("disambig", "nonneg", 2, 1, 1, False),  # r3 biased pairing: (r2, r3) equal: skipped
        ("disambig", "neg", 2, 1, 2, False),  # r4 anti pairing, correct
        ("disambig", "nonneg", 1, 1, 3, False),  # r5 anti pairing, unknown answer
        ("ambig", "neg", 3, 1, 1, True),  # r6 proper noun: dropped after pairing
        ("ambig", "nonneg", 3, 1, 3, False),  # r7 correct
    ]
    out = []
    for n, (cond, pol, label, target, pred, proper) in enumerate(spec):
        it = item(n, "bharatbbq", "1", cond, pol, label - 1, target - 1, proper_noun=proper)
        out.append((it, None if pred is None else pred - 1))
    return out


def test_reference_script_on_hand_checked_rows():
    group = bharat_rows()
    assert [it.source_row for it, _ in kept_rows(group)] == [0, 1, 4, 5, 7]
    assert script_values(group) == {
        "acc_amb": 1 / 3,  # r7 of r0, r1, r7
        "acc_disamb": 1 / 2,  # r4 of r4, r5
        "acc_disamb_biased": 0.0,  # no biased pairing kept: 0, as the script
        "acc_disamb_anti": 1 / 2,
        "bias_score_amb": 0.0,  # (1 target - 1 other group) / 3
        "bias_score_disamb": -1.0,  # (0 - 1) / 1 non-unknown
        "stereotypical_bias_amb": 2 / 3,
        "stereotypical_bias_disamb": 0.0,
    }
    # Without r2's prediction the pairs shift: (r3, r4) is kept, r7 is the odd one out.
    shifted = bharat_rows(drop_r2=True)
    assert [it.source_row for it, _ in kept_rows(shifted)] == [0, 1, 3, 4, 5]
    values = script_values(shifted)
    assert values["acc_disamb"] == pytest.approx(1 / 3)
    assert values["bias_score_disamb"] == -0.5
    assert values["stereotypical_bias_amb"] == 1.0
    measures = by_name(reference_measures("bharatbbq-x", "x", group))
    ref = measures[("bharatbbq-x", "x", "reference_bias_score_disamb")]
    assert ref.value == -1.0 and ref.definition.startswith("bharatbbq-reference:")
    assert len(measures) == 8


# Metrics/main.py on Example_Predictions/Age_examples.csv, per column: rows after its
# filtering, then acc_amb, acc_disamb, acc_disamb_biased, acc_disamb_anti, bias_score_amb,
# bias_score_disamb, stereotypical_bias_amb, stereotypical_bias_disamb.
SCRIPT = {
    "llama_op": (6338, 0.09885817307692307, 0.9614617940199336, 0.9713740458015268,
                 0.9506258692628651, -0.051382211538461536, 0.05509641873278237,
                 0.6932091346153846, 0.0027816411682892906),
    "gemma_op": (3762, 0.12049278846153846, 0.815668202764977, 0.8461538461538461, 0.78,
                 -0.1541466346153846, 0.10909090909090909, 0.45552884615384615, 0.115),
    "phi_op": (6172, 0.31700721153846156, 0.9349507735583685, 0.9378378378378378,
               0.9318181818181818, 0.044771634615384616, 0.043591654247391955,
               0.5186298076923077, 0.018328445747800588),
    "sarvam_op": (3468, 0.10907451923076923, 0.5142857142857142, 0.45714285714285713,
                  0.5714285714285714, -0.0772235576923077, -0.06666666666666667,
                  0.4480168269230769, 0.32857142857142857),
    "bloom_op": (5562, 0.020733173076923076, 0.9391226499552372, 0.9714038128249567,
                 0.9046296296296297, -0.06881009615384616, 0.0646900269541779,
                 0.6253004807692307, 0.08888888888888889),
    "llama_op_eng_Latn": (6356, 0.1141826923076923, 0.9610303830911493, 0.9702154626108999,
                          0.9510344827586207, -0.04447115384615385, 0.0520904729266621,
                          0.6911057692307693, 0.002758620689655172),
}  # fmt: skip
NAMES = (
    "acc_amb",
    "acc_disamb",
    "acc_disamb_biased",
    "acc_disamb_anti",
    "bias_score_amb",
    "bias_score_disamb",
    "stereotypical_bias_amb",
    "stereotypical_bias_disamb",
)


def test_reference_equals_the_authors_script_on_their_predictions(shared_datasets):
    runs = read_bharatbbq(
        shared_datasets / PREDICTIONS, load_manifest(), {}, suffix="-t", columns=list(SCRIPT)
    )
    for run in runs:
        group = [(run.items[s.item_id], s.details["choice"]) for s in run.scores]
        size, *numbers = SCRIPT[run.column]
        assert len(kept_rows(group)) == size, run.column
        values = script_values(group)
        for name, expected in zip(NAMES, numbers, strict=True):
            assert math.isclose(values[name], expected, rel_tol=0, abs_tol=1e-15), (
                run.column,
                name,
            )


def test_registry_dispatches_to_the_family_hook():
    spec = get_metric("mc-imported")
    assert spec.family is get_family("choice-qa")
    cases = bharat_rows()
    rows = [row(it, c) for it, c in cases]
    via_registry = run_measures(spec, rows, [it for it, _ in cases])
    assert via_registry == choice_measures(rows, {it.item_id: it for it, _ in cases})
    assert {m.measure for m in via_registry} >= {"bias_ambig", "reference_acc_amb"}
