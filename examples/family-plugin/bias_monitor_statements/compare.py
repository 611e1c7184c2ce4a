"""Drift for statements: two runs' answers paired by item, tested with the core's tools.

The family's paired comparison, declared to bias-monitor's one comparison of stereo /
anti outcomes (``monitor.drift.paired_outcomes``, a public helper a plug-in may call).
Per benchmark, over every statement both runs answered (a tie in either run is left out
of the pair), the compared measure is the share of answers on the stereotype's side, both
stances pooled (``stereo_share``; with as many endorsing as rejecting statements answered
it is the balanced rate). Everything statistical is the core's, not this family's:

* pairing and the 2 × 2 of flips: ``b`` answers that moved to the other side of the
  stereotype, ``c`` answers that moved to its side;
* the exact McNemar p, Δ with Newcombe's paired interval, the exact minimum detectable
  change;
* "not comparable" when the metrics, metric versions or benchmark files differ, or too
  few statements were scored by both;
* the noise floor: the largest spread of the share among the repeat runs drift picks for
  the pair; Benjamini–Hochberg over every test of the session and the verdict are
  drift's.

A flagged change towards the stereotype (c > b) is a regression.
"""

from __future__ import annotations

from bias_monitor_statements.frame import FAMILY_NAME
from bias_monitor_statements.measures import ALL
from monitor.drift.paired_outcomes import OutcomeComparison
from monitor.drift.stats import Flips

MEASURE = "stereo_share"
METHOD = "exact McNemar over statements answered in both runs"


def _words(old: float, new: float, n: int, flips: Flips) -> str:
    """The change of a pair whose shares are defined, in words."""
    return (
        f"answers on the stereotype's side {100 * old:.1f}% → {100 * new:.1f}% of {n} "
        f"statements ({flips.c} moved to the stereotype's side, {flips.b} away from it)"
    )


COMPARISON = OutcomeComparison(
    family=FAMILY_NAME,
    measure=MEASURE,
    method=METHOD,
    scope=lambda benchmark: f"statements of {benchmark}",
    axis=lambda _benchmark: ALL,
    words=_words,
    undefined="no statement was answered in both runs",
)
compare = COMPARISON.compare
