"""Which runs drift compares by default: each snapshot's runs form one series per kind of
result (a *track*: snapshot × result family), and a run is compared along its own track.

A snapshot may be scored on several kinds of result in one night: Indian-BhED pairs with
``cll`` and BharatBBQ questions with ``mc-loglik``, say, or word-set tests on an embedding
snapshot beside its pairs. A question run and a pair run have no subject in common, so
comparing them compares nothing; worse, whichever was written last hid the other series'
latest run from ``drift`` and the report. Within a family, runs on different benchmarks
or metrics are still compared (the axes both scored; the rest listed as not scored), and
a metric or configuration change stays in view (``previous_configuration_run``).

Everything is read through the ``StoreView`` (typed runs, no SQL here).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from monitor.errors import UserInputError
from monitor.metrics.registry import get_metric
from monitor.readmodel.models import StoredRun
from monitor.store.view import StoreView

Track = tuple[str, str]  # (snapshot id, result family)


@functools.cache
def family_of(metric: str) -> str:
    """The result family of ``metric``; a metric this version does not know (a run
    written by a newer version) is a track of its own rather than an error. Cached: drift
    asks it for every run of a snapshot's history."""
    try:
        return get_metric(metric).family.name
    except UserInputError:
        return f"unknown metric {metric}"


def track_of(run: StoredRun) -> Track:
    return run.snapshot_id, family_of(run.metric)


def _order(run: StoredRun) -> tuple:
    return run.started_at, run.run_id


@dataclass(frozen=True)
class Tracks:
    """The complete runs of some snapshots, by track, oldest first."""

    runs: dict[Track, list[StoredRun]]

    @classmethod
    def of(cls, view: StoreView, snapshots: Iterable[str]) -> Tracks:
        wanted = set(snapshots)
        runs: dict[Track, list[StoredRun]] = {}
        for r in view.runs_since(None):
            if r.status == "complete" and r.snapshot_id in wanted:
                runs.setdefault(track_of(r), []).append(r)
        for series in runs.values():
            series.sort(key=_order)
        return cls(runs)

    def latest(self, snapshot_id: str) -> list[str]:
        """The latest complete run of each of the snapshot's tracks (by family name)."""
        return [
            series[-1].run_id
            for (snap, _), series in sorted(self.runs.items())
            if snap == snapshot_id and series
        ]

    def baseline(self, run: StoredRun) -> str | None:
        """The latest earlier complete run on ``run``'s track, outside its repeat group;
        one scored with the same metric and version is preferred (a metric change is
        the configuration-change pair's to show, not the previous run's)."""
        best: tuple | None = None
        for r in self.runs.get(track_of(run), ()):
            if not r.started_at < run.started_at:
                continue
            if run.repeat_group is not None and r.repeat_group == run.repeat_group:
                continue
            same = (r.metric, r.metric_version) == (run.metric, run.metric_version)
            key = (same, *_order(r))
            if best is None or key > best[0]:
                best = (key, r.run_id)
        return None if best is None else best[1]

    def earlier_elsewhere(self, run: StoredRun) -> list[StoredRun]:
        """The snapshot's earlier complete runs of other kinds of result."""
        track = track_of(run)
        return [
            r
            for key, series in self.runs.items()
            if key[0] == run.snapshot_id and key != track
            for r in series
            if r.started_at < run.started_at
        ]

    def latest_like(self, snapshot_id: str, run: StoredRun) -> str | None:
        """``snapshot_id``'s latest complete run of ``run``'s family (same metric and
        version preferred): the baseline of a pull request's new model."""
        family = track_of(run)[1]
        series = self.runs.get((snapshot_id, family), [])
        if not series:
            return None
        same = [
            r for r in series if (r.metric, r.metric_version) == (run.metric, run.metric_version)
        ]
        return (same or series)[-1].run_id


def default_baseline(view: StoreView, run_id: str) -> str | None:
    """The run ``drift`` compares ``run_id`` with by default (``Tracks.baseline``); an
    unknown id is a ``UserInputError``."""
    run = view.run(run_id)
    return Tracks.of(view, [run.snapshot_id]).baseline(run)
