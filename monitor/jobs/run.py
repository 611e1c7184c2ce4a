"""``run_snapshot``: score one snapshot by its kind's driver (``monitor.kinds``)."""

from __future__ import annotations

from collections.abc import Collection

from monitor.benchmarks.items import LoadedBenchmark
from monitor.contract.registry import families, family_of_items
from monitor.errors import NotApplicable, UserInputError
from monitor.jobs.context import JobContext
from monitor.jobs.lifecycle import RunLifecycle
from monitor.jobs.options import EventSink, ProgressFactory, RunOptions, RunOutcome
from monitor.kinds import KindSpec, get_kind
from monitor.metrics.registry import get_metric
from monitor.scoring.api_tasks import asks_logprobs
from monitor.snapshots.model import Snapshot
from monitor.store.db import Store

# An API snapshot's ``[api] method`` names its preferred metric among its kind's.
METHOD_METRIC = {"forced-choice": "forced-choice", "sampling": "sampled-choice"}


def _own_metric_kinds(item_kinds: Collection[str]) -> list[str]:
    """The item kinds among ``item_kinds`` that a family without ``kind_default`` scores
    (``Family.kind_default``): a run of them uses that family's metric for the snapshot's
    kind (the first one the kind lists), not the kind's default."""
    return sorted(
        k for f in families() if not f.kind_default for k in f.item_kinds if k in item_kinds
    )


def metric_for(
    snapshot: Snapshot,
    kind: KindSpec,
    requested: str | None,
    item_kinds: Collection[str] = (),
) -> str:
    """The metric a run of ``snapshot`` uses: the one asked for (checked against the
    kind), else the snapshot's ``[api] method``, else the kind's default.

    ``item_kinds`` are the kinds of the items the run scores. A run has one metric, so
    choice questions (BBQ, BharatBBQ) are scored by the choice-qa family's metric for the
    kind (``mc-loglik`` for a local causal LM) and cannot share a run, or a command, with
    benchmarks of another family: that is a one-line error asking for two commands.
    """
    own = _own_metric_kinds(set(item_kinds))
    if own:
        return _family_metric(snapshot, kind, requested, own[0], set(item_kinds))
    if requested is not None:
        get_metric(requested)  # unknown name: one clear error listing the known ones
        metric = kind.check_metric(requested, snapshot.id)
        if item_kinds and not get_metric(metric).family.kind_default:
            raise UserInputError(
                f"metric {metric!r} scores {get_metric(metric).family.name} benchmarks; none "
                "was selected"
            )
        return metric
    preferred = METHOD_METRIC.get(snapshot.api.method) if snapshot.api else None
    return preferred if preferred in kind.metrics else kind.default_metric


def check_requested_metric(snapshot: Snapshot, kind: KindSpec, requested: str | None) -> None:
    """Refuse an unknown ``--metric``, or one the snapshot's kind does not offer, before
    any benchmark is read: the checks of ``metric_for`` that need no items (the metric
    itself is chosen once the items are known)."""
    if requested is not None:
        get_metric(requested)  # unknown name: one clear error listing the known ones
        kind.check_metric(requested, snapshot.id)


def _family_metric(
    snapshot: Snapshot, kind: KindSpec, requested: str | None, item_kind: str, kinds: set[str]
) -> str:
    if kinds != {item_kind}:
        others = ", ".join(sorted(kinds - {item_kind}))
        raise UserInputError(
            f"{item_kind} benchmarks ({family_of_items({item_kind})[0].name}) are scored by "
            "their own metric and "
            f"cannot share a run with {others} benchmarks; run them in separate commands"
        )
    fitting = [m for m in kind.metrics if item_kind in get_metric(m).family.item_kinds]
    if not fitting:
        raise NotApplicable(
            f"snapshot {snapshot.id!r} ({kind.name}) has no metric for {item_kind} benchmarks"
        )
    if requested is not None and requested not in fitting:
        get_metric(requested)
        raise UserInputError(
            f"metric {requested!r} does not score {item_kind} benchmarks; for snapshot "
            f"{snapshot.id!r} use {', '.join(fitting)}"
        )
    if requested is None and snapshot.api is not None and snapshot.api.method in METHOD_METRIC:
        # An API snapshot's [api] method (forced choice or sampling) picks the family's
        # metric that asks the same way: sampling -> mc-letter-sampled.
        logprobs = asks_logprobs(METHOD_METRIC[snapshot.api.method])
        fitting = [m for m in fitting if asks_logprobs(m) == logprobs] or fitting
    return requested or fitting[0]


def item_kinds(benches: list[LoadedBenchmark]) -> set[str]:
    """The kinds of the items a run would score."""
    return {it.kind for b in benches for it in b.items}


def sized_benchmarks(benches: list[LoadedBenchmark]) -> bool:
    """Whether any of ``benches`` is of a family whose loader takes ``--size``
    (``Family.sized``: BBQ, BharatBBQ), so the option means something here."""
    kinds = item_kinds(benches)
    return any(f.sized and kinds & set(f.item_kinds) for f in families())


def run_snapshot(
    store: Store,
    snapshot: Snapshot,
    benches: list[LoadedBenchmark],
    options: RunOptions,
    *,
    on_event: EventSink = lambda _msg: None,
    progress_factory: ProgressFactory | None = None,
    metric: str | None = None,
) -> list[RunOutcome]:
    """Score one snapshot ``options.repeat`` times (each repeat its own run) with
    ``metric``, the one the caller chose for it (``monitor.app``); without one it is
    chosen here from ``options.metric`` and the items."""
    kind = get_kind(snapshot.kind)
    chosen = metric or metric_for(snapshot, kind, options.metric, item_kinds(benches))
    ctx = JobContext(
        store=store,
        lifecycle=RunLifecycle(store, on_event),
        snapshot=snapshot,
        kind=kind,
        metric=get_metric(chosen),
        benches=benches,
        options=options,
        on_event=on_event,
        progress_factory=progress_factory,
    )
    return kind.load_driver()(ctx)
