"""Import the GPT-5 follow-up of the caste study: five models, 100 samples per question.

The follow-up (github.com/jeqcho/caste-bias-gpt-5 @ bb9e8a14a33c, August 2025) asked each
model every single-target Indian-BhED caste question (105 of the file's 106 rows) 100
times as a two-choice question with inspect_ai's multiple-choice solver, the two options
shuffled per sample, and kept per question the share of samples that chose the
stereotype, the anti-stereotype, or neither (``results/results-<model>.csv``). Each file
becomes one run of the sampling method (``monitor.families.pairs.sampled_study``), filed under
the snapshot ``<model><suffix>`` (default ``gpt-4o-caste-study`` for gpt-4o, so it sits
beside the study's forced-choice runs of that model, with the method change marked).

Rows are matched to our caste items (the study wrote ``___`` for ``MASK``); a row with
no item is an exclusion, never dropped silently. Facts the files do not record (prompt
wording, temperature) are "unknown". Re-importing adds nothing: a run's id comes from the
snapshot, the date and the file's sha256, and runs already stored are skipped.
"""

from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from monitor import __version__
from monitor.benchmarks.items import Exclusion, Item
from monitor.errors import DataIntegrityError, UserInputError
from monitor.families.pairs.caste_import import ItemLookup, loader_lookup, sha256_file
from monitor.families.pairs.records import PairScoreRow
from monitor.families.pairs.sampled_study import METRIC, METRIC_VERSION, STEREO_RULE, rule_of
from monitor.importers.common import UNKNOWN, check_snapshot_id, parse_date
from monitor.jobs.lifecycle import ImportedRun, RunLifecycle
from monitor.records import RunRecord, ScoreRow
from monitor.store.db import Store

STUDY_REPO = "jeqcho/caste-bias-gpt-5"
STUDY_COMMIT = "bb9e8a14a33cc87c4f9d16ddab932f4445be2767"
BENCHMARK = "bhed-caste"
REQUIRED_COLUMNS = (
    "Target_Stereotypical",
    "Target_Anti-Stereotypical",
    "Sentence",
    "prob_stereo",
    "prob_anti_stereo",
    "prob_other",
    "num_samples",
)
# The five result files of the study (PROVENANCE.md of the shared datasets): the model
# each was run on (the study's README names ``openai/gpt-5-chat-latest``) and its provider.
KNOWN_FILES: dict[str, dict[str, str]] = {
    "aac5570b9679ad9e48dd063560ae03fcb89b582b08d06f94be04d03a8465fc6c": {
        "model": "gpt-5-chat-latest",
        "provider": "openai",
    },
    "ead99783a3a6785bda31bcb099741c970fdef933a85e8fa89b7c8689af3f6a43": {
        "model": "chatgpt-4o-latest",
        "provider": "openai",
    },
    "e73b78945db662415d152fe80f3a7ca6e7a940658a178da6c0961d1574547fbd": {
        "model": "gpt-4o",
        "provider": "openai",
    },
    "301e2f3e8a1aa315f307d87d3f6c4407a0e8e913cc4a905eb1264653dfaac8a1": {
        "model": "gpt-oss-120b",
        "provider": UNKNOWN,
    },
    "155cbcb62b6d79e73073e6c99a9b7ac47497289f59743482aae536a940688685": {
        "model": "claude-sonnet-4",
        "provider": "anthropic",
    },
}
METHOD = {
    "harness": "inspect_ai multiple_choice solver: the question with two lettered options, "
    "answer a letter",
    "option_order": "shuffled per sample (inspect_ai shuffle_choices, seed 42 in the study's "
    "indian_bhed.py at bf0baa1d0a6b)",
    "scorer": "STEREO if the chosen option is the stereotype, ANTI_STEREO if the "
    "anti-stereotype, OTHER otherwise; shares of the samples per question",
    "rule": STEREO_RULE,
}


@dataclass(frozen=True)
class SampledFile:
    """One result file, parsed and matched: the run it becomes."""

    path: Path
    sha256: str
    model: str
    provider: str
    items: dict[str, Item]
    scores: list[ScoreRow]
    exclusions: list[Exclusion]
    versions: set[str]


@dataclass(frozen=True)
class SampledImport:
    run_ids: list[str]
    new: list[str]
    skipped: list[str]
    snapshots: dict[str, str]  # run id → snapshot


def _share(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DataIntegrityError(f"{where}: share {text!r} is not a number") from None
    return value  # out-of-range values are stored and quarantined by the gate


def read_file(path: Path, lookup: ItemLookup) -> SampledFile:
    """Parse one ``results-<model>.csv`` and match its rows to our caste items."""
    sha = sha256_file(path)
    known = KNOWN_FILES.get(sha)
    model = known["model"] if known else path.stem.removeprefix("results-")
    items: dict[str, Item] = {}
    scores: list[ScoreRow] = []
    exclusions: list[Exclusion] = []
    versions: set[str] = set()
    source = f"{STUDY_REPO}@{STUDY_COMMIT[:12]}:{path.name}:{sha[:12]}"
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh, strict=True)
        missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataIntegrityError(f"{path}: missing column(s) {', '.join(missing)}")
        for n, row in enumerate(reader):
            where = f"{path} row {n}"
            if None in row or any(v is None for v in row.values()):
                raise DataIntegrityError(f"{where}: wrong number of fields")
            sentence = row["Sentence"].replace("___", "MASK")
            item = lookup(
                "caste", row["Target_Stereotypical"], row["Target_Anti-Stereotypical"], sentence
            )
            if item is None or item.item_id in items:
                reason = "no_matching_item" if item is None else "duplicate"
                exclusions.append(
                    Exclusion(BENCHMARK, source, n, reason, f"{path.name} row {n}: {reason}")
                )
                continue
            s = _share(row["prob_stereo"], where)
            a = _share(row["prob_anti_stereo"], where)
            o = _share(row["prob_other"], where)
            try:
                samples = int(row["num_samples"])
            except ValueError:
                raise DataIntegrityError(f"{where}: num_samples is not a whole number") from None
            rule = rule_of(s, a)
            items[item.item_id] = item
            versions.add(item.benchmark_version)
            scores.append(
                PairScoreRow(
                    item_id=item.item_id,
                    metric=METRIC,
                    metric_version=METRIC_VERSION,
                    outcome="stereo" if rule == "stereo majority" else "anti",
                    delta=s - a,
                    prob_stereo=s,
                    prob_anti=a,
                    details={
                        "prob_other": o,
                        "num_samples": samples,
                        "rule": rule,
                        "source_file": path.name,
                        "source_row": n,
                    },
                )
            )
    if not scores:
        raise DataIntegrityError(f"{path}: no row matches a {BENCHMARK} item")
    return SampledFile(
        path,
        sha,
        model,
        known["provider"] if known else UNKNOWN,
        items,
        scores,
        exclusions,
        versions,
    )


def _record(f: SampledFile, snapshot: str, started, samples: set[int]) -> RunRecord:
    digest = hashlib.sha256(json.dumps([snapshot, started.isoformat(), f.sha256]).encode())
    return RunRecord(
        run_id=f"import-{snapshot}-{started:%Y%m%d}-sampled-{digest.hexdigest()[:8]}",
        snapshot_id=snapshot,
        snapshot_kind="openai-api" if f.provider == "openai" else f"{f.provider}-api",
        snapshot_revision=f.model,
        snapshot_manifest={
            "id": snapshot,
            "display_name": f"{f.model} (imported from {STUDY_REPO})",
            "source": {"type": "api", "model": f.model, "provider": f.provider},
        },
        metric=METRIC,
        metric_version=METRIC_VERSION,
        benchmarks=[BENCHMARK],
        dataset_versions={BENCHMARK: {"benchmark_version": sorted(f.versions)}},
        fingerprint=hashlib.sha256(
            json.dumps([METRIC, METRIC_VERSION, snapshot, f.model, f.sha256]).encode()
        ).hexdigest(),
        trigger="import",
        started_at=started,
        origin="imported",
        status="complete",
        environment={
            "api": {
                "provider": f.provider,
                "endpoint": UNKNOWN,
                "model_requested": f.model,
                "temperature": "provider default (not set by the study)",
                "samples_per_item": sorted(samples)[0] if len(samples) == 1 else sorted(samples),
                "reported_model": UNKNOWN,
                "system_fingerprint": UNKNOWN,
            },
            "prompt_template": "inspect_ai multiple_choice template (not in the result files)",
            "option_order": METHOD["option_order"],
            "sampling_method": METHOD,
            "import": {
                "source_repo": STUDY_REPO,
                "source_commit": STUDY_COMMIT,
                "files": {f.path.name: f.sha256},
                "known_file": f.sha256 in KNOWN_FILES,
                "importer": f"monitor.families.pairs.caste_gpt5 (bias-monitor {__version__})",
            },
        },
        git_commit=f"{STUDY_REPO}@{STUDY_COMMIT}",
        device="unknown (API)",
        dtype="unknown",
        notes=f"imported from {STUDY_REPO}@{STUDY_COMMIT[:12]} results/{f.path.name}",
    )


def import_caste_gpt5(
    db: Store | Path | str,
    folder: Path | str,
    *,
    date: str,
    suffix: str = "-caste-study",
    snapshots: dict[str, str] | None = None,
    items_by_key: ItemLookup | None = None,
    data_dir: Path | None = None,
) -> SampledImport:
    """Import every ``results-*.csv`` of ``folder`` as one run each (see the module
    docstring). ``snapshots`` maps a model name to the snapshot to file it under
    (default ``<model><suffix>``). Everything is parsed and matched before the first run
    is written, so a damaged file writes nothing."""
    folder = Path(folder)
    paths = sorted(folder.glob("results-*.csv"))
    if not paths:
        raise UserInputError(f"{folder} holds no results-*.csv file of the GPT-5 follow-up")
    started = parse_date(date)
    lookup = items_by_key if items_by_key is not None else loader_lookup(["caste"], data_dir)
    files = [read_file(p, lookup) for p in paths]
    chosen = {f.model: (snapshots or {}).get(f.model, f"{f.model}{suffix}") for f in files}
    for snap in chosen.values():
        check_snapshot_id(snap)
    records = [
        (
            f,
            _record(
                f,
                chosen[f.model],
                started,
                {int(s.details["num_samples"]) for s in f.scores},
            ),
        )
        for f in files
    ]
    store = db if isinstance(db, Store) else Store.open(db)
    batch = RunLifecycle(store).record_imports(
        [
            ImportedRun(r, items=list(f.items.values()), scores=f.scores, exclusions=f.exclusions)
            for f, r in records
        ]
    )
    return SampledImport(
        batch.run_ids, batch.new, batch.skipped, {r.run_id: r.snapshot_id for _, r in records}
    )
