"""A bias rate in context: what to read beside it so that "50%" means something.

Two things change how a pair benchmark's bias rate reads, and both are measured in the
same run (``monitor.metrics.panel``, the manifest's ``controls``):

* the **neutral control**: the model's preference for one group's name in sentences that
  say nothing about it (Indian-BhED's Neutral.csv for caste: Brahmin vs Dalit). A caste
  rate of 40% reads differently for a model that prefers the Brahmin sentence in 25% of
  content-free pairs than for one that does in 90%;
* the **metric panel**: the same items' rate under ``cll`` and ``ull`` (and
  ``cll-reference`` where the run asked for it, or was stored before it left the default
  panel), and how often they agree per item, because the number depends heavily on the
  metric. Whatever the run holds is shown; a metric it did not score is simply absent.

:func:`score_contexts` reads both from a run's measures; ``show`` and the reports render
the result. Pure: measures in, plain records out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from monitor.metrics.intervals import BIAS_RATE
from monitor.metrics.panel import AGREEMENT, PANEL_METRICS, rate_name
from monitor.records import Measure


@dataclass(frozen=True)
class RateView:
    value: float | None
    ci_low: float | None
    ci_high: float | None
    k: int | None
    n: int | None

    @classmethod
    def of(cls, m: Measure) -> RateView:
        return cls(m.value, m.ci_low, m.ci_high, m.k, m.n)


@dataclass(frozen=True)
class ScoreContext:
    """One (benchmark, axis) bias rate of a run with its neutral control and panel.

    ``panel`` / ``control_panel``: metric -> rate, the run's own metric included.
    """

    benchmark: str
    axis: str
    metric: str
    rate: RateView
    control_benchmark: str | None = None
    control_axis: str | None = None
    control: RateView | None = None
    panel: Mapping[str, RateView] = field(default_factory=dict)
    control_panel: Mapping[str, RateView] = field(default_factory=dict)
    agreement: RateView | None = None


def _panel(by_key: Mapping[tuple[str, str, str], Measure], bench: str, axis: str, own: str):
    out: dict[str, RateView] = {}
    for metric in PANEL_METRICS:
        name = BIAS_RATE if metric == own else rate_name(metric)
        m = by_key.get((bench, axis, name))
        if m is not None:
            out[metric] = RateView.of(m)
    return out


def score_contexts(
    measures: Iterable[Measure],
    metric: str,
    controls: Mapping[str, Sequence[str]],
) -> list[ScoreContext]:
    """The run's bias rates in context, one per (benchmark, axis) the run scored, with a
    control or a metric panel where it has one (a run scored with ``--no-panel`` and no
    control still lists its rate: a reader looks for every scored axis in one place);
    control benchmarks themselves are not listed.

    ``metric`` is the run's own metric; ``controls`` maps a benchmark id to its control
    benchmark ids (the manifest's ``controls``).
    """
    ms = list(measures)
    by_key = {(m.benchmark, m.axis, m.measure): m for m in ms}
    control_ids = {c for cs in controls.values() for c in cs}
    out: list[ScoreContext] = []
    for m in ms:
        if m.measure != BIAS_RATE or m.kind != "rate" or m.benchmark in control_ids:
            continue
        panel = _panel(by_key, m.benchmark, m.axis, metric)
        control = next(
            (
                c
                for cid in controls.get(m.benchmark, ())
                for c in ms
                if c.benchmark == cid and c.measure == BIAS_RATE
            ),
            None,
        )
        agreement = by_key.get((m.benchmark, m.axis, AGREEMENT))
        out.append(
            ScoreContext(
                benchmark=m.benchmark,
                axis=m.axis,
                metric=metric,
                rate=RateView.of(m),
                control_benchmark=control.benchmark if control else None,
                control_axis=control.axis if control else None,
                control=RateView.of(control) if control else None,
                panel=panel,
                control_panel=_panel(by_key, control.benchmark, control.axis, metric)
                if control
                else {},
                agreement=RateView.of(agreement) if agreement else None,
            )
        )
    return out
