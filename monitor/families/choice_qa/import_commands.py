"""The family's imports, as data (its ``importers`` hook): published per-item predictions.

``import bbq`` reads BBQ's UnifiedQA prediction files and ``import bharatbbq`` a BharatBBQ
predictions file; each prediction column becomes a run. The CLI reads these declarations
whenever it starts, for ``--help`` as much as for an import, so the work (``importers.py``:
the store, the lifecycle, the quality gate) is imported only when an import runs. The work
returns what the CLI shows (each new run's line and the family's own table); nothing here
prints.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator

from monitor.importers.common import parse_day
from monitor.importers.spec import EventSink, Importer, ImportOptions, ImportOutcome, Reads, Shown

if TYPE_CHECKING:
    from monitor.families.choice_qa.importers import ImportResult, PredictionImport
    from monitor.store.db import Store

_DATE_HELP = "When the predictions were made (YYYY-MM-DD); default: the files' commit"
_SUFFIX_HELP = "Each column's run is filed under the snapshot <model><suffix>"


class PredictionOptions(ImportOptions):
    """What every predictions import takes: the date (default: the files' commit, when
    the predictions were published), the snapshot suffix, the columns to import."""

    default_date: ClassVar[str]
    default_suffix: ClassVar[str]

    date: str | None = None
    suffix: str | None = None
    column: list[str] | None = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """An import's ``--date`` and ``--suffix`` help names its own defaults (each
        subclass sets ``default_date``/``default_suffix``): declared here once, worded per
        import. The CLI reads the help from ``model_fields``."""
        super().__pydantic_init_subclass__(**kwargs)
        cls.model_fields["date"].description = f"{_DATE_HELP} ({cls.default_date})."
        cls.model_fields["suffix"].description = f"{_SUFFIX_HELP} (default {cls.default_suffix})."

    @field_validator("date")
    @classmethod
    def _day(cls, text: str | None) -> str | None:
        parse_day(text, "--date")
        return text


class BbqOptions(PredictionOptions):
    """``import bbq``'s options."""

    default_date = "2022-03-21"
    default_suffix = "-bbq-paper"

    column: list[str] | None = Field(
        None, description="Not used: every prediction column is imported."
    )


class BharatBbqOptions(PredictionOptions):
    """``import bharatbbq``'s options."""

    default_date = "2025-08-14"
    default_suffix = "-bharatbbq-paper"

    column: list[str] | None = Field(
        None,
        description="Import only these model columns (repeatable); default: llama_op, "
        "gemma_op, phi_op, sarvam_op, bloom_op (llama_op_eng_Latn only when named).",
    )


def _shown(store: Store, done: ImportResult) -> ImportOutcome:
    """What an import of predictions shows: the skipped runs, then each new run's line
    and, when it is complete, the family's table of its measures."""
    from monitor.families.choice_qa.table import cli_table

    with store.read() as view:  # the imported runs and their measures, typed
        runs = [view.run(rid) for rid in done.new]
        stored = {rid: view.measures(rid) for rid in done.new}
    document = {
        "run_ids": done.run_ids,
        "new": done.new,
        "skipped": done.skipped,
        "runs": [
            {
                "run_id": r.run_id,
                "snapshot_id": r.snapshot_id,
                "status": r.status,
                "notes": r.notes,
                "import": done.facts[r.run_id],
            }
            for r in runs
        ],
    }
    shown = [
        Shown(f"{done.snapshots[rid]}: already imported as {rid}")  # the same rows, whatever
        for rid in done.skipped  # the date or line endings
    ]
    if done.skipped and not runs:
        shown.append(Shown(f"nothing new: all {len(done.skipped)} runs are already in the store"))
    for run in runs:
        facts = done.facts[run.run_id]
        shown.append(
            Shown(
                f"imported run {run.run_id} ({run.snapshot_id}, {run.metric}): {run.status}; "
                f"{facts['rows']} rows, {facts['unmatched']} predictions naming no option"
            )
        )
        if run.status != "complete":
            shown.append(Shown(f"  {run.notes}", stderr=True, style="red"))
        else:
            shown.append(
                Shown(cli_table(stored[run.run_id], f"{run.snapshot_id}  run {run.run_id}"))
            )
    return ImportOutcome(document, shown, any(r.status != "complete" for r in runs))


def _import(
    work: Callable[[Store, list[Path], PredictionImport], ImportResult],
    store: Store,
    paths: list[Path],
    options: PredictionOptions,
    on_event: EventSink,
) -> ImportOutcome:
    """Run one predictions import's ``work`` with the user's options (the defaults of
    ``options``' class filled in) and say what it stored."""
    from monitor.families.choice_qa.importers import PredictionImport

    suffix = options.default_suffix if options.suffix is None else options.suffix
    ask = PredictionImport(options.date or options.default_date, suffix, on_event, options.column)
    return _shown(store, work(store, paths, ask))


def import_bbq(
    store: Store, paths: list[Path], options: BbqOptions, on_event: EventSink
) -> ImportOutcome:
    """BBQ's UnifiedQA prediction files: one run per prediction column."""
    from monitor.families.choice_qa.importers import import_bbq_files

    return _import(import_bbq_files, store, paths, options, on_event)


def import_bharatbbq(
    store: Store, paths: list[Path], options: BharatBbqOptions, on_event: EventSink
) -> ImportOutcome:
    """One BharatBBQ predictions file: one run per model column."""
    from monitor.families.choice_qa.importers import import_bharatbbq_file

    return _import(import_bharatbbq_file, store, paths, options, on_event)


IMPORTERS: dict[str, Importer] = {
    i.name: i
    for i in (
        Importer(
            "bbq",
            "Import BBQ's UnifiedQA predictions: one run per prediction column (race, arc, "
            "qonly), under unifiedqa-t5-11b-<column>-bbq-paper. Runs already stored (the "
            "same rows, whatever the date or line endings) are skipped (exit 0); exit 1 "
            "when a new run is quarantined by the quality gate.",
            Reads(
                "files",
                "BBQ's UnifiedQA prediction files, e.g. "
                "../shared/datasets/bbq/results/UnifiedQA/preds_Age.jsonl (one or more "
                "categories).",
            ),
            BbqOptions,
            import_bbq,
        ),
        Importer(
            "bharatbbq",
            "Import a BharatBBQ predictions file: one run per model column, under "
            "<model>-bharatbbq-paper, with the authors' script's numbers as reference_* "
            "measures. Runs already stored (the same rows, whatever the date or line "
            "endings) are skipped (exit 0); exit 1 when a new run is quarantined.",
            Reads(
                "files",
                "One BharatBBQ predictions file, e.g. "
                "../shared/datasets/bharatbbq/Example_Predictions/Age_examples.csv.",
            ),
            BharatBbqOptions,
            import_bharatbbq,
        ),
    )
}


def importers() -> dict[str, Importer]:
    """The family's ``importers`` hook: command name -> its declaration."""
    return IMPORTERS
