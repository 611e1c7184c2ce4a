"""``drift`` as a function: select the pairs of runs, compare them, and say whether a
flagged change matches the ``--fail-on`` gate. Rendering is the caller's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from monitor.app.stores import open_reader
from monitor.contract.flags import flag_field
from monitor.drift.robustness import FAIL_ON
from monitor.drift.session import DriftResult
from monitor.errors import UserInputError
from monitor.jobs.options import EventSink
from monitor.store.snapshot import AsOf
from monitor.store.view import StoreView

if TYPE_CHECKING:
    from monitor.readmodel.models import StoredRun


class DriftSelection(BaseModel):
    """Which runs to compare with which baselines, and at what error rates.

    No ``runs`` and no ``snapshots``: each snapshot's latest complete run. ``baseline``:
    one baseline run; ``baseline_snapshot``: another snapshot's latest complete run (a
    pull request's comparison); neither: each run's previous complete run. Each field is
    a flag of ``drift`` and ``report`` (declared as ``run``'s option models are).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    runs: list[str] | None = flag_field(
        "--run", None, "New run id (repeatable). Default: each snapshot's latest complete run."
    )
    snapshots: list[str] | None = flag_field(
        ["--snapshot", "-s"], None, "Only these snapshots' latest runs (repeatable)."
    )
    baseline: str | None = flag_field(
        "--baseline",
        None,
        "Baseline run id (default: the previous complete run of the same snapshot).",
    )
    baseline_snapshot: str | None = flag_field(
        "--baseline-snapshot",
        None,
        "Compare with another snapshot's latest complete run (pull-request comparison).",
    )
    alpha: float = flag_field(
        "--alpha",
        0.05,
        "False discovery rate for Benjamini–Hochberg: a change is flagged only "
        "when its adjusted p is below it (and it clears the noise floor).",
        ge=0.0001,
        le=0.5,
    )
    confidence: float = flag_field(
        "--confidence",
        0.95,
        "Confidence level of every interval shown (rates and paired "
        "differences); independent of --alpha, and printed with each interval.",
        ge=0.5,
        le=0.999,
    )


@dataclass(frozen=True)
class DriftRequest:
    """A ``drift``: the selection, the store, and which flagged changes fail it."""

    selection: DriftSelection = field(default_factory=DriftSelection)
    db: Path | None = None
    fail_on: str = "never"  # regression | robust | any | never (``drift.robustness``)
    as_of: AsOf | None = None  # a lake read as it was at this snapshot (or time)


@dataclass(frozen=True)
class DriftOutcome:
    """Drift's result, the snapshot of every compared run, and the gate's answer."""

    result: DriftResult
    snapshot_of: dict[str, str]
    fail_on: str

    @property
    def failed(self) -> bool:
        """A flagged change matched ``fail_on`` (the command exits 1)."""
        return any(FAIL_ON[self.fail_on](c) for c in self.result.comparisons)


def compare(view: StoreView, selection: DriftSelection, db: Path | None = None) -> DriftResult:
    """Drift's result for ``selection`` over an open read of the store (``report`` builds
    its input from the same read); ``db``, the store as the user named it, goes into the
    command that scores a missing baseline."""
    from monitor.drift.session import run_drift, select_pairs

    snapshots = selection.snapshots or ()
    baseline_snapshot = [selection.baseline_snapshot] if selection.baseline_snapshot else []
    check_snapshot_names(view, [*snapshots, *baseline_snapshot])
    # The new runs' snapshots: --run's (--snapshot is then not read, as in
    # ``select_pairs``), else --snapshot's, else every snapshot with a complete run.
    news = [view.resolve_run(r).snapshot_id for r in selection.runs or ()]
    if not news and not snapshots and baseline_snapshot:
        news = view.snapshots_with_complete_runs()
    check_complete_runs(view, [*(() if news else snapshots), *baseline_snapshot], news, db)
    pairs = select_pairs(
        view,
        run_ids=selection.runs or (),
        snapshots=snapshots,
        baseline=selection.baseline,
        baseline_snapshot=selection.baseline_snapshot,
    )
    return run_drift(view, pairs, alpha=selection.alpha, confidence=selection.confidence)


def drift(request: DriftRequest, on_event: EventSink = lambda _msg: None) -> DriftOutcome:
    """Compare the selected runs with their baselines (paired tests, BH over the panel)."""
    if request.fail_on not in FAIL_ON:
        raise UserInputError(f"--fail-on {request.fail_on!r}: use regression, robust, any or never")
    with open_reader(request.db, on_event, request.as_of).read() as view:
        result = compare(view, request.selection, request.db)
        ids = (r for p in result.pairs for r in (p.new_run_id, p.baseline_run_id) if r)
        snapshot_of = {rid: r.snapshot_id for rid, r in view.runs(ids).items()}
    return DriftOutcome(result=result, snapshot_of=snapshot_of, fail_on=request.fail_on)


def check_snapshot_names(view: StoreView, names: list[str]) -> None:
    """Refuse a snapshot name that neither a snapshot file nor the store knows, as
    "unknown snapshot" with the closest known name (a typo), before drift says it "has no
    complete run"; a known snapshot without a complete run still gets that message."""
    from monitor.snapshots.registry import load_snapshots, unknown_snapshot

    stored = set(view.snapshots_with_complete_runs())
    missing = [n for n in names if n not in stored]
    if not missing:
        return
    try:
        files = set(load_snapshots())
    except UserInputError:  # drift reads the store; a bad snapshot folder is not its error
        files = set()
    for name in missing:
        if name not in files:
            raise UserInputError(unknown_snapshot(name, stored | files))


def check_complete_runs(
    view: StoreView, names: Sequence[str], news: Sequence[str], db: Path | None
) -> None:
    """Refuse a named snapshot that has no complete run yet (the usual first-hour case:
    a pull request's baseline not scored in this store) with the exact command that
    scores it: on the benchmarks the other snapshots named (``names``, and those of the
    ``--run`` runs, ``news``) were scored on, so the two can be compared (controls left
    out: ``run`` adds them), else on the defaults."""
    import shlex

    stored = set(view.snapshots_with_complete_runs())
    missing = [n for n in dict.fromkeys(names) if n not in stored]
    if not missing:
        return
    benchmarks, sizes = _scored_benchmarks(view, [n for n in (*news, *names) if n in stored])
    name = missing[0]
    words = ["bias-monitor", "run", "-s", name]
    words += [w for b in benchmarks for w in ("-b", b)]
    words += ["--size", sizes[0]] if len(sizes) == 1 else []
    words += ["--db", str(db)] if db is not None else []
    raise UserInputError(
        f"snapshot {name!r} has no complete run in the store; score it first: {shlex.join(words)}"
    )


def _scored_benchmarks(view: StoreView, snapshots: list[str]) -> tuple[list[str], list[str]]:
    """The benchmarks of the snapshots' latest complete runs (one per kind of result),
    without those that are another one's control (``run -b`` adds a control itself), and
    the ``--size`` values they were sampled at (a mini run's baseline is best mini too)."""
    from monitor.drift.baselines import Tracks

    tracks = Tracks.of(view, set(snapshots))
    ids = [r for s in dict.fromkeys(snapshots) for r in tracks.latest(s)]
    runs = list(view.runs(ids).values())
    scored = list(dict.fromkeys(b for run in runs for b in _benchmarks(run)))
    sizes = sorted({size for run in runs for size in _sizes(run)})
    try:
        from monitor.benchmarks.manifest import load_manifest

        manifest = load_manifest()
    except UserInputError:  # drift reads the store; an unreadable manifest is not its error
        return scored, sizes
    controls = {c for b in scored for c in manifest.controls_of(b)}
    return [b for b in scored if b not in controls], sizes


def _benchmarks(run: StoredRun) -> list[str]:
    """A stored run's benchmark ids (its ``benchmarks`` column)."""
    return [str(b) for b in (run.fields.get("benchmarks") or [])]


def _sizes(run: StoredRun) -> set[str]:
    """The ``--size`` each benchmark of a stored run was loaded at, where one was recorded
    (``dataset_versions``: a benchmark's ``sampling``)."""
    versions = run.fields.get("dataset_versions") or {}
    return {
        str(v["sampling"]["size"])
        for v in versions.values()
        if isinstance(v, dict) and isinstance(v.get("sampling"), dict) and "size" in v["sampling"]
    }
