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
from collections.abc import Callable, Mapping

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


def _rebuilt(
    row: ScoreRow,
    build: Callable[..., ScoreRow],
    stored: Mapping[str, str],
    fields: tuple[str, ...] = FIELDS,
    **fixed: int,
) -> list[str]:
    """The fields of ``row`` that its metric's row builder ``build`` does not give back
    from the row's own stored numbers (``stored``: the builder's argument -> the row's
    field it is fed from; the token counts always, ``fixed`` as given: counts the row does
    not keep, which do not enter delta)."""
    values = {arg: getattr(row, name) for arg, name in stored.items()}
    if not _have(*values.values()):
        return []  # unscorable rows are judged by the presence checks
    rebuilt = build(
        row.item_id,
        **values,
        n_tokens_stereo=row.n_tokens_stereo or 0,
        n_tokens_anti=row.n_tokens_anti or 0,
        **fixed,
    )
    return _differences(row, rebuilt, fields)


_LOG_PROBS = {"lp_stereo": "lp_stereo", "lp_anti": "lp_anti"}
_PRIORS = {"prior_stereo": "prior_stereo", "prior_anti": "prior_anti"}
# cll-reference names the same stored numbers after the original code's S and T.
_REFERENCE = {
    "s_stereo": "lp_stereo",
    "s_anti": "lp_anti",
    "t_stereo": "prior_stereo",
    "t_anti": "prior_anti",
}


def check_cll(row: ScoreRow) -> list[str]:
    return _rebuilt(row, cll_row, _LOG_PROBS | _PRIORS, n_targets_stereo=0, n_targets_anti=0)


def check_ull(row: ScoreRow) -> list[str]:
    return _rebuilt(row, ull_row, _LOG_PROBS, ("outcome", "delta"))


def check_cll_reference(row: ScoreRow) -> list[str]:
    return _rebuilt(row, cll_reference_row, _REFERENCE, words_stereo=0, words_anti=0)


def check_aul(row: ScoreRow) -> list[str]:
    """AUL's delta is the difference of the two stored mean token log-probs."""
    if not _have(row.score_stereo, row.score_anti):
        return []
    delta = row.score_stereo - row.score_anti  # type: ignore[operator]
    wrong = [] if row.delta == delta else ["delta"]
    return wrong + ([] if row.outcome == decide(delta) else ["outcome"])
