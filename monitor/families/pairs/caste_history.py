"""Import the GPT-4o caste study's whole history: every committed caste result as one run.

A history folder holds ``history.json`` and one folder per committed result (each with a
``Caste_results.csv`` in the layout ``monitor.families.pairs.caste_import`` reads). For each run
``history.json`` records the study's commit, its time, the file's source path and
sha256, and what the study's code at that commit asked for: model, API, seed, prompt,
option order and parameters. Those facts become the run's provenance in the same shape
as the single-folder import's known runs, so runs of one configuration, whichever way
they were imported, share a configuration key (``monitor.readmodel.configuration``) and form
one repeat group.

Each run is dated by its commit time and judged by the quality gate like any run, so a
run that was a measurement failure (the two July 15 runs that read log-probabilities from
the wrong field) is quarantined with its reason. Re-importing a history adds nothing: a
run's id is derived from the snapshot, the commit and the file's sha256, and runs already
in the store are skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from monitor import __version__
from monitor.errors import DataIntegrityError
from monitor.families.pairs.caste_import import (
    FILES,
    OPTION_ORDER,
    OPTION_TOKENS,
    STUDY_REPO,
    ItemLookup,
    ParsedStudy,
    loader_lookup,
    parse_study_files,
    sha256_file,
    study_run_record,
)
from monitor.families.pairs.caste_study import OPINIONATED_RULE
from monitor.importers.common import UNKNOWN, check_snapshot_id
from monitor.jobs.lifecycle import ImportedRun, RunLifecycle
from monitor.records import RunRecord
from monitor.store.db import Store

HISTORY_FILE = "history.json"
REQUIRED_KEYS = (
    "folder",
    "commit",
    "committed_at",
    "source_path",
    "sha256",
    "model_requested",
    "api",
    "seed",
    "prompt",
)
_TOKENS = re.compile(r"^\s*(max_completion_tokens|max_output_tokens|max_tokens)\s*=\s*(\d+)\s*$")
_SEED = re.compile(r"^\s*seed\s*=\s*(\d+)\s*$")


def is_history_folder(folder: Path) -> bool:
    """A history folder is recognised by its ``history.json``."""
    return (folder / HISTORY_FILE).is_file()


@dataclass(frozen=True)
class HistoryEntry:
    """One run of ``history.json``, checked: its folder, files and recorded facts."""

    order: int
    folder: Path
    facts: dict[str, Any]
    started_at: datetime
    present: dict[str, Path]  # axis → result file
    shas: dict[str, str]  # file name → sha256


@dataclass(frozen=True)
class HistoryImport:
    """What an import did: every run of the history, and whether it was new."""

    run_ids: list[str]
    new: list[str]
    skipped: list[str]


def _max_tokens(text: Any) -> Any:
    """``max_completion_tokens=10`` → 10, the shape the single-folder import records."""
    if isinstance(text, int):
        return text
    m = _TOKENS.match(str(text))
    return int(m.group(2)) if m else text


def _seed(text: Any) -> Any:
    """``seed=1`` → 1; "none" → "not sent" (the study's code accepted a seed it never sent)."""
    if isinstance(text, int):
        return text
    if str(text).strip().lower() in ("none", "not sent", ""):
        return "not sent"
    m = _SEED.match(str(text))
    return int(m.group(1)) if m else text


def _read_history(folder: Path) -> list[HistoryEntry]:
    """Parse and check ``history.json`` and every file it names, before anything is written."""
    path = folder / HISTORY_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataIntegrityError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno})") from None
    except UnicodeDecodeError as exc:
        raise DataIntegrityError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise DataIntegrityError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or not runs:
        raise DataIntegrityError(f"{path}: no 'runs' list")
    entries: list[HistoryEntry] = []
    for n, facts in enumerate(runs):
        where = f"{path} run {n}"
        if not isinstance(facts, dict):
            raise DataIntegrityError(f"{where}: not an object")
        missing = [k for k in REQUIRED_KEYS if k not in facts]
        if missing:
            raise DataIntegrityError(f"{where}: missing {', '.join(missing)}")
        run_folder = (folder / str(facts["folder"])).resolve()
        if run_folder.parent != folder.resolve() or not run_folder.is_dir():
            raise DataIntegrityError(f"{where}: folder {facts['folder']!r} is not in {folder}")
        present = {
            axis: run_folder / name for axis, name in FILES.items() if (run_folder / name).is_file()
        }
        if not present:
            raise DataIntegrityError(f"{where}: {run_folder.name} holds no study result file")
        shas = {p.name: sha256_file(p) for p in present.values()}
        if facts["sha256"] not in shas.values():
            raise DataIntegrityError(
                f"{where}: no file in {run_folder.name} has the recorded sha256 "
                f"{str(facts['sha256'])[:12]}…"
            )
        try:
            started = datetime.fromisoformat(str(facts["committed_at"]))
        except ValueError:
            raise DataIntegrityError(
                f"{where}: committed_at {facts['committed_at']!r} is not an ISO time"
            ) from None
        if started.tzinfo is None:
            started = started.replace(tzinfo=UTC)
        order = facts.get("order", n + 1)
        if isinstance(order, bool) or not isinstance(order, int) or not 0 <= order < 10**6:
            raise DataIntegrityError(f"{where}: order {order!r} is not a whole number 0-999999")
        entries.append(HistoryEntry(order, run_folder, facts, started, present, shas))
    folders = [e.folder for e in entries]
    if len(set(folders)) != len(folders):
        raise DataIntegrityError(f"{path}: a folder is listed twice")
    return sorted(entries, key=lambda e: (e.started_at, e.order))


def _environment(entry: HistoryEntry) -> dict[str, Any]:
    """The run's provenance in the shape of the single-folder import's known runs."""
    f = entry.facts
    api = {
        "provider": "openai",
        "endpoint": f["api"],
        "model_requested": f["model_requested"],
        "max_tokens": _max_tokens(f.get("max_tokens", UNKNOWN)),
        "seed": _seed(f["seed"]),
        "temperature": f.get("temperature", UNKNOWN),
        "top_logprobs": f.get("top_logprobs", UNKNOWN),
        "reported_model": UNKNOWN,
        "system_fingerprint": UNKNOWN,
    }
    return {
        "api": api,
        "prompt_template": f["prompt"],
        "option_order": OPTION_ORDER if "random" in str(f.get("option_order", "")) else UNKNOWN,
        "option_tokens": OPTION_TOKENS,
        "opinionated_rule": OPINIONATED_RULE,
        "import": {
            "source_repo": STUDY_REPO,
            "source_commit": f["commit"],
            "source_path": f["source_path"],
            "sha256": f["sha256"],
            "committed_at": f["committed_at"],
            "history_folder": entry.folder.name,
            "history_order": entry.order,
            "history_note": f.get("note", ""),
            "evidence": "history.json: model, API, seed and prompt as read from the study's "
            "main.py at this commit",
            "files": entry.shas,
            "importer": f"monitor.families.pairs.caste_history (bias-monitor {__version__})",
        },
    }


def history_run_id(snapshot: str, entry: HistoryEntry) -> str:
    """Stable: the same history entry always gets the same id (so re-imports are skipped).

    The order number sits after the time, so runs committed in the same second (the
    study's seeded runs) sort in the order history.json gives.
    """
    digest = hashlib.sha256(
        json.dumps(
            [snapshot, entry.facts["commit"], entry.facts["source_path"], entry.facts["sha256"]]
        ).encode()
    ).hexdigest()
    when = entry.started_at.astimezone(UTC)
    return f"import-{snapshot}-{when:%Y%m%dT%H%M%S}-{entry.order:02d}-{digest[:8]}"


def _record(snapshot: str, entry: HistoryEntry, parsed: ParsedStudy) -> RunRecord:
    commit = str(entry.facts["commit"])
    return study_run_record(
        run_id=history_run_id(snapshot, entry),
        snapshot=snapshot,
        model=str(entry.facts["model_requested"]),
        axes=entry.present,
        parsed=parsed,
        file_shas=list(entry.shas.values()),
        started=entry.started_at,
        environment=_environment(entry),
        commit=commit,
        notes=f"imported from {STUDY_REPO}@{commit[:12]} {entry.facts['source_path']} "
        f"(history {entry.folder.name}/)",
    )


def import_caste_history(
    db: Store | Path | str,
    folder: Path | str,
    *,
    snapshot: str,
    items_by_key: ItemLookup | None = None,
    data_dir: Path | None = None,
    on_event=lambda _msg: None,
) -> HistoryImport:
    """Import every run of a history folder, oldest first; runs already stored are skipped.

    Everything is read and checked (history.json, every file's sha256, every row) before
    the first run is written, so a damaged history writes nothing. Each run is then
    written and gated on its own, in commit order, so the gate of a later run sees the
    earlier ones as the snapshot's history.
    """
    check_snapshot_id(snapshot)
    folder = Path(folder)
    entries = _read_history(folder)
    axes = sorted({a for e in entries for a in e.present})
    lookup = items_by_key if items_by_key is not None else loader_lookup(axes, data_dir)
    planned = [
        (
            entry,
            parse_study_files(
                entry.present,
                entry.shas,
                lookup,
                source=f"{STUDY_REPO}@{str(entry.facts['commit'])[:12]}",
            ),
        )
        for entry in entries
    ]
    store = db if isinstance(db, Store) else Store.open(db)
    batch = RunLifecycle(store).record_imports(
        [
            ImportedRun(
                _record(snapshot, entry, parsed),
                items=list(parsed.items.values()),
                scores=parsed.scores,
                exclusions=parsed.exclusions,
            )
            for entry, parsed in planned
        ],
        on_imported=lambda i, run_id: on_event(f"imported {planned[i][0].folder.name} as {run_id}"),
    )
    return HistoryImport(batch.run_ids, batch.new, batch.skipped)
