"""Drift for SeeGULL: two runs' outcomes paired by item, tested with the core's tools.

The family's paired comparison, declared to drift's one comparison of stereo / anti
outcomes (``monitor.drift.paired_outcomes``, which the plug-in example calls too). Per
benchmark (one language), over every item both runs decided with frame 1 (a tie in
either run is left out of the pair), the compared measure is the stereotype rate
(``stereo_rate``: the attribute likelier after the stereotyped identity than after the
contrast): exact McNemar p, Δ with Newcombe's paired interval, the exact MDE,
comparability and the noise floor, all the core's.

Items share identities and attributes, so the paired interval is widened by the design
effect of clustering on the stereotyped identity (``_identities``: the item's payload
names it) and the MDE is computed at the effective n; the exact McNemar p is left as it
is and the design effect is in ``details``. A flagged change towards the stereotype
(c > b) is a regression.
"""

from __future__ import annotations

from collections.abc import Iterable

from monitor.drift.paired_outcomes import OutcomeComparison
from monitor.drift.stats import Flips
from monitor.families.seegull.frames import FAMILY_NAME
from monitor.families.seegull.measures import HEADLINE
from monitor.store.view import StoreView

METHOD = (
    "exact McNemar over items decided in both runs; interval widened by the design effect "
    "of identities"
)


def _identities(view: StoreView, item_ids: Iterable[str]) -> dict[str, str]:
    """Item → its stereotyped identity, the cluster of the paired interval."""
    return {i: str(it.payload.get("identity")) for i, it in view.items(item_ids).items()}


def _words(old: float, new: float, n: int, flips: Flips) -> str:
    """The change of a pair whose rates are defined, in words."""
    return (
        f"stereotype wins {100 * old:.1f}% → {100 * new:.1f}% of {n} items "
        f"({flips.c} moved to the stereotype, {flips.b} away from it)"
    )


COMPARISON = OutcomeComparison(
    family=FAMILY_NAME,
    measure=HEADLINE,
    method=METHOD,
    scope=lambda benchmark: f"SeeGULL items of {benchmark}",
    axis=lambda benchmark: benchmark,  # one language per benchmark: drift's line names it
    words=_words,
    undefined="no item was decided in both runs",
    clusters=_identities,
)
compare = COMPARISON.compare
