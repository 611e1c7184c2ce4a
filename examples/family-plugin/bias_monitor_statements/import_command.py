"""``bias-monitor import truth-answers`` as bias-monitor's ``Importer`` declaration: its
name and help, what it reads, its options as a pydantic model (one ``--option`` each) and
the work, which writes the runs (``importers.import_answers``) and returns what the CLI
shows. Nothing here prints; the store and the lifecycle are imported when it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, field_validator

from monitor.importers.common import parse_date
from monitor.importers.spec import EventSink, Importer, ImportOptions, ImportOutcome, Reads, Shown

if TYPE_CHECKING:
    from monitor.store.db import Store

DEFAULT_DATE = "2026-01-01"
DEFAULT_SUFFIX = "-answers"


class AnswerOptions(ImportOptions):
    """``import truth-answers``' options."""

    date: str = Field(
        DEFAULT_DATE, description=f"When the answers were given (YYYY-MM-DD; {DEFAULT_DATE})."
    )
    suffix: str = Field(
        DEFAULT_SUFFIX,
        description=f"Each model's run is filed under <model><suffix> (default {DEFAULT_SUFFIX}).",
    )

    @field_validator("date")
    @classmethod
    def _date(cls, text: str) -> str:
        parse_date(text)  # a one-line UserInputError naming the value
        return text


def import_answers_files(
    store: Store, paths: list[Path], options: AnswerOptions, on_event: EventSink
) -> ImportOutcome:
    """The files' answers as runs, and what to show: each new run's line and, when it is
    complete, the family's table of its measures."""
    from bias_monitor_statements.importers import import_answers, pinned
    from bias_monitor_statements.table import cli_table

    done = import_answers(store, paths, pinned(on_event), date=options.date, suffix=options.suffix)
    with store.read() as view:
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
    shown = [Shown(f"{done.snapshots[rid]}: already imported as {rid}") for rid in done.skipped]
    for run in runs:
        facts = done.facts[run.run_id]
        shown.append(
            Shown(
                f"imported run {run.run_id} ({run.snapshot_id}, {run.metric}): {run.status}; "
                f"{facts['rows']} answers, {facts['unmatched']} neither True nor False, "
                f"{facts['unanswered']} statements unanswered"
            )
        )
        if run.status != "complete":
            shown.append(Shown(f"  {run.notes}", stderr=True, style="red"))
        else:
            shown.append(
                Shown(cli_table(stored[run.run_id], f"{run.snapshot_id}  run {run.run_id}"))
            )
    return ImportOutcome(document, shown, any(r.status != "complete" for r in runs))


IMPORTER: Importer = Importer(
    "truth-answers",
    "Import answers to the truth-statements benchmark given elsewhere: one run per model "
    "of the file, under <model><suffix>. Runs already stored are skipped (exit 0); exit 1 "
    "when a new run is quarantined by the quality gate.",
    Reads(
        "files",
        'JSON Lines files, one answer per line: {"model": ..., "statement": <statement id>, '
        '"answer": "True" | "False"}.',
    ),
    AnswerOptions,
    import_answers_files,
)


def importers() -> dict[str, Importer]:
    """The family's ``bias-monitor import`` commands, by name (the contract's
    ``Importers.declared``)."""
    return {IMPORTER.name: IMPORTER}
