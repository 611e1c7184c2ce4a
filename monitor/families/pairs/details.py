"""The pair family's detail tables: the columns of a sentence pair and of its score that
no other family has, kept beside the store's generic ``items`` and ``scores``.

Names match ``Item``'s and ``ScoreRow``'s attributes, which the store reads and fills by
name; defaults match theirs, so an item or score of another family gets no row here.
Schema 7 moved these columns out of the core tables (``monitor.store.schema``).
"""

from __future__ import annotations

from monitor.contract.detail import DetailColumn, DetailTable

PAIR_ITEMS = DetailTable(
    name="pair_items",
    extends="items",
    columns=(
        # CrowS-Pairs' stereo_antistereo; "stereo" for Indian-BhED (Item's default)
        DetailColumn("direction", "VARCHAR", "stereo"),
        DetailColumn("text_stereo", "VARCHAR"),
        DetailColumn("text_anti", "VARCHAR"),
        DetailColumn("targets_stereo", "VARCHAR[]", ()),
        DetailColumn("targets_anti", "VARCHAR[]", ()),
        # the source cells as they were, which the reference CLL variant refills
        DetailColumn("raw_stereo_cell", "VARCHAR"),
        DetailColumn("raw_anti_cell", "VARCHAR"),
    ),
)

PAIR_SCORES = DetailTable(
    name="pair_scores",
    extends="scores",
    columns=(
        DetailColumn("score_stereo", "DOUBLE"),
        DetailColumn("score_anti", "DOUBLE"),
        DetailColumn("lp_stereo", "DOUBLE"),  # sentence log-prob (nats)
        DetailColumn("lp_anti", "DOUBLE"),
        DetailColumn("prior_stereo", "DOUBLE"),  # target-word prior log-prob (CLL)
        DetailColumn("prior_anti", "DOUBLE"),
        DetailColumn("prob_stereo", "DOUBLE"),  # probability mass (forced-choice API)
        DetailColumn("prob_anti", "DOUBLE"),
        DetailColumn("n_tokens_stereo", "INTEGER"),
        DetailColumn("n_tokens_anti", "INTEGER"),
    ),
)

DETAIL_TABLES = (PAIR_ITEMS, PAIR_SCORES)
