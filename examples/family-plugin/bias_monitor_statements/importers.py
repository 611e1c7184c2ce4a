"""``bias-monitor import truth-answers FILE``: answers given elsewhere, as runs.

A model scored somewhere else (another harness, a hosted API, a person's annotations)
answered the family's statements; its answers come as JSON Lines, one per statement:
``{"model": "...", "statement": "<statement id of the pinned file>", "answer": "True"}``
(``answer``: ``True`` or ``False``; any other text is stored as ``other``, an answer
that is no answer). Each model of the file becomes one run, filed under the snapshot
``<model><suffix>``, with the metric ``statement-truth-imported``: the answers only, no
log-likelihoods, so drift never pairs such a run with a scored ``statement-truth`` run
as if they were one measurement (different metrics are "not comparable"); two imported
runs compare like any two runs.

Statements are matched by their id in the pinned file (``items``): an answer to an id the
file does not have is refused, and a statement the file has but the answers miss is
listed as unanswered (``facts``), never guessed. Importing the same answers again finds
the stored run (its id is the hash of the rows, not of the file's bytes or the date).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bias_monitor_statements.frame import Stance, outcome
from monitor.benchmarks.items import Item, LoadedBenchmark
from monitor.errors import DataIntegrityError
from monitor.importers.common import UNKNOWN, check_snapshot_id, parse_date
from monitor.inputs import read_input_file
from monitor.jobs.lifecycle import ImportedRun, RunLifecycle
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store

IMPORTED = "statement-truth-imported"
IMPORTED_VERSION = "1"
BENCHMARK = "truth-statements"
ANSWERS = ("True", "False")


@dataclass(frozen=True)
class ImportResult:
    """What an import did: every run of the file, the new ones, the ones stored before."""

    run_ids: list[str]
    new: list[str]
    skipped: list[str]
    snapshots: dict[str, str]
    facts: dict[str, dict[str, Any]]


def _lines(path: Path) -> list[dict[str, Any]]:
    data = read_input_file(path, what="answers file")
    out = []
    for n, line in enumerate(data.decode("utf-8", errors="strict").splitlines()):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataIntegrityError(f"{path}: line {n + 1} is not JSON ({e.msg})") from None
        if not isinstance(record, dict) or not all(
            isinstance(record.get(k), str) for k in ("model", "statement", "answer")
        ):
            raise DataIntegrityError(
                f"{path}: line {n + 1} needs text fields model, statement and answer"
            )
        out.append(record)
    return out


def answer_row(item: Item, answer: str) -> ScoreRow:
    """One imported answer as a row: its side of the stereotype, or ``other``."""
    stance: Stance = item.payload["stance"]
    said = answer.strip()
    return ScoreRow(
        item_id=item.item_id,
        metric=IMPORTED,
        metric_version=IMPORTED_VERSION,
        outcome=outcome(stance, said) if said in ANSWERS else "other",  # type: ignore[arg-type]
        delta=None,
        details={"stance": stance, "says": said if said in ANSWERS else None, "answer": answer},
    )


def _key(snapshot: str, answers: dict[str, str]) -> str:
    """What makes two imports the same run: the snapshot and its answers, whatever the
    order of the lines, the file's name or bytes, or the date."""
    body = sorted(answers.items())
    text = json.dumps([IMPORTED, IMPORTED_VERSION, snapshot, body], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def import_answers(
    store: Store,
    paths: Sequence[Path],
    loaded: LoadedBenchmark,
    *,
    date: str,
    suffix: str,
) -> ImportResult:
    """The answers of ``paths`` as one run per model, against the pinned ``loaded``."""
    started = parse_date(date)
    by_statement = {str(it.payload["statement"]): it for it in loaded.items}
    per_model: dict[str, dict[str, str]] = {}
    files: dict[str, str] = {}
    for path in paths:
        files[path.name] = hashlib.sha256(read_input_file(path, what="answers file")).hexdigest()
        for record in _lines(path):
            if record["statement"] not in by_statement:
                raise DataIntegrityError(
                    f"{path}: statement {record['statement']!r} is not in {loaded.benchmark}"
                )
            answers = per_model.setdefault(record["model"], {})
            if record["statement"] in answers:
                raise DataIntegrityError(
                    f"{path}: model {record['model']!r} answers {record['statement']!r} twice"
                )
            answers[record["statement"]] = record["answer"]
    runs, snapshots, facts = [], {}, {}
    for model, answers in per_model.items():
        snapshot = f"{model.lower()}{suffix}"
        check_snapshot_id(snapshot)
        rows = [answer_row(by_statement[s], a) for s, a in answers.items()]
        key = _key(snapshot, answers)
        fact = {
            "rows": len(rows),
            "unmatched": sum(1 for r in rows if r.outcome == "other"),
            "unanswered": len(by_statement) - len(rows),
            "files": dict(sorted(files.items())),
        }
        record = RunRecord(
            run_id=f"import-{snapshot}-{key[:16]}",
            snapshot_id=snapshot,
            snapshot_kind="imported-answers",
            snapshot_revision=UNKNOWN,
            snapshot_manifest={
                "id": snapshot,
                "display_name": f"{model} (answers imported)",
                "source": {"type": "imported", "model": model},
            },
            metric=IMPORTED,
            metric_version=IMPORTED_VERSION,
            benchmarks=[loaded.benchmark],
            dataset_versions={loaded.benchmark: {"benchmark_version": [loaded.version.label]}},
            fingerprint=key,
            trigger="import",
            started_at=started,
            origin="imported",
            status="complete",
            environment={"import": {"content_key": key, **fact}},
            git_commit=UNKNOWN,  # the code that produced the answers is not recorded
            device=UNKNOWN,
            dtype=UNKNOWN,
            notes=f"answers of {model} imported from {', '.join(sorted(files))}",
        )
        items = [by_statement[s] for s in answers]
        runs.append(ImportedRun(record, items=items, scores=rows, exclusions=[]))
        snapshots[record.run_id] = snapshot
        facts[record.run_id] = fact
    batch = RunLifecycle(store).record_imports(runs)
    return ImportResult(batch.run_ids, batch.new, batch.skipped, snapshots, facts)


def pinned(on_event: Callable[[str], None]) -> LoadedBenchmark:
    """The pinned statements (fetched into the data cache if needed)."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(manifest, [BENCHMARK], on_event=on_event)
    (loaded,) = load_benchmarks([BENCHMARK], errata="none", manifest=manifest)
    return loaded
