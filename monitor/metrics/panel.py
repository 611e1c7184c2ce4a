"""The metric panel: other causal log-prob metrics on the same items, in the same pass.

A causal LM's bias rate depends heavily on the metric (SmolLM2's caste rate was 38.7%
under ``cll`` and 61.3% under ``cll-reference`` on the same items). So every run of a
causal-logprob metric also scores the panel's other metrics from the same model answers
(the sentence-pair family's panel planner) and keeps each one's outcome and delta in the
item's ``scores.details["panel"]``; the run's own metric stays the row's outcome. Per axis
the run then reports ``bias_rate:<metric>`` for the panel metrics beside its own
``bias_rate``, and ``metric_agreement``: the share of items on which every metric of the
run's panel reaches the same outcome.

Which metrics: ``DEFAULT_PANEL`` (``cll`` and ``ull``) unless asked for more.
``ull`` reads the very sentences ``cll`` scores (BOS + text), so its answers come from the
same forward passes and the default panel costs what ``cll`` alone costs. ``cll-reference``
(the seed code's no-BOS variant, kept for parity with published numbers) is scored only
when asked (``run --metrics cll-reference``): its sequences share no prefix with ``cll``'s
and about double the positions fed. Runs stored before it left the default hold all three;
everything here reads whichever metrics a run's rows hold.

Pure: rows in, measures out.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from itertools import combinations

from monitor.metrics.intervals import BIAS_RATE, rate_measure
from monitor.records import Measure, ScoreRow

PANEL_KEY = "panel"
# Every metric a panel may hold, in the order they are shown.
PANEL_METRICS = ("cll", "cll-reference", "ull")
# What a run scores beside its own metric unless ``--metrics`` asks for more.
DEFAULT_PANEL = ("cll", "ull")
AGREEMENT = "metric_agreement"


def panel_of(own: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The metrics a run of ``own`` scores in one pass: its own, the default panel's and
    those asked for with ``--metrics`` (``extra``), in ``PANEL_METRICS`` order."""
    wanted = {own, *DEFAULT_PANEL, *extra}
    return tuple(m for m in PANEL_METRICS if m in wanted)


def rate_name(metric: str) -> str:
    """The measure name of a panel metric's bias rate, e.g. ``bias_rate:ull``."""
    return f"{BIAS_RATE}:{metric}"


DEFINITIONS = {
    **{
        rate_name(m): (
            f"Bias rate of the same items under the {m} metric, from the same model answers "
            "as the run's own metric (the metric panel): k = items whose outcome is 'stereo', "
            "n = items decided either way. 95% Wilson interval."
        )
        for m in PANEL_METRICS
    },
    AGREEMENT: (
        "k = items on which every metric of the run's panel (cll and ull by default; "
        "cll-reference too where the run asked for it) gives the same outcome; n = items "
        "every one of them scored. 95% Wilson interval. details: pairwise agreement."
    ),
}


def panel_outcomes(row: ScoreRow) -> dict[str, str] | None:
    """Metric -> outcome for one row: its own metric's and the panel's; None without a panel."""
    panel = row.details.get(PANEL_KEY) if row.details else None
    if not isinstance(panel, Mapping):
        return None
    out = {row.metric: row.outcome}
    for metric, entry in panel.items():
        if isinstance(entry, Mapping) and isinstance(entry.get("outcome"), str):
            out[metric] = entry["outcome"]
    return out


def panel_measures(
    rows: Iterable[ScoreRow], item_axis: Mapping[str, tuple[str, str]]
) -> list[Measure]:
    """Per (benchmark, axis): the panel metrics' bias rates and how often they agree.

    Empty when the rows carry no panel (API runs, masked LMs, runs from before the panel).
    """
    counts: dict[tuple[str, str], dict[str, Counter[str]]] = defaultdict(
        lambda: defaultdict(Counter)
    )
    own: dict[tuple[str, str], str] = {}
    scored: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        outcomes = panel_outcomes(row)
        if outcomes is None:
            continue
        key = item_axis[row.item_id]
        own[key] = row.metric
        scored[key].append(outcomes)
        for metric, outcome in outcomes.items():
            counts[key][metric][outcome] += 1
    out: list[Measure] = []
    for key in sorted(counts):
        benchmark, axis = key
        # The run's panel: every metric its rows hold (a metric the model cannot be scored
        # with holds an error, never an outcome, and drops out). Agreement needs two.
        held = tuple(m for m in PANEL_METRICS if m in counts[key])
        agree: Counter[str] = Counter()
        for outcomes in scored[key] if len(held) > 1 else ():
            if all(m in outcomes for m in held):
                agree["n"] += 1
                agree["all"] += len({outcomes[m] for m in held}) == 1
                for a, b in combinations(held, 2):
                    agree[f"{a}~{b}"] += outcomes[a] == outcomes[b]
        for metric in PANEL_METRICS:
            if metric == own[key] or metric not in counts[key]:
                continue  # the run's own metric already has its bias_rate
            c = counts[key][metric]
            out.append(
                rate_measure(
                    benchmark,
                    axis,
                    rate_name(metric),
                    c["stereo"],
                    c["stereo"] + c["anti"],
                    DEFINITIONS,
                )
            )
        if agree["n"]:
            m = rate_measure(benchmark, axis, AGREEMENT, agree["all"], agree["n"], DEFINITIONS)
            pairwise = {
                f"{x}~{y}": round(agree[f"{x}~{y}"] / agree["n"], 6)
                for x, y in combinations(held, 2)
            }
            out.append(Measure(**{**m.__dict__, "details": {"pairwise": pairwise}}))
    return out
