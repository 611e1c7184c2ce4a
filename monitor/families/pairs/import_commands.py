"""The pair family's `bias-monitor import` commands: the caste study's published results.

``import caste-bias`` reads a results folder of jeqcho/caste-bias (or a history folder:
one run per committed result, in commit order) and ``import caste-bias-gpt-5`` the GPT-5
follow-up's sampled answers; the work is ``caste_import``, ``caste_history`` and
``caste_gpt5`` (through ``jobs.lifecycle``, like every run). The CLI registers these
through the family's ``import_commands`` hook (``cli.commands_import``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.commands_db import DbOpt, FmtOpt, _store, parse_day
from monitor.cli.output import Format, err, out, print_json
from monitor.errors import UserInputError
from monitor.fmt import interval, pct


def import_caste_bias_cmd(
    folder: Annotated[
        Path,
        typer.Argument(
            help="A results folder of jeqcho/caste-bias (e.g. "
            "../shared/datasets/caste-bias/results/april), or a history folder holding "
            "history.json and one folder per committed run "
            "(../shared/datasets/caste-bias/history)."
        ),
    ],
    snapshot: Annotated[
        str,
        typer.Option(
            "--snapshot", help="Snapshot name to file the run under (e.g. gpt-4o-caste-study)."
        ),
    ],
    on_date: Annotated[
        str | None,
        typer.Option(
            "--date",
            help="When the study ran (YYYY-MM-DD); required for a results folder. A history "
            "folder dates each run by its commit time.",
        ),
    ] = None,
    db: DbOpt = None,
    fmt: FmtOpt = Format.table,
) -> None:
    """Import the GPT-4o caste study's result CSVs as runs (origin 'imported').

    A history folder gives one run per committed result, in commit order; runs already
    in the store are skipped, so importing the same history twice adds nothing (exit 0).
    Exit 1 when a newly imported run is quarantined by the quality gate.
    """
    from monitor.families.pairs.caste_history import is_history_folder

    if not folder.is_dir():
        raise UserInputError(f"{folder}: not a folder")
    history = is_history_folder(folder)
    if history and on_date is not None:
        raise UserInputError(
            f"{folder} is a history folder: each run is dated by its commit time; drop --date"
        )
    if not history:
        if on_date is None:
            raise UserInputError("--date is required for a results folder (YYYY-MM-DD)")
        parse_day(on_date, "--date")
    # Study rows are mapped to our item ids, so the pinned Indian-BhED files must be here.
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(manifest, [s.id for s in manifest.select(None)], on_event=lambda m: err.print(m))
    store = _store(db, must_exist=False)
    if history:
        from monitor.families.pairs.caste_history import import_caste_history

        done = import_caste_history(
            store, folder, snapshot=snapshot, on_event=lambda m: err.print(m, markup=False)
        )
        run_ids, skipped = done.new, done.skipped
    else:
        from monitor.families.pairs.caste_import import import_caste_bias

        assert on_date is not None
        run_ids, skipped = import_caste_bias(store, folder, snapshot=snapshot, date=on_date), []
    with store.read() as view:  # the imported runs and their measures, typed
        runs = [view.run(rid) for rid in run_ids]
        measures = {rid: view.measures(rid) for rid in run_ids}
    if fmt is Format.json:
        print_json(
            {
                "run_ids": run_ids,
                "skipped": skipped,
                "runs": [
                    {"run_id": r["run_id"], "status": r["status"], "notes": r["notes"]}
                    for r in runs
                ],
            }
        )
    else:
        if skipped and not runs:
            out.print(f"nothing new: all {len(skipped)} runs of {folder} are already in the store")
        elif skipped:
            out.print(f"{len(skipped)} runs of {folder} were already in the store (skipped)")
        for run in runs:
            rid = run["run_id"]
            out.print(
                f"imported run {rid} ({run['snapshot_id']}, {run['metric']}): {run['status']}"
            )
            if run["status"] != "complete":
                err.print(f"  {run['notes']}", style="red")
            for m in measures[rid]:
                if m.measure == "bias_rate":
                    out.print(
                        f"  {m.axis:10} {pct(m.value)} "
                        f"{interval((m.ci_low, m.ci_high))}  {m.k}/{m.n}"
                    )
    if any(r["status"] != "complete" for r in runs):
        raise typer.Exit(1)  # a quarantined import, like a quarantined run


def import_caste_gpt5_cmd(
    folder: Annotated[
        Path,
        typer.Argument(
            help="The results folder of jeqcho/caste-bias-gpt-5 (results-<model>.csv files), "
            "e.g. ../shared/datasets/caste-bias-gpt-5/results."
        ),
    ],
    on_date: Annotated[
        str, typer.Option("--date", help="When the study ran (YYYY-MM-DD), e.g. 2025-08-14.")
    ],
    suffix: Annotated[
        str,
        typer.Option(
            "--suffix",
            help="Each model's runs are filed under the snapshot <model><suffix>; the default "
            "puts gpt-4o beside the forced-choice runs of gpt-4o-caste-study.",
        ),
    ] = "-caste-study",
    snapshot_for: Annotated[
        list[str] | None,
        typer.Option(
            "--snapshot", help="MODEL=SNAPSHOT: file one model's run under another snapshot."
        ),
    ] = None,
    db: DbOpt = None,
    fmt: FmtOpt = Format.table,
) -> None:
    """Import the GPT-5 follow-up (100 samples per question, five models) as sampled runs.

    Runs already in the store are skipped (exit 0). Exit 1 when a newly imported run is
    quarantined by the quality gate.
    """
    from monitor.families.pairs.caste_gpt5 import import_caste_gpt5

    if not folder.is_dir():
        raise UserInputError(f"{folder}: not a folder")
    parse_day(on_date, "--date")
    mapping: dict[str, str] = {}
    for pair in snapshot_for or []:
        model, sep, snap = pair.partition("=")
        if not sep or not model or not snap:
            raise UserInputError(f"--snapshot {pair!r}: use MODEL=SNAPSHOT")
        mapping[model] = snap
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(manifest, ["bhed-caste"], on_event=lambda m: err.print(m))
    store = _store(db, must_exist=False)
    done = import_caste_gpt5(store, folder, date=on_date, suffix=suffix, snapshots=mapping)
    with store.read() as view:  # the imported runs and their measures, typed
        runs = [view.run(rid) for rid in done.new]
        stored = {rid: view.measures(rid) for rid in done.new}
    if fmt is Format.json:
        print_json(
            {
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
        )
    else:
        if done.skipped and not runs:
            out.print(f"nothing new: all {len(done.skipped)} runs of {folder} are already stored")
        for run in runs:
            rid = run["run_id"]
            rates = [m for m in stored[rid] if m.measure == "bias_rate"]
            b = rates[-1] if rates else None
            figure = f"{b.value:.3f} ({b.k}/{b.n}) {interval((b.ci_low, b.ci_high))}" if b else "—"
            out.print(
                f"imported run {rid} ({run['snapshot_revision']} → {run['snapshot_id']}, "
                f"{run['metric']}): {run['status']}; bias rate {figure}",
                markup=False,
            )
            if run["status"] != "complete":
                err.print(f"  {run['notes']}", style="red", markup=False)
    if any(r["status"] != "complete" for r in runs):
        raise typer.Exit(1)


def import_commands() -> dict[str, object]:
    """The family's ``import_commands`` hook: command name -> its typer function."""
    return {"caste-bias": import_caste_bias_cmd, "caste-bias-gpt-5": import_caste_gpt5_cmd}
