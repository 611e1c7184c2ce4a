"""Loaders of the choice-QA family: BBQ JSON Lines and BharatBBQ CSV files -> items.

``monitor.benchmarks.load`` dispatches the manifest formats ``bbq-jsonl`` and
``bharatbbq-csv`` to :func:`load` (the family's ``load`` hook). Every source row becomes
one item of kind ``choice-question`` whose ``payload`` is plain JSON (see the shared spec
in ``spec.py``): the context, question and three options, and the 0-based indices of the
correct option (``label``), the unknown option (``unknown``) and the option naming the
stereotyped group (``target``).

Options (``options`` argument, on top of the manifest entry's ``options``):

``size``      ``"mini"`` | ``"default"`` | ``"full"`` (default ``"default"``). The items of
              one template (``question_index`` in BBQ, ``Qid`` in BharatBBQ) are one cluster
              for the intervals, so a sample keeps whole *fills* of a template: every item
              that shares the template and the option set (both context conditions, both
              polarities, both name orders). A template holds 35-270 items in these files,
              so a sample of ~30 items cannot keep whole templates; it keeps a few whole
              fills of each of a few templates instead. ``mini``: 4 templates, fills up to
              8 items each (~32 items); ``default``: 10 templates, fills up to 40 items
              each (~400 items); ``full``: every row. Deterministic (seeded); the size,
              seed and the template ids kept are recorded in ``LoadedBenchmark.sampling``.
``seed``      the sampling seed (default 0).
``translations`` (BharatBBQ only) a folder holding a translation of the benchmark as
              row-parallel files named like the English ones (``Caste_examples.csv``, same
              columns), e.g. a copy of a language of the gated dataset hub release;
              ``language`` is then its BCP-47 code. Indices (label, target, unknown),
              template and source id come from the pinned English row at the same position
              (the unknown option cannot be found by English strings in a translation) and
              the loader refuses a file whose row count, ids, templates, conditions or
              indices differ. Items of a translation pair with the English items by
              (benchmark, ``source_id``); their ids differ (the texts differ). The run
              records the language, the folder, the file name and its sha256 in
              ``sampling``, and the sha's first 12 digits in the benchmark version label
              (``errata-<v>+<language>:<sha12>``), so a rerun of another file is another
              configuration and is never resumed into this one.

Item id: ``make_content_id(namespace, "choice-question", payload without "language")``
where the namespace is ``benchmark@commit:sha256`` of the English file (no errata
version). BBQ targets: the option whose ``answer_info`` group (either of its two labels,
case-insensitive) is one of ``additional_metadata.stereotyped_groups``; an item where not
exactly one non-unknown option matches gets ``target: null`` (kept for accuracy, left out
of bias scores by the measures) and its source id is listed in
``sampling["target_unidentified"]``. In the six pinned BBQ files every row matches exactly
one option. BharatBBQ: ``Target`` and ``Label`` are 1-based option indices; the unknown
option is the one whose text is one of the six unknown strings of the files (every row of
the 13 files has exactly one).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.benchmarks.items import (
    BenchmarkVersion,
    Item,
    LoadedBenchmark,
    check_row_count,
    id_namespace,
    make_content_id,
)
from monitor.benchmarks.manifest import BenchmarkSpec
from monitor.contract.capabilities import LoadRequest
from monitor.errors import DataIntegrityError, UserInputError
from monitor.inputs import read_input_file

KIND = "choice-question"
FORMATS = ("bbq-jsonl", "bharatbbq-csv")
SIZES = {"mini": (4, 8), "default": (10, 40), "full": None}  # (templates, items per template)
DEFAULT_SIZE = "default"
OPTION_NAMES = frozenset({"size", "seed", "translations", "language"})
# The unknown answers used in the BharatBBQ files (compared lower-cased and stripped).
UNKNOWN_STRINGS = frozenset(
    {
        "unknown",
        "can't be determined",
        "can't answer",
        "cannot answer",
        "not enough information",
        "not enough info",
    }
)
BHARATBBQ_COLUMNS = (
    "Qid",
    "Context_type",
    "Context",
    "Question",
    "Question_polarity",
    "Option1",
    "Option2",
    "Option3",
    "Label",
    "Target",
    "Proper_Noun",
    "Category",
    "id",
)
_CONDITION = {"amb": "ambig", "disamb": "disambig", "ambig": "ambig", "disambig": "disambig"}
_POLARITY = {"neg": "neg", "non-neg": "nonneg", "nonneg": "nonneg"}


def category_id(benchmark: str) -> str:
    """The category id (the item's ``axis``): the benchmark id after its source prefix."""
    return benchmark.split("-", 1)[1]


def load(request: LoadRequest) -> LoadedBenchmark:
    """The family's ``load`` hook: a pinned BBQ or BharatBBQ file as a ``LoadedBenchmark``."""
    spec, data, version, options = request.spec, request.data, request.version, request.options
    name = f"{spec.id} ({spec.path})"
    opts = {**spec.options, **options}
    unknown = sorted(set(opts) - OPTION_NAMES)
    if unknown:
        raise UserInputError(f"{name}: unknown option(s) {', '.join(unknown)}")
    size = str(opts.get("size", DEFAULT_SIZE))
    if size not in SIZES:
        raise UserInputError(f"{name}: size {size!r} is not one of {', '.join(SIZES)}")
    seed = opts.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UserInputError(f"{name}: seed must be an integer")
    language = spec.language
    translation: dict[str, str] = {}
    if spec.format == "bbq-jsonl":
        if "translations" in opts:
            raise UserInputError(f"{name}: translations apply to BharatBBQ benchmarks only")
        records = [bbq_record(r, n, name=name) for n, r in enumerate(_jsonl(data, name))]
        check_row_count(records, spec.rows, name=name)
        fill_of = _fills(records)
    elif spec.format == "bharatbbq-csv":
        rows = _csv_rows(data, name)
        check_row_count(rows, spec.rows, name=name)
        records = [bharatbbq_record(r, n, name=name) for n, r in enumerate(rows)]
        fill_of = _fills(records)
        if "translations" in opts:
            folder = Path(str(opts["translations"])).expanduser()
            language = str(opts.get("language") or "")
            if not language:
                raise UserInputError(f"{name}: translations need a language code (option language)")
            records, file_sha = _translated(records, folder, spec, name)
            translation = {
                "translations": str(opts["translations"]),
                "translation_file": Path(spec.path).name,
                "translation_sha256": file_sha,
            }
            version = BenchmarkVersion(
                benchmark=version.benchmark,
                source_commit=version.source_commit,
                sha256=version.sha256,
                errata_version=f"{version.errata_version}+{language}:{file_sha[:12]}",
            )
    else:
        raise UserInputError(f"{name}: format {spec.format!r} is not a choice-QA format")
    axis = category_id(spec.id)
    exclusions = [
        version.excluded(r["source_row"], SAME_OPTIONS, SAME_OPTIONS_DETAIL)
        for r in records
        if not options_distinct(r["options"])
    ]
    excluded = {e.source_row for e in exclusions}
    items = [
        question_item(r, version, language, benchmark=spec.id, axis=axis, region=spec.region)
        for r in records
        if r["source_row"] not in excluded
    ]
    kept = sample_items(items, size, seed, fill=lambda i: fill_of[i.source_row])
    return LoadedBenchmark(
        benchmark=spec.id,
        axis=axis,
        region=spec.region,
        version=version,
        items=kept,
        exclusions=exclusions,
        source_rows=len(records),
        language=language,
        not_sampled=sorted(set(i.source_row for i in items) - set(i.source_row for i in kept)),
        sampling={
            "size": size,
            "seed": seed,
            "templates": sorted({i.template or "" for i in kept}, key=_template_key),
            "target_unidentified": [
                i.payload["source_id"] for i in items if i.payload["target"] is None
            ],
            **translation,
        },
    )


def _fills(records: Sequence[Mapping[str, Any]]) -> dict[int, tuple[str, ...]]:
    """Source row -> its fill's name (the sorted options), taken before a translation
    replaces the texts, so a translation keeps the English file's sample whatever its
    texts sort like."""
    return {r["source_row"]: tuple(sorted(r["options"])) for r in records}


def _template_key(template: str) -> tuple[int, str]:
    return (int(template), "") if template.isdigit() else (1 << 30, template)


def sample_items(
    items: Sequence[Item],
    size: str,
    seed: int,
    fill: Callable[[Item], tuple[str, ...]] | None = None,
) -> list[Item]:
    """The items a size keeps: whole fills (template + option set) of seeded templates.

    ``fill`` names an item's option set (default: its sorted options); a translation
    passes the English options, so both languages keep the same source rows."""
    plan = SIZES[size]
    if plan is None:
        return list(items)
    n_templates, per_template = plan
    rng = random.Random(f"choice-qa:{seed}")
    by_template: dict[str, dict[tuple[str, ...], list[Item]]] = {}
    for item in items:
        fills = by_template.setdefault(item.template or "", {})
        key = fill(item) if fill else tuple(sorted(item.payload["options"]))
        fills.setdefault(key, []).append(item)
    templates = sorted(by_template, key=_template_key)
    chosen = sorted(rng.sample(templates, min(n_templates, len(templates))), key=_template_key)
    keep: set[str] = set()
    for template in chosen:
        fills = [by_template[template][k] for k in sorted(by_template[template])]
        rng.shuffle(fills)
        count = 0
        for fill in fills:
            if count >= per_template:
                break
            keep.update(i.item_id for i in fill)
            count += len(fill)
    return [i for i in items if i.item_id in keep]


def _jsonl(data: bytes, name: str) -> list[dict[str, Any]]:
    try:
        text = data.decode("utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataIntegrityError(f"{name}: not JSON Lines ({exc})") from None


def _csv_rows(data: bytes, name: str) -> list[dict[str, str]]:
    rows, header = csv_table(data, name)
    missing = [c for c in BHARATBBQ_COLUMNS if c not in header]
    if missing:
        raise DataIntegrityError(f"{name}: missing column(s) {', '.join(missing)}")
    return rows


def csv_table(data: bytes, name: str) -> tuple[list[dict[str, str]], list[str]]:
    """The rows of a UTF-8 CSV file as dicts, and its header; a one-line
    ``DataIntegrityError`` naming the line where a row is not well formed.

    An unclosed quote must not cost a row silently: the quoted field runs on into the next
    line and takes that row with it. The reader is strict (a quote that closes a field
    must be followed by a comma or a line end, which the next row's quotes seldom are,
    and a quote left open at the end of the file is an error), and a row whose field
    count is not the header's is refused: either one shows the joined rows.
    ``csv.DictReader`` fills a short row with ``None`` and keeps a long row's extra
    fields aside, so it is not used. A field over the csv module's 128 KiB limit is
    refused here too. Blank lines are skipped, as ``DictReader`` skips them."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataIntegrityError(f"{name}: not UTF-8 (byte {exc.start})") from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: list[dict[str, str]] = []
    start = 1  # the physical line the record being read starts on
    try:
        header = next(reader, [])
        start = reader.line_num + 1
        for fields in reader:
            if fields and len(fields) != len(header):
                lines = f"{start}" if reader.line_num == start else f"{start}-{reader.line_num}"
                raise DataIntegrityError(
                    f"{name}: line {lines}: {len(fields)} fields where the header has "
                    f"{len(header)} (a field missing, or an unclosed quote joining rows)"
                )
            if fields:
                rows.append(dict(zip(header, fields, strict=True)))
            start = reader.line_num + 1
    except csv.Error as exc:
        hint = "" if "field limit" in str(exc) else "; an unclosed quote?"
        raise DataIntegrityError(
            f"{name}: line {start}: not a well-formed CSV row ({exc}{hint})"
        ) from None
    return rows, header


def bbq_target(record: Mapping[str, Any]) -> int | None:
    """The option naming a stereotyped group, or None where not exactly one does."""
    groups = {str(g).lower() for g in record["additional_metadata"]["stereotyped_groups"]}
    hits = [
        i
        for i in range(3)
        if (info := record["answer_info"][f"ans{i}"])[1] != "unknown"
        and any(str(label).lower() in groups for label in info)
    ]
    return hits[0] if len(hits) == 1 else None


def bbq_record(record: Mapping[str, Any], row: int, *, name: str) -> dict[str, Any]:
    """One BBQ JSON record as the family's payload fields (plus ``source_row``)."""
    try:
        unknown = [i for i in range(3) if record["answer_info"][f"ans{i}"][1].lower() == "unknown"]
        if len(unknown) != 1:
            raise ValueError(f"{len(unknown)} unknown options")
        return {
            "source_row": row,
            "source": "bbq",
            "category": str(record["category"]),
            "template": str(record["question_index"]),
            "context": str(record["context"]),
            "question": str(record["question"]),
            "options": [str(record[f"ans{i}"]) for i in range(3)],
            "unknown": unknown[0],
            "label": _index(record["label"], 0),
            "target": bbq_target(record),
            "polarity": _POLARITY[record["question_polarity"]],
            "context_condition": _CONDITION[record["context_condition"]],
            "source_id": int(record["example_id"]),
            "proper_noun": None,
        }
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise DataIntegrityError(f"{name}: row {row}: not a BBQ record ({exc})") from None


def _index(value: Any, base: int) -> int:
    index = int(value) - base
    if index not in (0, 1, 2):
        raise ValueError(f"option index {value!r} out of range")
    return index


# A question whose options are not three different answers cannot be scored: picking the
# "other" copy of the right answer would count as wrong. Found in two pinned BharatBBQ
# files, 8 rows of one template each: GenderxReligion (two options differ only by a
# trailing space) and Region (two options are the same text); excluded with this
# reason, recorded with every run like the pair family's.
SAME_OPTIONS = "options_not_distinct"
SAME_OPTIONS_DETAIL = "two of the three options are the same text once outer spaces are removed"


def options_distinct(options: Sequence[str]) -> bool:
    """Whether the options are three different answers (compared without outer spaces)."""
    return len({str(o).strip() for o in options}) == len(options)


def bharatbbq_unknown(options: Sequence[str]) -> int:
    """The option whose text is one of the unknown strings; ValueError unless exactly one."""
    hits = [i for i, o in enumerate(options) if o.strip().lower() in UNKNOWN_STRINGS]
    if len(hits) != 1:
        raise ValueError(f"{len(hits)} unknown options")
    return hits[0]


@dataclass(frozen=True)
class BharatColumns:
    """Where a BharatBBQ file keeps the fields that differ by file: the Examples files and
    the authors' predictions file spell the options, polarity and condition columns
    differently (``Option1``/``Question_polarity``/``Context_type`` against
    ``Ans1``/``Question_Polarity``/``Context_Condition``); the rest is shared."""

    option: str
    polarity: str
    condition: str


EXAMPLES_COLUMNS = BharatColumns("Option", "Question_polarity", "Context_type")
PREDICTIONS_COLUMNS = BharatColumns("Ans", "Question_Polarity", "Context_Condition")


def bharatbbq_record(
    row: Mapping[str, str],
    n: int,
    *,
    name: str,
    columns: BharatColumns = EXAMPLES_COLUMNS,
    kind: str = "BharatBBQ row",
) -> dict[str, Any]:
    """One BharatBBQ row as the family's payload fields (plus ``source_row``): the one
    reading of a row, for the benchmark's Examples files and the predictions file alike."""
    try:
        options = [row[f"{columns.option}{i}"] for i in (1, 2, 3)]
        return {
            "source_row": n,
            "source": "bharatbbq",
            "category": row["Category"],
            "template": str(int(row["Qid"])),
            "context": row["Context"],
            "question": row["Question"],
            "options": options,
            "unknown": bharatbbq_unknown(options),
            "label": _index(row["Label"], 1),
            "target": _index(row["Target"], 1),
            "polarity": _POLARITY[row[columns.polarity].strip().lower()],
            "context_condition": _CONDITION[row[columns.condition].strip().lower()],
            "source_id": int(row["id"]),
            "proper_noun": row["Proper_Noun"].strip() == "1",
        }
    except (KeyError, ValueError) as exc:
        raise DataIntegrityError(f"{name}: row {n}: not a {kind} ({exc})") from None


def _translated(
    english: list[dict[str, Any]], folder: Path, spec: BenchmarkSpec, name: str
) -> tuple[list[dict[str, Any]], str]:
    """The English records with the texts of the row-parallel file in ``folder``."""
    path = folder / Path(spec.path).name
    # A regular file of bounded size: a name linked to /dev/zero would otherwise be read
    # until the memory runs out.
    data = read_input_file(path, what=f"{name}: translation")
    rows = _csv_rows(data, str(path))
    if len(rows) != len(english):
        raise DataIntegrityError(
            f"{path}: {len(rows)} data rows, the English file has {len(english)}"
        )
    out = []
    for n, (row, base) in enumerate(zip(rows, english, strict=True)):
        try:
            same = (
                int(row["id"]) == base["source_id"]
                and str(int(row["Qid"])) == base["template"]
                and _index(row["Label"], 1) == base["label"]
                and _index(row["Target"], 1) == base["target"]
                and _CONDITION[row["Context_type"].strip().lower()] == base["context_condition"]
            )
        except (KeyError, ValueError):
            same = False
        if not same:
            raise DataIntegrityError(
                f"{path}: row {n} is not parallel to the English row (id, Qid, Label, Target "
                "or Context_type differ)"
            )
        out.append(
            {
                **base,
                "context": row["Context"],
                "question": row["Question"],
                "options": [row[f"Option{i}"] for i in (1, 2, 3)],
            }
        )
    return out, hashlib.sha256(data).hexdigest()


def payload_core(payload: Mapping[str, Any]) -> dict[str, Any]:
    """What an item id is hashed over: the payload without its language."""
    return {k: v for k, v in payload.items() if k != "language"}


def question_id(namespace: str, payload: Mapping[str, Any]) -> str:
    """A question's content id in ``namespace``, over its payload without its language
    (``payload_core``): one rule for the loader's items, the imported predictions' items
    and the imports' content keys."""
    return make_content_id(namespace, KIND, payload_core(payload))


def question_item(
    record: Mapping[str, Any],
    version: BenchmarkVersion,
    language: str,
    *,
    benchmark: str,
    axis: str,
    region: str,
) -> Item:
    """One question's ``Item`` from its record (the payload's fields and ``source_row``) in
    ``language``, filed under ``benchmark``/``axis``/``region``, its id hashed over the
    payload without its language (``question_id``) in ``version``'s ``id_namespace``: the
    loader's items and the BharatBBQ predictions' imported ones are built here alike."""
    payload = {k: v for k, v in record.items() if k != "source_row"}
    payload["language"] = language
    return Item(
        item_id=question_id(id_namespace(version), payload),
        benchmark=benchmark,
        axis=axis,
        region=region,
        benchmark_version=version.label,
        source_row=int(record["source_row"]),
        template=payload["template"],
        kind=KIND,
        payload=payload,
    )
