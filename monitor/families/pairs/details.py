"""The pair family's detail tables: the columns of a sentence pair and of its score that
no other family has, kept beside the store's generic ``items`` and ``scores``.

Names match ``PairItem``'s and ``PairScoreRow``'s fields (``records.py``), which the
store fills by name from the family's own rows and reads back into; defaults match
theirs. The score columns say which numbers the results suite holds to finite values
and where each must lie. Schema 7 moved these columns out of the core tables
(``monitor.store.schema``).
"""

from __future__ import annotations

from monitor.contract.detail import Bounds, DetailColumn, DetailTable
from monitor.families.pairs.records import PairItem, PairScoreRow

LOG_PROB = Bounds("is a log-probability, so ≤ 0", maximum=0)
PROBABILITY = Bounds("is a probability, so within [0, 1]", minimum=0, maximum=1)
TOKENS = Bounds("counts at least one scored token where present", minimum=1)

PAIR_ITEMS = DetailTable(
    name="pair_items",
    extends="items",
    columns=(
        # CrowS-Pairs' stereo_antistereo; "stereo" for Indian-BhED (Item's default)
        DetailColumn("direction", "VARCHAR", "stereo"),
        DetailColumn("text_stereo", "VARCHAR", shown="with_texts"),
        DetailColumn("text_anti", "VARCHAR", shown="with_texts"),
        DetailColumn("targets_stereo", "VARCHAR[]", ()),
        DetailColumn("targets_anti", "VARCHAR[]", ()),
        # the source cells as they were, which the reference CLL variant refills
        DetailColumn("raw_stereo_cell", "VARCHAR"),
        DetailColumn("raw_anti_cell", "VARCHAR"),
    ),
    record=PairItem,
)

PAIR_SCORES = DetailTable(
    name="pair_scores",
    extends="scores",
    columns=(
        DetailColumn("score_stereo", "DOUBLE", finite=True, shown="always"),
        DetailColumn("score_anti", "DOUBLE", finite=True, shown="always"),
        # sentence log-prob (nats)
        DetailColumn("lp_stereo", "DOUBLE", finite=True, bounds=LOG_PROB),
        DetailColumn("lp_anti", "DOUBLE", finite=True, bounds=LOG_PROB),
        # target-word prior log-prob (CLL)
        DetailColumn("prior_stereo", "DOUBLE", finite=True, bounds=LOG_PROB),
        DetailColumn("prior_anti", "DOUBLE", finite=True, bounds=LOG_PROB),
        # probability mass (forced-choice API)
        DetailColumn("prob_stereo", "DOUBLE", finite=True, bounds=PROBABILITY),
        DetailColumn("prob_anti", "DOUBLE", finite=True, bounds=PROBABILITY),
        DetailColumn("n_tokens_stereo", "INTEGER", bounds=TOKENS),
        DetailColumn("n_tokens_anti", "INTEGER", bounds=TOKENS),
    ),
    record=PairScoreRow,
)

DETAIL_TABLES = (PAIR_ITEMS, PAIR_SCORES)
