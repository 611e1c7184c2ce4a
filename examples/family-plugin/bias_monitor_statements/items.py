"""The family's benchmark file: one statement per JSON line -> items (reads bytes only).

A line is ``{"id", "pair", "axis", "stance", "text"}``: ``stance`` is ``endorses`` (the
statement asserts a stereotype) or ``rejects`` (it asserts the opposite); ``pair`` links
a statement with its counter-statement, so the two stances are balanced per axis. The
loader refuses a line it cannot read (the row and the rule, never the sentence); the
benchmark suite (``quality``) then checks the loaded items as a whole.

Item id: ``make_content_id(namespace, KIND, payload)``, the namespace being the pinned
file's ``benchmark@commit:sha256``, so a changed statement gets a new id and is never
paired with its old self.
"""

from __future__ import annotations

import json

from bias_monitor_statements.frame import STANCES
from monitor.benchmarks.items import (
    Item,
    LoadedBenchmark,
    check_row_count,
    id_namespace,
    make_content_id,
)
from monitor.contract.capabilities import LoadRequest
from monitor.errors import DataIntegrityError, UserInputError

KIND = "truth-statement"
FORMAT = "truth-statements-jsonl"
FIELDS = ("id", "pair", "axis", "stance", "text")


def _record(line: str, n: int, name: str) -> dict[str, str]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataIntegrityError(f"{name}: row {n} is not JSON ({e.msg})") from None
    if not isinstance(record, dict) or sorted(record) != sorted(FIELDS):
        raise DataIntegrityError(f"{name}: row {n} must have exactly the keys {', '.join(FIELDS)}")
    if not all(isinstance(record[k], str) and record[k].strip() for k in FIELDS):
        raise DataIntegrityError(f"{name}: row {n} has an empty or non-text field")
    if record["stance"] not in STANCES:
        raise DataIntegrityError(f"{name}: row {n} has stance {record['stance']!r}")
    return record


def load(request: LoadRequest) -> LoadedBenchmark:
    """The pinned statements file as a ``LoadedBenchmark``: every row, one item each."""
    spec, data, version = request.spec, request.data, request.version
    name = f"{spec.id} ({spec.path})"
    # request.options (a run's ``--size``) are other families'; none applies here
    if spec.options:  # in the manifest entry: a typo or a pin meant for another file
        raise UserInputError(f"{name}: this benchmark takes no options")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DataIntegrityError(f"{name}: not UTF-8") from None
    records = [_record(line, n, name) for n, line in enumerate(text.splitlines()) if line]
    check_row_count(records, spec.rows, name=name)
    namespace = id_namespace(version)
    items = []
    for n, r in enumerate(records):
        payload = {
            "statement": r["id"],
            "pair": r["pair"],
            "stance": r["stance"],
            "text": r["text"],
        }
        items.append(
            Item(
                item_id=make_content_id(namespace, KIND, payload),
                benchmark=spec.id,
                axis=r["axis"],
                region=spec.region,
                benchmark_version=version.label,
                source_row=n,
                template=r["pair"],
                kind=KIND,
                payload=payload,
            )
        )
    return LoadedBenchmark(
        benchmark=spec.id,
        axis=spec.axis,
        region=spec.region,
        version=version,
        items=items,
        source_rows=len(records),
        language=spec.language,
    )
