"""The pair family's imports, as data (its ``importers`` hook): the caste study's results.

``import caste-bias`` reads a results folder of jeqcho/caste-bias (or a history folder:
one run per committed result, in commit order) and ``import caste-bias-gpt-5`` the GPT-5
follow-up's sampled answers; the work is ``caste_import``, ``caste_history`` and
``caste_gpt5`` (through ``jobs.lifecycle``, like every run), imported when an import runs:
the CLI reads these declarations whenever it starts (``cli.commands_import`` builds the
commands from them). Each returns what the CLI shows; nothing here prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from monitor.errors import UserInputError
from monitor.fmt import interval, pct
from monitor.importers.common import parse_day
from monitor.importers.spec import EventSink, Importer, ImportOptions, ImportOutcome, Reads, Shown

if TYPE_CHECKING:
    from monitor.store.db import Store


def _fetch(ids: list[str] | None, on_event: EventSink) -> None:
    """Study rows are mapped to our item ids, so the pinned Indian-BhED files must be here
    (``ids``; None: every benchmark of the manifest)."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(
        manifest,
        ids if ids is not None else [s.id for s in manifest.select(None)],
        on_event=on_event,
    )


class CasteStudyOptions(ImportOptions):
    """``import caste-bias``'s options."""

    snapshot: str = Field(
        description="Snapshot name to file the run under (e.g. gpt-4o-caste-study)."
    )
    date: str | None = Field(
        None,
        description="When the study ran (YYYY-MM-DD); required for a results folder. A "
        "history folder dates each run by its commit time.",
    )

    @field_validator("date")
    @classmethod
    def _day(cls, text: str | None) -> str | None:
        parse_day(text, "--date")
        return text


def _check_caste_study(paths: list[Path], options: CasteStudyOptions) -> None:
    """A history folder dates its runs itself; a results folder needs ``--date``."""
    from monitor.families.pairs.caste_history import is_history_folder

    (folder,) = paths
    if is_history_folder(folder):
        if options.date is not None:
            raise UserInputError(
                f"{folder} is a history folder: each run is dated by its commit time; drop --date"
            )
    elif options.date is None:
        raise UserInputError("--date is required for a results folder (YYYY-MM-DD)")


def import_caste_study(
    store: Store, paths: list[Path], options: CasteStudyOptions, on_event: EventSink
) -> ImportOutcome:
    """A results folder as one run, or a history folder as one run per committed result
    (those already stored skipped); each run's bias rates per axis."""
    from monitor.families.pairs.caste_history import import_caste_history, is_history_folder

    (folder,) = paths
    _fetch(None, on_event)
    if is_history_folder(folder):
        done = import_caste_history(store, folder, snapshot=options.snapshot, on_event=on_event)
        run_ids, skipped = done.new, done.skipped
    else:
        from monitor.families.pairs.caste_import import import_caste_bias

        assert options.date is not None  # _check_caste_study
        run_ids = import_caste_bias(store, folder, snapshot=options.snapshot, date=options.date)
        skipped = []
    with store.read() as view:  # the imported runs and their measures, typed
        runs = [view.run(rid) for rid in run_ids]
        measures = {rid: view.measures(rid) for rid in run_ids}
    shown: list[Shown] = []
    if skipped and not runs:
        shown.append(
            Shown(f"nothing new: all {len(skipped)} runs of {folder} are already in the store")
        )
    elif skipped:
        shown.append(Shown(f"{len(skipped)} runs of {folder} were already in the store (skipped)"))
    for run in runs:
        rid = run["run_id"]
        shown.append(
            Shown(f"imported run {rid} ({run['snapshot_id']}, {run['metric']}): {run['status']}")
        )
        if run["status"] != "complete":
            shown.append(Shown(f"  {run['notes']}", stderr=True, style="red"))
        for m in measures[rid]:
            if m.measure == "bias_rate":
                shown.append(
                    Shown(
                        f"  {m.axis:10} {pct(m.value)} "
                        f"{interval((m.ci_low, m.ci_high))}  {m.k}/{m.n}"
                    )
                )
    document = {
        "run_ids": run_ids,
        "skipped": skipped,
        "runs": [{"run_id": r["run_id"], "status": r["status"], "notes": r["notes"]} for r in runs],
    }
    return ImportOutcome(document, shown, any(r["status"] != "complete" for r in runs))


class CasteGpt5Options(ImportOptions):
    """``import caste-bias-gpt-5``'s options."""

    date: str = Field(description="When the study ran (YYYY-MM-DD), e.g. 2025-08-14.")
    suffix: str = Field(
        "-caste-study",
        description="Each model's runs are filed under the snapshot <model><suffix>; the "
        "default puts gpt-4o beside the forced-choice runs of gpt-4o-caste-study.",
    )
    snapshot: list[str] | None = Field(
        None, description="MODEL=SNAPSHOT: file one model's run under another snapshot."
    )

    @field_validator("date")
    @classmethod
    def _day(cls, text: str) -> str:
        parse_day(text, "--date")
        return text

    @field_validator("snapshot")
    @classmethod
    def _pairs(cls, pairs: list[str] | None) -> list[str] | None:
        for pair in pairs or []:
            model, sep, snap = pair.partition("=")
            if not sep or not model or not snap:
                raise UserInputError(f"--snapshot {pair!r}: use MODEL=SNAPSHOT")
        return pairs

    def snapshot_for(self) -> dict[str, str]:
        """``--snapshot MODEL=SNAPSHOT`` as {model: snapshot}."""
        return dict(pair.partition("=")[::2] for pair in self.snapshot or [])


def import_gpt5_follow_up(
    store: Store, paths: list[Path], options: CasteGpt5Options, on_event: EventSink
) -> ImportOutcome:
    """Every model's sampled answers as one run each (those already stored skipped); each
    run's last bias rate with its interval."""
    from monitor.families.pairs.caste_gpt5 import import_caste_gpt5

    (folder,) = paths
    _fetch(["bhed-caste"], on_event)
    done = import_caste_gpt5(
        store,
        folder,
        date=options.date,
        suffix=options.suffix,
        snapshots=options.snapshot_for(),
    )
    with store.read() as view:  # the imported runs and their measures, typed
        runs = [view.run(rid) for rid in done.new]
        stored = {rid: view.measures(rid) for rid in done.new}
    shown: list[Shown] = []
    if done.skipped and not runs:
        shown.append(
            Shown(f"nothing new: all {len(done.skipped)} runs of {folder} are already stored")
        )
    for run in runs:
        rid = run["run_id"]
        rates = [m for m in stored[rid] if m.measure == "bias_rate"]
        b = rates[-1] if rates else None
        figure = f"{b.value:.3f} ({b.k}/{b.n}) {interval((b.ci_low, b.ci_high))}" if b else "—"
        shown.append(
            Shown(
                f"imported run {rid} ({run['snapshot_revision']} → {run['snapshot_id']}, "
                f"{run['metric']}): {run['status']}; bias rate {figure}"
            )
        )
        if run["status"] != "complete":
            shown.append(Shown(f"  {run['notes']}", stderr=True, style="red"))
    document = {
        "run_ids": done.new,
        "skipped": done.skipped,
        "runs": [
            {
                "run_id": r["run_id"],
                "snapshot_id": r["snapshot_id"],
                "model": r["snapshot_revision"],
                "status": r["status"],
                "notes": r["notes"],
                "measures": [
                    {k: getattr(m, k) for k in ("axis", "measure", "k", "n", "value")}
                    for m in stored[r["run_id"]]
                ],
            }
            for r in runs
        ],
    }
    return ImportOutcome(document, shown, any(r["status"] != "complete" for r in runs))


IMPORTERS: dict[str, Importer] = {
    i.name: i
    for i in (
        Importer(
            "caste-bias",
            "Import the GPT-4o caste study's result CSVs as runs (origin 'imported').\n\n"
            "A history folder gives one run per committed result, in commit order; runs "
            "already in the store are skipped, so importing the same history twice adds "
            "nothing (exit 0). Exit 1 when a newly imported run is quarantined by the "
            "quality gate.",
            Reads(
                "folder",
                "A results folder of jeqcho/caste-bias (e.g. "
                "../shared/datasets/caste-bias/results/april), or a history folder holding "
                "history.json and one folder per committed run "
                "(../shared/datasets/caste-bias/history).",
            ),
            CasteStudyOptions,
            import_caste_study,
            _check_caste_study,
        ),
        Importer(
            "caste-bias-gpt-5",
            "Import the GPT-5 follow-up (100 samples per question, five models) as sampled "
            "runs.\n\nRuns already in the store are skipped (exit 0). Exit 1 when a newly "
            "imported run is quarantined by the quality gate.",
            Reads(
                "folder",
                "The results folder of jeqcho/caste-bias-gpt-5 (results-<model>.csv files), "
                "e.g. ../shared/datasets/caste-bias-gpt-5/results.",
            ),
            CasteGpt5Options,
            import_gpt5_follow_up,
        ),
    )
}


def importers() -> dict[str, Importer]:
    """The family's ``importers`` hook: command name -> its declaration."""
    return IMPORTERS
