"""The noise a comparison is judged against: repeat groups of each side's configuration.

Runs of one snapshot with one measurement configuration (``StoreView.configuration_groups``:
``--repeat`` runs, nightly runs, imports alike) disagree with each other for no reason but
the measurement itself: an API that answers differently to the same request, an option
order drawn at random. How much they disagree is the **noise floor** of that
configuration, shown as a distribution, not one number:

* the per-item flip rate of every pair of runs in the group (``NoiseFloor.pair_rates``),
  with the threshold a comparison's flip rate must exceed (``NoiseFloor.upper``: the
  largest pair rate, and at least the one-sided Wilson upper bound of the pooled rate);
* the bias rate of every run in the group, whose spread (largest − smallest) is the
  largest rate change two runs of the configuration showed with nothing changed.

Which groups judge a comparison of a new run with its baseline:

* **both sides**, when they belong to different configurations (a configuration change):
  the baseline's group and the new run's group, each whole;
* **the shared group minus the new run**, when both runs have one configuration: the run
  under test must not vouch for its own noise;
* otherwise **the snapshot's nearest repeat group** in time (another configuration; said
  so), and when there is none, the noise is *unknown* for an API or imported snapshot,
  which the verdict says instead of assuming none. A pinned local snapshot reruns
  bit-identically, so there no floor means zero noise, as before.

Local runs are deterministic: in one environment a rerun is bit-identical, so two local
runs of one configuration that disagree have *changed* (environment drift, which the
provenance diff names), they are not noise. For local runs a repeat group is therefore a
``--repeat`` group (one process, one environment), not every run of the configuration;
for API and imported runs, whose answers vary from call to call, it is every complete
run of the configuration (``replicates``).

A group's floor uses its ``MAX_RUNS`` most recent runs, so a year of nightly runs costs 45
pairs, not 66,000. Quarantined runs are never members (the store's groups hold complete
runs only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from monitor.drift.stats import NoiseFloor, noise_floor
from monitor.readmodel.models import AxisKey, AxisOutcomes, ConfigurationGroup, StoredRun
from monitor.store.view import StoreView

MAX_RUNS = 10
Side = Literal["baseline", "new", "same configuration", "nearest"]


def describe_group(
    group: ConfigurationGroup,
    n_runs: int | None = None,
    span: Sequence[datetime] | None = None,
) -> str:
    """ "6 runs of gpt-4 via chat.completions, 2025-04-23" — what a reader needs to place it."""
    cfg = group.configuration
    n = n_runs if n_runs is not None else len(group.run_ids)
    what = str(cfg.get("model") or "?")
    if cfg.get("api"):
        what += f" via {cfg['api']}"
    times = span or group.started_at
    first, last = times[0], times[-1]
    when = (
        f"{first:%Y-%m-%d}" if first.date() == last.date() else f"{first:%Y-%m-%d}–{last:%Y-%m-%d}"
    )
    return f"{n} runs of {what}, {when}"


@dataclass(frozen=True)
class GroupNoise:
    """One repeat group's noise on one axis."""

    side: Side
    group_key: str
    description: str
    run_ids: tuple[str, ...]
    floor: NoiseFloor
    rates: tuple[float, ...]  # each member's bias rate (stereo / decided) on this axis

    @property
    def rate_spread(self) -> float:
        return max(self.rates) - min(self.rates) if self.rates else 0.0


@dataclass(frozen=True)
class NoiseContext:
    """The noise one axis of one comparison is judged against (see the module docstring).

    ``sides`` is empty when no repeat group applies; ``unknown`` then says why, and
    ``assumed_zero`` whether that means zero noise (a pinned local snapshot) or unknown
    noise (an API or imported snapshot).
    """

    sides: tuple[GroupNoise, ...] = ()
    unknown: str | None = None
    assumed_zero: bool = False

    @property
    def floor(self) -> NoiseFloor | None:
        """The side with the highest flip-rate threshold: a change must clear every side."""
        if not self.sides:
            return None
        return max(self.sides, key=lambda s: s.floor.upper).floor

    @property
    def rate_bound(self) -> float | None:
        """The largest bias-rate spread of any side's group."""
        return max(s.rate_spread for s in self.sides) if self.sides else None


def _bias_rate(outcomes: Mapping[str, str]) -> float | None:
    decided = [o for o in outcomes.values() if o in ("stereo", "anti")]
    return sum(o == "stereo" for o in decided) / len(decided) if decided else None


@dataclass
class NoiseBook:
    """Noise contexts for the comparisons of one drift session (caches reads)."""

    view: StoreView
    alpha: float = 0.05
    max_runs: int = MAX_RUNS
    _groups: dict[str, list[ConfigurationGroup]] = field(default_factory=dict)
    _outcomes: dict[str, dict[AxisKey, AxisOutcomes]] = field(default_factory=dict)
    _runs: dict[str, StoredRun] = field(default_factory=dict)

    def groups(self, snapshot_id: str) -> list[ConfigurationGroup]:
        if snapshot_id not in self._groups:
            self._groups[snapshot_id] = self.view.configuration_groups(snapshot_id)
        return self._groups[snapshot_id]

    def outcomes(self, run_id: str) -> dict[AxisKey, AxisOutcomes]:
        if run_id not in self._outcomes:
            self._outcomes[run_id] = self.view.axis_outcomes(run_id)
        return self._outcomes[run_id]

    def run(self, run_id: str) -> StoredRun:
        if run_id not in self._runs:
            self._runs[run_id] = self.view.run(run_id)
        return self._runs[run_id]

    def group_of(self, run: StoredRun) -> ConfigurationGroup | None:
        return next((g for g in self.groups(run.snapshot_id) if run.run_id in g.run_ids), None)

    def replicates(self, group: ConfigurationGroup, anchor: StoredRun) -> tuple[str, ...]:
        """The runs of ``group`` that are replicates of ``anchor`` (see the module docstring)."""
        return replicates(group, anchor, self.run)

    def units(self, snapshot_id: str) -> list[tuple[ConfigurationGroup, tuple[str, ...]]]:
        """Every repeat group of the snapshot: (its configuration group, its runs)."""
        return replicate_units(self.groups(snapshot_id), self.run)

    def _sources(
        self, new: StoredRun, base: StoredRun
    ) -> list[tuple[Side, ConfigurationGroup, tuple[str, ...]]]:
        g_new, g_base = self.group_of(new), self.group_of(base)
        out: list[tuple[Side, ConfigurationGroup, tuple[str, ...]]] = []
        if (
            g_new is not None
            and g_base is not None
            and g_new.key == g_base.key
            and (new.snapshot_id == base.snapshot_id)
        ):
            members = tuple(r for r in self.replicates(g_base, base) if r != new.run_id)
            if len(members) >= 2:
                out.append(("same configuration", g_new, members))
        else:
            if g_base is not None and len(members := self.replicates(g_base, base)) >= 2:
                out.append(("baseline", g_base, members))
            if g_new is not None and len(members := self.replicates(g_new, new)) >= 2:
                out.append(("new", g_new, members))
        if out:
            return out
        nearest = self._nearest(new)
        return [nearest] if nearest else []

    def _nearest(self, new: StoredRun) -> tuple[Side, ConfigurationGroup, tuple[str, ...]] | None:
        best: tuple[float, ConfigurationGroup, tuple[str, ...]] | None = None
        for g, unit in self.units(new.snapshot_id):
            members = tuple(r for r in unit if r != new.run_id)
            if len(members) < 2:
                continue
            distance = _distance(
                new.started_at, [self.run(members[0]).started_at, self.run(members[-1]).started_at]
            )
            if best is None or distance < best[0]:
                best = (distance, g, members)
        return ("nearest", best[1], best[2]) if best else None

    def repeat_sources(
        self, new: StoredRun, base: StoredRun
    ) -> list[tuple[Side, ConfigurationGroup, tuple[str, ...]]]:
        """The repeat groups that judge a comparison of ``new`` with ``base`` (see the
        module docstring), each as (side, configuration group, its most recent runs): for
        families that measure their own noise on these runs (``Family.drift``)."""
        return [(s, g, m[-self.max_runs :]) for s, g, m in self._sources(new, base)]

    def runs_read(self, new: StoredRun, base: StoredRun) -> set[str]:
        """The runs whose outcomes ``for_pair(new, base)`` reads (for one batched read)."""
        return {r for _, _, members in self._sources(new, base) for r in members[-self.max_runs :]}

    def for_pair(self, new: StoredRun, base: StoredRun) -> dict[AxisKey, NoiseContext]:
        """The noise context of every axis either run scored."""
        axes = set(self.outcomes(new.run_id)) | set(self.outcomes(base.run_id))
        sources = self._sources(new, base)
        per_axis: dict[AxisKey, list[GroupNoise]] = {k: [] for k in axes}
        for side, group, members in sources:
            members = members[-self.max_runs :]
            by_axis = [self.outcomes(r) for r in members]
            for key in axes:
                repeats = [o[key].outcomes for o in by_axis if key in o]
                floor = noise_floor(repeats, self.alpha)
                if floor is None:
                    continue
                rates = tuple(r for r in (_bias_rate(x) for x in repeats) if r is not None)
                per_axis[key].append(
                    GroupNoise(
                        side=side,
                        group_key=group.key,
                        description=describe_group(
                            group,
                            len(members),
                            [self.run(members[0]).started_at, self.run(members[-1]).started_at],
                        ),
                        run_ids=members,
                        floor=floor,
                        rates=rates,
                    )
                )
        local = new.origin == "local" and base.origin == "local"
        out: dict[AxisKey, NoiseContext] = {}
        for key, sides in per_axis.items():
            if sides:
                out[key] = NoiseContext(tuple(sides))
            elif local:
                out[key] = NoiseContext(
                    unknown="no noise floor measured for this snapshot (no repeat group); "
                    "a pinned local snapshot reruns bit-identically, so none is assumed",
                    assumed_zero=True,
                )
            else:
                out[key] = NoiseContext(
                    unknown="noise unknown: no repeat group of this API configuration "
                    "(score it with --repeat, or import repeated runs, to measure it)"
                )
        return out


def replicates(
    group: ConfigurationGroup, anchor: StoredRun, run: Callable[[str], StoredRun]
) -> tuple[str, ...]:
    """The runs of ``group`` that repeat ``anchor``'s measurement: every run for an API or
    imported run; for a local run only its ``--repeat`` group (none without one)."""
    if anchor.origin != "local":
        return group.run_ids
    if anchor.repeat_group is None:
        return ()
    return tuple(r for r in group.run_ids if run(r).repeat_group == anchor.repeat_group)


def replicate_units(
    groups: Sequence[ConfigurationGroup], run: Callable[[str], StoredRun]
) -> list[tuple[ConfigurationGroup, tuple[str, ...]]]:
    """Every repeat group (≥ 2 runs) among ``groups``, oldest first."""
    out: list[tuple[ConfigurationGroup, tuple[str, ...]]] = []
    for g in groups:
        seen: set[tuple[str, ...]] = set()
        for rid in g.run_ids:
            unit = replicates(g, run(rid), run)
            if len(unit) >= 2 and unit not in seen:
                seen.add(unit)
                out.append((g, unit))
    return out


def _distance(t: datetime, span: Sequence[datetime]) -> float:
    """Seconds from ``t`` to the nearest point of ``span`` (0 inside it)."""
    first, last = span[0], span[-1]
    if first <= t <= last:
        return 0.0
    return min(abs((t - first).total_seconds()), abs((t - last).total_seconds()))
