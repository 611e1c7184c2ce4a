"""Published per-item predictions of BBQ and BharatBBQ as runs (metric ``mc-imported``).

``bias-monitor import bbq FILE...``: BBQ's UnifiedQA prediction files
(``results/UnifiedQA/preds_<Category>.jsonl`` of nyu-mll/BBQ): each record is a BBQ data
record plus three prediction columns, ``unifiedqa-t5-11b_pred_race``, ``_pred_arc`` and
``_pred_qonly`` (the RACE- and ARC-style input formats and the question-only baseline).
Each column becomes one run over every file given, filed under the snapshot
``unifiedqa-t5-11b-<race|arc|qonly><suffix>`` (default suffix ``-bbq-paper``). A
prediction is text; it is matched to the option whose text it equals after normalising
case, punctuation and whitespace (and a leading article); a prediction that matches no
option or several is outcome ``other`` with no choice, counted in the run's
``environment["import"]["unmatched"]``. Items are the pinned BBQ benchmark's items,
matched by ``example_id`` (the file's data fields must equal the pinned record, except
the stereotyped-group metadata, which the pinned file corrects for 36 Physical_appearance
records: the pinned target is used, and the count recorded). The
question-only baseline (``qonly``) saw no context, so its run holds the ambiguous items
only; the disambiguated ones are exclusions (reason ``question_only_baseline``), as the
BBQ authors' analysis script drops them.

``bias-monitor import bharatbbq FILE``: the BharatBBQ authors' example predictions
(``Metrics/Example_Predictions/<Category>_examples.csv``): option indices 1-3 per model
in ``llama_op``, ``gemma_op``, ``phi_op``, ``sarvam_op``, ``bloom_op``, one run each
under ``<model><suffix>`` (default ``-bharatbbq-paper``). ``llama_op_eng_Latn`` (a second
Llama column, named by a language code; the repository does not say how it differs) is
not imported unless named with ``columns``. This file is not row-parallel to the pinned
Examples file: its rows are in another order, its ids start at 0, its options are
shuffled differently with other unknown strings, and in two Age templates (Qid 20 and
24, 960 rows) its option texts occur in no Examples row. Its rows therefore become items
of their own (benchmark ``bharatbbq-<category>``, version = this file's sha256), so the
authors' script can be reproduced over every row (``reference_*`` measures), and each row
is matched to the pinned Examples row with the same template, condition, polarity,
context, question, options (up to the unknown string), correct and target option text:
the matched Examples ``id`` is kept in the row's ``details["examples_source_id"]``, and
the counts in ``environment["import"]["examples_match"]``.

Re-importing adds nothing: a run's id and fingerprint are its *content key*
(:func:`content_key`), a sha256 over the snapshot, the column, and every row read — each
item's content (its benchmark and payload, not its id, which for BharatBBQ depends on the
file's bytes) with the prediction and the option it picked — plus the exclusions, sorted.
File names, bytes (line endings, a byte-order mark, row order) and ``--date`` are not in
it, so a CRLF copy of a file, or the same file with another date, is the run already
stored: it is skipped ("already imported as RUN"). Another ``--suffix`` or ``--column``
is another series, and another prediction in any row another run.
"""

from __future__ import annotations

import hashlib
import json
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from monitor import __version__
from monitor.benchmarks.items import (
    BenchmarkVersion,
    Exclusion,
    Item,
    LoadedBenchmark,
)
from monitor.benchmarks.manifest import BenchmarkManifest
from monitor.errors import DataIntegrityError, UserInputError
from monitor.families.choice_qa.items import (
    PREDICTIONS_COLUMNS,
    _index,
    bbq_record,
    bharatbbq_record,
    csv_table,
    question_id,
    question_item,
)
from monitor.families.choice_qa.metrics import MC_IMPORTED, MC_IMPORTED_VERSION
from monitor.importers.common import UNKNOWN, check_snapshot_id, parse_date
from monitor.inputs import read_input_file
from monitor.jobs.lifecycle import ImportedRun, RunLifecycle
from monitor.records import Outcome, RunRecord, ScoreRow
from monitor.store.db import Store

BBQ_REPO, BBQ_COMMIT = "nyu-mll/BBQ", "bea11bd97d79217245b5871acd247b9d6eb24598"
BHARAT_REPO, BHARAT_COMMIT = "sahoonihar/BharatBBQ", "d4d193b28ab063bb72cf474565b63402af9ecfcd"
BBQ_MODEL = "unifiedqa-t5-11b"
BBQ_COLUMNS = {f"{BBQ_MODEL}_pred_{v}": v for v in ("race", "arc", "qonly")}
BHARAT_COLUMNS = ("llama_op", "gemma_op", "phi_op", "sarvam_op", "bloom_op")
BHARAT_EXTRA = ("llama_op_eng_Latn",)
BHARAT_REQUIRED = (
    "id",
    "Qid",
    "Question_Polarity",
    "Context_Condition",
    "Category",
    "Proper_Noun",
    "Context",
    "Question",
    "Ans1",
    "Ans2",
    "Ans3",
    "Label",
    "Target",
)
_ARTICLE = re.compile(r"^(the|a|an)\s+")


@dataclass
class PredictionRun:
    """One prediction column of the given file(s): the run it becomes."""

    column: str
    snapshot: str
    model: str
    items: dict[str, Item]
    scores: list[ScoreRow]
    benchmarks: list[str]
    versions: dict[str, set[str]]
    files: dict[str, str]  # file name -> sha256
    facts: dict[str, Any] = field(default_factory=dict)
    exclusions: list[Exclusion] = field(default_factory=list)


@dataclass(frozen=True)
class ImportResult:
    run_ids: list[str]
    new: list[str]
    skipped: list[str]
    snapshots: dict[str, str]  # run id -> snapshot
    facts: dict[str, dict[str, Any]]  # run id -> what the import counted


def normalise_answer(text: str) -> str:
    """Case, punctuation, whitespace and a leading article do not distinguish answers."""
    lowered = text.lower().translate(str.maketrans("", "", string.punctuation + "’‘"))
    return _ARTICLE.sub("", " ".join(lowered.split()))


def match_option(prediction: str, options: Sequence[str]) -> int | None:
    """The one option a predicted text names, or None (no option, or several).

    A prediction ending in "pantsu" is read as "pantsuit": UnifiedQA cuts that word off,
    and the BBQ authors' analysis script (BBQ_calculate_bias_score.R) repairs it so."""
    if prediction.endswith("pantsu"):
        prediction += "it"
    wanted = normalise_answer(prediction)
    hits = [i for i, o in enumerate(options) if normalise_answer(o) == wanted]
    return hits[0] if len(hits) == 1 else None


def outcome_of(payload: Mapping[str, Any], choice: int | None) -> Outcome:
    """The role of the picked option (``other`` when no option was picked)."""
    if choice is None:
        return "other"
    if choice == payload["unknown"]:
        return "unknown"
    if payload["target"] is None:
        return "other"
    return "target" if choice == payload["target"] else "non-target"


def _row(item: Item, choice: int | None, details: dict[str, Any]) -> ScoreRow:
    return ScoreRow(
        item_id=item.item_id,
        metric=MC_IMPORTED,
        metric_version=MC_IMPORTED_VERSION,
        outcome=outcome_of(item.payload, choice),
        delta=None,
        details={
            "choice": choice,
            "correct": None if choice is None else choice == item.payload["label"],
            **details,
        },
    )


# ---------------------------------------------------------------- BBQ (UnifiedQA)


def _bbq_benchmark(category: str) -> str:
    return "bbq-" + category.lower().replace("_", "-")


def read_bbq(
    paths: Sequence[Path], benchmarks: Mapping[str, LoadedBenchmark], suffix: str
) -> list[PredictionRun]:
    """Every prediction column of the BBQ files as one run each, items matched by id."""
    runs = {
        column: PredictionRun(
            column, f"{BBQ_MODEL}-{variant}{suffix}", BBQ_MODEL, {}, [], [], {}, {}
        )
        for column, variant in BBQ_COLUMNS.items()
    }
    unmatched = dict.fromkeys(BBQ_COLUMNS, 0)
    metadata_differs = 0
    first: dict[str, str] = {}  # item id -> where it was read first
    for path in paths:
        data = _read(path)
        sha = hashlib.sha256(data).hexdigest()
        records = _jsonl(data, path)
        if not records:
            raise DataIntegrityError(f"{path}: no records")
        category = str(records[0].get("category", ""))
        benchmark = _bbq_benchmark(category)
        if benchmark not in benchmarks:
            raise UserInputError(f"{path}: category {category!r} is not a BBQ benchmark here")
        loaded = benchmarks[benchmark]
        by_source = {i.payload["source_id"]: i for i in loaded.items}
        for n, record in enumerate(records):
            where = f"{path} row {n}"
            missing = [c for c in BBQ_COLUMNS if c not in record]
            if missing:
                raise DataIntegrityError(f"{where}: missing column(s) {', '.join(missing)}")
            fields = bbq_record(record, n, name=str(path))
            item = by_source.get(fields["source_id"])
            # The target comes from answer_info, which the pinned data file corrects for
            # 36 Physical_appearance records (the predictions file has the older metadata,
            # with both group options labelled alike): the pinned record's target is used.
            if item is None or any(
                item.payload[k] != v for k, v in fields.items() if k not in ("source_row", "target")
            ):
                raise DataIntegrityError(
                    f"{where}: example_id {fields['source_id']} is not the pinned "
                    f"{benchmark} record (the predictions file does not belong to it)"
                )
            if (seen := first.setdefault(item.item_id, where)) != where:
                raise DataIntegrityError(
                    f"{where}: example_id {fields['source_id']} repeats {seen}: the same "
                    "question twice would be scored twice"
                )
            metadata_differs += item.payload["target"] != fields["target"]
            for column, run in runs.items():
                if column.endswith("_qonly") and item.payload["context_condition"] == "disambig":
                    # The question-only baseline saw no context: there is no disambiguated
                    # version of its input (the BBQ authors drop these rows too).
                    run.exclusions.append(
                        Exclusion(
                            benchmark,
                            item.benchmark_version,
                            item.source_row,
                            "question_only_baseline",
                            f"{path.name} row {n}: disambiguated item, question-only input",
                        )
                    )
                    continue
                prediction = record[column]
                choice = match_option(str(prediction), item.payload["options"])
                unmatched[column] += choice is None
                run.items[item.item_id] = item
                run.scores.append(
                    _row(item, choice, {"prediction": str(prediction), "source_file": path.name})
                )
        for run in runs.values():
            run.files[path.name] = sha
            if benchmark not in run.benchmarks:
                run.benchmarks.append(benchmark)
            run.versions.setdefault(benchmark, set()).add(loaded.version.label)
    for column, run in runs.items():
        run.facts = {
            "rows": len(run.scores),
            "unmatched": unmatched[column],
            "excluded": len(run.exclusions),
            "target_from_pinned_metadata": metadata_differs,
        }
    return list(runs.values())


def import_bbq(
    db: Store | Path | str,
    paths: Sequence[Path],
    benchmarks: Mapping[str, LoadedBenchmark],
    *,
    date: str,
    suffix: str = "-bbq-paper",
) -> ImportResult:
    """Import BBQ's UnifiedQA prediction files: one run per prediction column."""
    runs = read_bbq(paths, benchmarks, suffix)
    return _store_runs(db, runs, parse_date(date), source=(BBQ_REPO, BBQ_COMMIT), how=_BBQ_HOW)


_BBQ_HOW = {
    "prediction": "UnifiedQA (T5-11B) answer text per item, as published in BBQ's "
    "results/UnifiedQA; matched to an option by normalised text",
    "formats": "race: RACE-style input (context, question, options); arc: ARC-style input; "
    "qonly: the question and options without the context (baseline)",
}


# ---------------------------------------------------------------- BharatBBQ


def _bharat_item(
    row: Mapping[str, str], n: int, version: BenchmarkVersion, benchmark: str, where: str
) -> Item:
    record = bharatbbq_record(
        row, n, name=where, columns=PREDICTIONS_COLUMNS, kind="BharatBBQ predictions row"
    )
    return question_item(
        record,
        version,
        "en",
        benchmark=benchmark,
        axis=benchmark.removeprefix("bharatbbq-"),
        region="india",
    )


def _match_key(p: Mapping[str, Any]) -> tuple[Any, ...]:
    options = ["<unknown>" if i == p["unknown"] else o.strip() for i, o in enumerate(p["options"])]
    return (
        p["template"],
        p["context_condition"],
        p["polarity"],
        " ".join(p["context"].split()),
        " ".join(p["question"].split()),
        frozenset(options),
        options[p["label"]],
        options[p["target"]],
    )


def match_examples(items: Sequence[Item], examples: LoadedBenchmark) -> dict[str, int | None]:
    """Each predictions item's Examples ``id`` (None where no Examples row has the same
    template, condition, polarity, texts and correct/target option); among several equal
    candidates, the one with the same unknown string, then the first not yet used."""
    candidates: dict[tuple[Any, ...], list[Item]] = {}
    for item in examples.items:
        candidates.setdefault(_match_key(item.payload), []).append(item)
    used: set[int] = set()
    out: dict[str, int | None] = {}
    for item in items:
        found = candidates.get(_match_key(item.payload), [])
        unknown = item.payload["options"][item.payload["unknown"]].strip().lower()
        ranked = sorted(
            (c for c in found if c.payload["source_id"] not in used),
            key=lambda c: c.payload["options"][c.payload["unknown"]].strip().lower() != unknown,
        )
        out[item.item_id] = ranked[0].payload["source_id"] if ranked else None
        if ranked:
            used.add(ranked[0].payload["source_id"])
    return out


def read_bharatbbq(
    path: Path,
    manifest: BenchmarkManifest,
    examples: Mapping[str, LoadedBenchmark],
    *,
    suffix: str,
    columns: Sequence[str] | None = None,
) -> list[PredictionRun]:
    """One run per model column of a BharatBBQ predictions file."""
    data = _read(path)
    sha = hashlib.sha256(data).hexdigest()
    rows, header = csv_table(data, str(path))
    missing = [c for c in BHARAT_REQUIRED if c not in header]
    if missing or not rows:
        raise DataIntegrityError(
            f"{path}: not a BharatBBQ predictions file (missing column(s) "
            f"{', '.join(missing) or 'none'}; {len(rows)} rows)"
        )
    chosen = list(columns) if columns else [c for c in BHARAT_COLUMNS if c in header]
    absent = [c for c in chosen if c not in header]
    if absent or not chosen:
        raise UserInputError(
            f"{path}: no prediction column(s) {', '.join(absent) or ', '.join(BHARAT_COLUMNS)}"
        )
    categories = {r["Category"] for r in rows}
    if len(categories) != 1:
        raise DataIntegrityError(f"{path}: rows of several categories {sorted(categories)}")
    benchmark = "bharatbbq-" + categories.pop().lower().replace("_", "-")
    if benchmark not in manifest.benchmarks:
        raise UserInputError(f"{path}: {benchmark} is not a BharatBBQ benchmark of the manifest")
    version = BenchmarkVersion(benchmark, BHARAT_COMMIT, sha, "none")
    items = [_bharat_item(r, n, version, benchmark, str(path)) for n, r in enumerate(rows)]
    first: dict[str, int] = {}
    for n, item in enumerate(items):
        if (m := first.setdefault(item.item_id, n)) != n:
            raise DataIntegrityError(
                f"{path}: row {n} (id {item.payload['source_id']}) repeats row {m}: the same "
                "question twice would be scored twice"
            )
    match = match_examples(items, examples[benchmark]) if benchmark in examples else {}
    unmatched_templates = sorted(
        {i.template or "" for i in items if match.get(i.item_id) is None}, key=_numeric
    )
    facts = {
        "rows": len(rows),
        "columns_not_imported": [
            c for c in (*BHARAT_COLUMNS, *BHARAT_EXTRA) if c in header and c not in chosen
        ],
        "examples_match": {
            "examples_benchmark": examples[benchmark].version.label if match else None,
            "matched": sum(v is not None for v in match.values()),
            "unmatched": sum(v is None for v in match.values()) if match else len(items),
            "unmatched_templates": unmatched_templates,
        },
    }
    runs = []
    for column in chosen:
        model = column.removesuffix("_op") if column.endswith("_op") else column
        run = PredictionRun(
            column,
            f"{model.lower().replace('_', '-')}{suffix}",
            model,
            {i.item_id: i for i in items},
            [],
            [benchmark],
            {benchmark: {version.label}},
            {path.name: sha},
        )
        invalid = 0
        for n, (row, item) in enumerate(zip(rows, items, strict=True)):
            raw = (row.get(column) or "").strip()
            try:
                choice: int | None = _index(raw, 1)
            except ValueError:
                choice, invalid = None, invalid + 1
            run.scores.append(
                _row(
                    item,
                    choice,
                    {
                        "prediction": raw,
                        "source_row": n,
                        "examples_source_id": match.get(item.item_id),
                    },
                )
            )
        run.facts = {**facts, "column": column, "unmatched": invalid}
        runs.append(run)
    return runs


def _numeric(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 30, text)


def import_bharatbbq(
    db: Store | Path | str,
    path: Path,
    manifest: BenchmarkManifest,
    examples: Mapping[str, LoadedBenchmark],
    *,
    date: str,
    suffix: str = "-bharatbbq-paper",
    columns: Sequence[str] | None = None,
) -> ImportResult:
    """Import a BharatBBQ predictions file: one run per model column."""
    runs = read_bharatbbq(path, manifest, examples, suffix=suffix, columns=columns)
    return _store_runs(
        db, runs, parse_date(date), source=(BHARAT_REPO, BHARAT_COMMIT), how=_BHARAT_HOW
    )


_BHARAT_HOW = {
    "prediction": "option index 1-3 per item and model, as published in BharatBBQ's "
    "Metrics/Example_Predictions (models, prompts and decoding: see the paper; the file "
    "records neither)",
}


# ---------------------------------------------------------------- shared


def _read(path: Path) -> bytes:
    """A prediction file's bytes: a regular file of at most ``MAX_INPUT_BYTES``."""
    return read_input_file(path)


def _jsonl(data: bytes, path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataIntegrityError(f"{path}: not JSON Lines ({exc})") from None


def content_key(run: PredictionRun) -> str:
    """What makes two imports the same run: the rows read, not the bytes they came in.

    Each row is its item's content (``question_id`` over the benchmark and the payload
    without its language: the BharatBBQ predictions' item ids are namespaced by the
    file's sha256, so a CRLF copy gives other ids for the same questions), the prediction
    as written and the option it picked; rows and exclusions are sorted, so their order
    in the file does not count. The date, file names and line endings are not part of it."""
    rows = sorted(
        [
            question_id(run.items[s.item_id].benchmark, run.items[s.item_id].payload),
            s.details.get("prediction"),
            s.details.get("choice"),
        ]
        for s in run.scores
    )
    excluded = sorted([e.benchmark, e.source_row, e.reason] for e in run.exclusions)
    body = [MC_IMPORTED, MC_IMPORTED_VERSION, run.snapshot, run.column, rows, excluded]
    return hashlib.sha256(json.dumps(body, ensure_ascii=False).encode("utf-8")).hexdigest()


def _record(
    run: PredictionRun, started: datetime, source: tuple[str, str], how: Mapping[str, str]
) -> RunRecord:
    repo, commit = source
    shas = sorted(run.files.items())
    key = content_key(run)
    return RunRecord(
        # The id is the content key (no date, no file hash): importing the same rows
        # again finds this run, whatever --date or line endings the second import has.
        run_id=f"import-{run.snapshot}-{key[:16]}",
        snapshot_id=run.snapshot,
        snapshot_kind="imported-predictions",
        snapshot_revision=UNKNOWN,
        snapshot_manifest={
            "id": run.snapshot,
            "display_name": f"{run.model} ({run.column}, imported from {repo})",
            "source": {"type": "imported", "model": run.model, "column": run.column},
        },
        metric=MC_IMPORTED,
        metric_version=MC_IMPORTED_VERSION,
        benchmarks=list(run.benchmarks),
        dataset_versions={b: {"benchmark_version": sorted(v)} for b, v in run.versions.items()},
        fingerprint=key,
        trigger="import",
        started_at=started,
        origin="imported",
        status="complete",
        environment={
            "import": {
                "source_repo": repo,
                "source_commit": commit,
                "column": run.column,
                "files": dict(shas),
                "content_key": key,
                "importer": f"monitor.families.choice_qa.importers (bias-monitor {__version__})",
                **run.facts,
            },
            "method": dict(how),
        },
        git_commit=f"{repo}@{commit}",
        device=UNKNOWN,
        dtype=UNKNOWN,
        notes=f"imported from {repo}@{commit[:12]}: column {run.column} of {', '.join(run.files)}",
    )


def _store_runs(
    db: Store | Path | str,
    runs: Sequence[PredictionRun],
    started: datetime,
    *,
    source: tuple[str, str],
    how: Mapping[str, str],
) -> ImportResult:
    for run in runs:
        check_snapshot_id(run.snapshot)
    records = [(run, _record(run, started, source, how)) for run in runs]
    store = db if isinstance(db, Store) else Store.open(db)
    batch = RunLifecycle(store).record_imports(
        [
            ImportedRun(
                r, items=list(run.items.values()), scores=run.scores, exclusions=run.exclusions
            )
            for run, r in records
        ]
    )
    return ImportResult(
        batch.run_ids,
        batch.new,
        batch.skipped,
        {r.run_id: r.snapshot_id for _, r in records},
        {r.run_id: run.facts for run, r in records},
    )


# ------------------------- what the declared importers run (import_commands.IMPORTERS)


def _load_pinned(
    ids: Sequence[str], on_event: Callable[[str], None]
) -> tuple[BenchmarkManifest, dict[str, LoadedBenchmark]]:
    """The pinned benchmarks ``ids`` (fetched into the data cache if needed), all rows."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(manifest, list(ids), on_event=on_event)
    loaded = load_benchmarks(list(ids), errata="none", manifest=manifest, options={"size": "full"})
    return manifest, {b.benchmark: b for b in loaded}


def bbq_categories(paths: Sequence[Path]) -> list[str]:
    """The BBQ benchmark ids of the files (from each file's first record)."""
    out = []
    for path in paths:
        records = _jsonl(_read(path).split(b"\n", 1)[0], path)
        if not records or "category" not in records[0]:
            raise DataIntegrityError(f"{path}: not a BBQ predictions file (no category)")
        out.append(_bbq_benchmark(str(records[0]["category"])))
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class PredictionImport:
    """What a user asked of a predictions import, the same for BBQ and BharatBBQ: the
    date the predictions were made, the snapshot suffix, progress, the columns."""

    date: str
    suffix: str
    on_event: Callable[[str], None]
    columns: Sequence[str] | None = None


def import_bbq_files(store: Store, paths: Sequence[Path], ask: PredictionImport) -> ImportResult:
    """``bias-monitor import bbq FILE...`` (``ask.columns`` is not used: every column)."""
    if ask.columns:
        raise UserInputError("--column applies to bharatbbq predictions only")
    ids = bbq_categories(paths)
    unknown = [i for i in ids if i not in load_manifest_ids()]
    if unknown:
        raise UserInputError(f"no pinned BBQ benchmark {', '.join(unknown)} in the manifest")
    _manifest, loaded = _load_pinned(ids, ask.on_event)
    return import_bbq(store, paths, loaded, date=ask.date, suffix=ask.suffix)


def load_manifest_ids() -> set[str]:
    from monitor.benchmarks.manifest import load_manifest

    return set(load_manifest().benchmarks)


def import_bharatbbq_file(
    store: Store, paths: Sequence[Path], ask: PredictionImport
) -> ImportResult:
    """``bias-monitor import bharatbbq FILE``: one predictions file (one category)."""
    if len(paths) != 1:
        raise UserInputError("import bharatbbq takes one predictions file")
    (path,) = paths
    rows, _header = csv_table(_read(path), str(path))
    if not rows or "Category" not in rows[0]:
        raise DataIntegrityError(f"{path}: not a BharatBBQ predictions file (no Category)")
    benchmark = "bharatbbq-" + rows[0]["Category"].lower().replace("_", "-")
    if benchmark not in load_manifest_ids():
        raise UserInputError(f"{path}: {benchmark} is not a BharatBBQ benchmark of the manifest")
    manifest, loaded = _load_pinned([benchmark], ask.on_event)
    return import_bharatbbq(
        store, path, manifest, loaded, date=ask.date, suffix=ask.suffix, columns=ask.columns
    )
