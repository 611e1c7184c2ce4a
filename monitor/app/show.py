"""``show`` as a function: one typed read of everything a stored run's page shows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.app.stores import open_reader
from monitor.contract.family import Family
from monitor.jobs.options import EventSink
from monitor.records import Measure


@dataclass(frozen=True)
class ShownRun:
    """A stored run: its row, measures, exclusions, quality results, the family its
    metric belongs to (None for a metric no longer registered), and its per-item scores
    when asked (``items``; benchmark texts only with ``texts``)."""

    run_id: str
    run: dict[str, Any]
    metric: str
    measures: list[Measure]
    exclusions: list[dict[str, Any]]
    validations: list[dict[str, Any]]
    family: Family | None
    items: list[dict[str, Any]] | None


def show(
    run_id: str,
    db: Path | None = None,
    *,
    items: bool = False,
    texts: bool = False,
    on_event: EventSink = lambda _msg: None,
) -> ShownRun:
    """Read run ``run_id`` (or a unique prefix of one) from the store at ``db``."""
    from monitor.metrics.registry import METRICS

    with open_reader(db, on_event).read() as view:  # one typed read of everything shown
        stored = view.resolve_run(run_id)
        rid = stored.run_id
        spec = METRICS.get(stored.metric)
        family = spec.family if spec is not None else None
        detail = None
        if items:  # a family whose items are not pairs reads its own rows (terms)
            own_rows = family.terminal().item_scores if family is not None else None
            detail = (
                own_rows(view, rid, with_texts=texts)
                if own_rows is not None
                else view.item_scores(rid, with_texts=texts)
            )
        return ShownRun(
            run_id=rid,
            run=dict(stored.fields),
            metric=stored.metric,
            measures=view.measures(rid),
            exclusions=view.exclusions(rid),
            validations=view.validations(rid),
            family=family,
            items=detail,
        )
