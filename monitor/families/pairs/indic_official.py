"""The official Indic-Bias templates, from a copy the user downloaded (never required).

The ~20k templates of *FairI Tales* (Nawale et al., ACL 2025) are in the gated Hugging
Face dataset ``ai4bharat/Indic-Bias`` (CC-BY-4.0), which cannot be fetched from here and
is not pinned in ``data/benchmarks.toml``. A user who has accepted its terms downloads it
(``huggingface-cli download ai4bharat/Indic-Bias --repo-type dataset --local-dir DIR``)
and passes ``bias-monitor run --indic-bias DIR``. This module reads the stereotype
configs in the columns of the dataset card:

* ``stereotype-plausibility`` and ``stereotype-judgement``: ``template``,
  ``identity_type``, ``identity``, ``category``, ``stereotype``, ``template_id`` (a
  plausibility template holds ``<identity>``, a judgement template ``<identity_1>`` and
  ``<identity_2>``);
* ``stereotype-generation``: ``scenario``, ``identity_1``, ``identity_2``,
  ``stereotype_1``, ``stereotype_2``, ``true_pairs`` (identity_1/2, stereotype_1/2),
  ``template_id``.

Each config is a folder of that name holding Parquet (as the hub serves it), JSON Lines
or CSV files. Plausibility and judgement templates become identity pairs exactly like the
taxonomy benchmark's (the template's identity X against ``partners`` identities of its
type, drawn with the seed from the pinned taxonomy's identity lists), so every pair
scorer applies; an API model sees them in the paper's prompt shapes (``monitor.scoring.
api_tasks``, templates ``indic-*``), both identity orders, with the "Neither" variants
(``-none``) telling it that it may decline. Generation rows are scored by a judge model
(``judged_task``). The version of a user's copy is the sha256 of its files.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from monitor.benchmarks.items import (
    BenchmarkVersion,
    Exclusion,
    Item,
    LoadedBenchmark,
    id_namespace,
)
from monitor.errors import DataIntegrityError, UserInputError
from monitor.families.pairs.records import payload_pair
from monitor.families.pairs.taxonomy import KIND, TYPES, Taxonomy, mentions

TASKS = ("plausibility", "plausibility-none", "judgement", "judgement-none", "generation")
CONFIG_OF = {
    "plausibility": "stereotype-plausibility",
    "plausibility-none": "stereotype-plausibility",
    "judgement": "stereotype-judgement",
    "judgement-none": "stereotype-judgement",
    "generation": "stereotype-generation",
}
COLUMNS = {
    "stereotype-plausibility": ("template", "identity_type", "identity", "template_id"),
    "stereotype-judgement": ("template", "identity_type", "identity", "template_id"),
    "stereotype-generation": (
        "scenario",
        "identity_1",
        "identity_2",
        "stereotype_1",
        "stereotype_2",
        "true_pairs",
        "template_id",
    ),
}
SUFFIXES = (".parquet", ".jsonl", ".json", ".csv")
DATASET = "ai4bharat/Indic-Bias"
IDENTITY, IDENTITY_1, IDENTITY_2 = "<identity>", "<identity_1>", "<identity_2>"
ANSWER_TEMPLATE = "{scenario}\nAnswer: MASK"  # what a local model completes for judgement


def benchmark_id(task: str) -> str:
    return f"indic-bias-{task}"


def config_files(folder: Path, config: str) -> list[Path]:
    """The data files of ``config`` under ``folder`` (a sub-folder named by the config)."""
    base = Path(folder) / config
    if not base.is_dir():
        return []
    return sorted(p for p in base.rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def _read_file(path: Path) -> list[dict[str, Any]]:
    try:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path).to_pylist()
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        if path.suffix == ".json":
            data = json.loads(text)
            return data if isinstance(data, list) else [data]
        return list(csv.DictReader(io.StringIO(text, newline="")))
    except (OSError, ValueError) as exc:
        raise DataIntegrityError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from None


def read_config(folder: Path, config: str) -> tuple[list[dict[str, Any]], str]:
    """All rows of ``config`` and the sha256 over its files (names and bytes)."""
    files = config_files(folder, config)
    if not files:
        raise UserInputError(
            f"--indic-bias {folder}: no {config} files (expected {config}/*.parquet, "
            f"*.jsonl or *.csv, as `huggingface-cli download {DATASET}` lays them out)"
        )
    digest = hashlib.sha256()
    rows: list[dict[str, Any]] = []
    for path in files:
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
        rows += _read_file(path)
    missing = [c for c in COLUMNS[config] if rows and c not in rows[0]]
    if not rows or missing:
        raise DataIntegrityError(
            f"--indic-bias {folder}: {config} "
            + (f"lacks column(s) {', '.join(missing)}" if rows else "has no rows")
            + f" (the dataset card's columns are {', '.join(COLUMNS[config])})"
        )
    return rows, digest.hexdigest()


def _version(task: str, sha: str) -> BenchmarkVersion:
    return BenchmarkVersion(benchmark_id(task), sha, sha, "none")


def _sample(rows: Sequence[dict[str, Any]], limit: int | None, seed: int, task: str) -> list[int]:
    indices = list(range(len(rows)))
    if limit is not None and limit < len(indices):
        indices = sorted(random.Random(f"{seed}:{task}").sample(indices, limit))
    return indices


def _pair_item(
    task: str,
    version: BenchmarkVersion,
    n: int,
    row: Mapping[str, Any],
    other: str,
    how: str,
    seed: int,
    region: str,
) -> Item:
    x, type_ = str(row["identity"]), str(row["identity_type"])
    raw = str(row["template"])
    payload = {
        "identity": x,
        "other": other,
        "identity_type": type_,
        "stereotype_id": f"hf:{row['template_id']}",
        "category": str(row.get("category", "")),
        "template_id": str(row["template_id"]),
        "task": task,
        "seed": seed,
        "partner_pool": how,
        "source": DATASET,
    }
    if task.startswith("plausibility"):
        template = raw.replace(IDENTITY, "MASK")
        text_s, text_a = raw.replace(IDENTITY, x), raw.replace(IDENTITY, other)
        targets_s, targets_a = (x,) * raw.count(IDENTITY), (other,) * raw.count(IDENTITY)
        payload["scenario"] = raw
    else:
        # Judgement names both identities in one scenario; a local model completes the
        # answer. The order in the scenario is drawn with the seed, as the paper did.
        first, second = (
            (x, other)
            if random.Random(f"{seed}:{n}:{other}").random() < 0.5
            else (
                other,
                x,
            )
        )
        scenario = raw.replace(IDENTITY_1, first).replace(IDENTITY_2, second)
        template = ANSWER_TEMPLATE.format(scenario=scenario)
        text_s, text_a = template.replace("MASK", x), template.replace("MASK", other)
        targets_s, targets_a = (x,), (other,)
        payload["scenario"] = raw  # the API prompt fills it in each option order
    return payload_pair(
        id_namespace(version),
        version,
        n,
        KIND,
        payload,
        (text_s, text_a),
        axis=type_,
        region=region,
        targets_stereo=targets_s,
        targets_anti=targets_a,
        template=template,
        raw_stereo_cell=str(list(targets_s)),
        raw_anti_cell=str(list(targets_a)),
    )


def load_pair_task(
    folder: Path,
    task: str,
    tax: Taxonomy,
    *,
    partners: int = 2,
    limit: int | None = None,
    seed: int = 12,
    region: str = "india",
) -> LoadedBenchmark:
    """Plausibility or judgement templates as identity pairs (see the module docstring)."""
    rows, sha = read_config(folder, CONFIG_OF[task])
    version = _version(task, sha)
    items: list[Item] = []
    exclusions: list[Exclusion] = []
    marker = IDENTITY if task.startswith("plausibility") else IDENTITY_1
    chosen = _sample(rows, limit, seed, task)
    for n in chosen:
        row = rows[n]
        type_, x = str(row["identity_type"]), str(row["identity"])
        if marker not in str(row["template"]):
            exclusions.append(version.excluded(n, "no_placeholder", f"no {marker}"))
            continue
        pool, how = tax.partner_pool(type_, x)
        candidates = [p for p in pool if not mentions(p, str(row["template"]))]
        if not candidates:
            exclusions.append(version.excluded(n, "no_partner", "no partner left"))
            continue
        rng = random.Random(f"{seed}:{task}:{row['template_id']}:{n}")
        for other in rng.sample(candidates, min(partners, len(candidates))):
            items.append(_pair_item(task, version, n, row, other, how, seed, region))
    sampling = {"partners": partners, "limit": limit, "seed": seed, "source": DATASET}
    return _task_benchmark(version, region, items, exclusions, len(rows), chosen, sampling)


def _task_benchmark(
    version: BenchmarkVersion,
    region: str,
    items: list[Item],
    exclusions: list[Exclusion],
    n_rows: int,
    chosen: Iterable[int],
    sampling: dict[str, Any],
) -> LoadedBenchmark:
    """One task's items as a benchmark of mixed axes; the rows the sample did not choose
    are listed as not sampled (left out by design)."""
    return LoadedBenchmark(
        benchmark=version.benchmark,
        axis="mixed",
        region=region,
        version=version,
        items=items,
        exclusions=exclusions,
        source_rows=n_rows,
        not_sampled=sorted(set(range(n_rows)) - set(chosen)),
        sampling=sampling,
    )


def _true_pairs(row: Mapping[str, Any]) -> dict[str, str]:
    tp = row["true_pairs"]
    if isinstance(tp, str):
        tp = json.loads(tp)
    if not isinstance(tp, Mapping):
        raise DataIntegrityError("stereotype-generation: true_pairs is not a mapping")
    return {k: str(tp[k]) for k in ("identity_1", "identity_2", "stereotype_1", "stereotype_2")}


def load_generation(
    folder: Path,
    *,
    limit: int | None = None,
    seed: int = 12,
    region: str = "india",
    types: Mapping[str, str] | None = None,
) -> LoadedBenchmark:
    """Generation scenarios as items of kind ``judged-generation``: the scenario is sent as
    is; a judge model decides whether the response attaches each stereotype to its true
    identity (``true_pairs``). ``types`` maps identity names to their type (the axis)."""
    rows, sha = read_config(folder, CONFIG_OF["generation"])
    version = _version("generation", sha)
    items = []
    chosen = _sample(rows, limit, seed, "generation")
    for n in chosen:
        row = rows[n]
        truth = _true_pairs(row)
        payload = {
            "identity_1": str(row["identity_1"]),
            "identity_2": str(row["identity_2"]),
            "true_pairs": truth,
            "template_id": str(row["template_id"]),
            "task": "generation",
            "source": DATASET,
        }
        scenario = str(row["scenario"])
        axis = (types or {}).get(truth["identity_1"], "mixed")
        items.append(
            payload_pair(
                id_namespace(version),
                version,
                n,
                "judged-generation",
                payload,
                (scenario, None),
                axis=axis,
                region=region,
            )
        )
    sampling = {"limit": limit, "seed": seed, "source": DATASET}
    return _task_benchmark(version, region, items, [], len(rows), chosen, sampling)


def load_official(
    folder: Path,
    tasks: Iterable[str],
    tax: Taxonomy,
    *,
    partners: int = 2,
    limit: int | None = None,
    seed: int = 12,
) -> list[LoadedBenchmark]:
    """The requested tasks from a downloaded copy of the dataset."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserInputError(f"--indic-bias {folder}: not a folder")
    out = []
    # A name under two types (Bengali: region, and a tribe comparator) takes the first of
    # religion, region, caste, tribe: generation rows name identities without their type.
    types: dict[str, str] = {}
    for t in TYPES:
        for name in tax.identities.get(t, ()):
            types.setdefault(name, t)
    for task in dict.fromkeys(tasks):
        if task not in TASKS:
            raise UserInputError(f"unknown --indic-task {task!r}; use one of {', '.join(TASKS)}")
        if task == "generation":
            out.append(load_generation(folder, limit=limit, seed=seed, types=types))
        else:
            out.append(load_pair_task(folder, task, tax, partners=partners, limit=limit, seed=seed))
    return out
