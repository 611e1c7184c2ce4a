"""Recompute a stored row from its own inputs: does it still say what it says?

A score row keeps the numbers its result was computed from (sentence log-probs, target
priors, mean token log-probs). Rebuilding the row from those inputs with the metric's own
row builder must give back the stored delta, side scores and outcome, bit for bit; a row
edited after scoring (a tampered shard, a hand "fix" in the database) does not. The
quality gate runs these checks on every run (``MetricSpec.check_row``).

Pure: a row in, the names of the fields that disagree out. Metrics whose rows cannot be
rebuilt from stored numbers (API answers, imported study rows) have no check here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from monitor.families.pairs.cll import cll_row, ull_row
from monitor.families.pairs.cll_reference import cll_reference_row
from monitor.metrics.outcomes import decide
from monitor.records import ScoreRow

CheckRow = Callable[[ScoreRow], list[str]]
FIELDS = ("outcome", "delta", "score_stereo", "score_anti")


def _differences(stored: ScoreRow, rebuilt: ScoreRow, fields=FIELDS) -> list[str]:
    out = []
    for name in fields:
        a, b = getattr(stored, name), getattr(rebuilt, name)
        same = a == b or (
            isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
        )
        if not same:
            out.append(name)
    return out


def _have(*values: float | None) -> bool:
    return all(v is not None and math.isfinite(v) for v in values)


def check_cll(row: ScoreRow) -> list[str]:
    if not _have(row.lp_stereo, row.lp_anti, row.prior_stereo, row.prior_anti):
        return []  # unscorable rows are judged by the presence checks
    rebuilt = cll_row(
        row.item_id,
        lp_stereo=row.lp_stereo,  # type: ignore[arg-type]
        lp_anti=row.lp_anti,  # type: ignore[arg-type]
        prior_stereo=row.prior_stereo,  # type: ignore[arg-type]
        prior_anti=row.prior_anti,  # type: ignore[arg-type]
        n_tokens_stereo=row.n_tokens_stereo or 0,
        n_tokens_anti=row.n_tokens_anti or 0,
        n_targets_stereo=0,
        n_targets_anti=0,
    )
    return _differences(row, rebuilt)


def check_ull(row: ScoreRow) -> list[str]:
    if not _have(row.lp_stereo, row.lp_anti):
        return []
    rebuilt = ull_row(
        row.item_id,
        lp_stereo=row.lp_stereo,  # type: ignore[arg-type]
        lp_anti=row.lp_anti,  # type: ignore[arg-type]
        n_tokens_stereo=row.n_tokens_stereo or 0,
        n_tokens_anti=row.n_tokens_anti or 0,
    )
    return _differences(row, rebuilt, ("outcome", "delta"))


def check_cll_reference(row: ScoreRow) -> list[str]:
    if not _have(row.lp_stereo, row.lp_anti, row.prior_stereo, row.prior_anti):
        return []
    rebuilt = cll_reference_row(
        row.item_id,
        s_stereo=row.lp_stereo,  # type: ignore[arg-type]
        s_anti=row.lp_anti,  # type: ignore[arg-type]
        t_stereo=row.prior_stereo,  # type: ignore[arg-type]
        t_anti=row.prior_anti,  # type: ignore[arg-type]
        n_tokens_stereo=row.n_tokens_stereo or 0,
        n_tokens_anti=row.n_tokens_anti or 0,
        words_stereo=0,
        words_anti=0,
    )
    return _differences(row, rebuilt)


def check_aul(row: ScoreRow) -> list[str]:
    """AUL's delta is the difference of the two stored mean token log-probs."""
    if not _have(row.score_stereo, row.score_anti):
        return []
    delta = row.score_stereo - row.score_anti  # type: ignore[operator]
    wrong = [] if row.delta == delta else ["delta"]
    return wrong + ([] if row.outcome == decide(delta) else ["outcome"])
