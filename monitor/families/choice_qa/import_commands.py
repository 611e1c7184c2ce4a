"""The family's ``bias-monitor import <name>`` commands (its ``importers`` hook), as data.

The CLI registers these when it starts, for ``--help`` as much as for a run, so this
module imports nothing heavy: each command's work (``run``) is a ``"module:function"``
reference, imported only when the command runs (``importers.py`` loads the store, the
lifecycle and the quality gate).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_HERE = "monitor.families.choice_qa.importers"


@dataclass(frozen=True)
class ImporterSpec:
    """One ``bias-monitor import <name>`` command of this family."""

    name: str
    run_ref: str  # "module:function": (store, paths, *, date, suffix, on_event, columns)
    default_suffix: str  # each column's run is filed under the snapshot <model><suffix>
    summary: str  # the command's help
    files_help: str
    default_date: str  # the files' commit date: when the predictions were published
    columns_help: str  # what --column selects

    def run(self, *args: Any, **kwargs: Any) -> Any:
        module, _, attr = self.run_ref.partition(":")
        entry: Callable[..., Any] = getattr(importlib.import_module(module), attr)
        return entry(*args, **kwargs)


IMPORTERS: dict[str, ImporterSpec] = {
    s.name: s
    for s in (
        ImporterSpec(
            "bbq",
            f"{_HERE}:cli_import_bbq",
            "-bbq-paper",
            "Import BBQ's UnifiedQA predictions: one run per prediction column (race, arc, "
            "qonly), under unifiedqa-t5-11b-<column>-bbq-paper. Runs already stored (the "
            "same rows, whatever the date or line endings) are skipped (exit 0); exit 1 "
            "when a new run is quarantined by the quality gate.",
            "BBQ's UnifiedQA prediction files, e.g. "
            "../shared/datasets/bbq/results/UnifiedQA/preds_Age.jsonl (one or more "
            "categories).",
            "2022-03-21",
            "Not used: every prediction column is imported.",
        ),
        ImporterSpec(
            "bharatbbq",
            f"{_HERE}:cli_import_bharatbbq",
            "-bharatbbq-paper",
            "Import a BharatBBQ predictions file: one run per model column, under "
            "<model>-bharatbbq-paper, with the authors' script's numbers as reference_* "
            "measures. Runs already stored (the same rows, whatever the date or line "
            "endings) are skipped (exit 0); exit 1 when a new run is quarantined.",
            "One BharatBBQ predictions file, e.g. "
            "../shared/datasets/bharatbbq/Example_Predictions/Age_examples.csv.",
            "2025-08-14",
            "Import only these model columns (repeatable); default: llama_op, gemma_op, "
            "phi_op, sarvam_op, bloom_op (llama_op_eng_Latn only when named).",
        ),
    )
}


def importers() -> dict[str, ImporterSpec]:
    """The family's ``importers`` hook."""
    return IMPORTERS
