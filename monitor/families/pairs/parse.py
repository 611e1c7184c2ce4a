"""Pure parsing of benchmark file contents into items and exclusions (no file system).

Every source row ends up either as an ``Item`` or as an ``Exclusion`` with a reason,
so counts always add up and nothing is dropped silently. Messages never quote
sentence text: rows are named by benchmark, row number and item id.
"""

from __future__ import annotations

import ast
import csv
import difflib
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.benchmarks.items import (
    BenchmarkVersion,
    Exclusion,
    Item,
    id_namespace,
    normalise_text,
)
from monitor.errors import DataIntegrityError
from monitor.families.pairs.records import file_pair, make_item_id, payload_pair

MASK = re.compile(r"\bMASK\b")

BHED_STEREO = "Target_Stereotypical"
BHED_ANTI = "Target_Anti-Stereotypical"
BHED_SENTENCE = "Sentence"
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "indian-bhed": (BHED_STEREO, BHED_ANTI, BHED_SENTENCE),
    "crows-pairs": ("sent_more", "sent_less", "stereo_antistereo", "bias_type"),
}
CROWS_DIRECTIONS = ("stereo", "antistereo")


@dataclass
class ParsedRows:
    items: list[Item] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)
    # Excluded rows as the Indian-BhED code would still score them (see LoadedBenchmark).
    reference_rows: list[Item] = field(default_factory=list)


class TargetError(ValueError):
    """A target cell that cannot be used; ``reason`` is the exclusion reason."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def read_table(data: bytes | str, fmt: str, *, name: str) -> list[dict[str, str]]:
    """Decode and split a CSV into row dicts, refusing files whose shape is wrong.

    Uses the csv module (CrowS-Pairs has a field with an embedded newline). A missing
    required column or a row with too few / too many fields is a ``DataIntegrityError``
    naming ``name``: a damaged file must stop the run, not lose rows.
    """
    if fmt not in REQUIRED_COLUMNS:
        raise DataIntegrityError(f"{name}: unknown benchmark format {fmt!r}")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DataIntegrityError(
                f"{name}: not valid UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
    reader = csv.DictReader(io.StringIO(data, newline=""), strict=True)
    try:
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS[fmt] if c not in header]
        if missing:
            raise DataIntegrityError(
                f"{name}: missing column(s) {', '.join(repr(c) for c in missing)} for format "
                f"{fmt!r} (header has {', '.join(repr(c) for c in header) or 'nothing'})"
            )
        rows: list[dict[str, str]] = []
        for n, row in enumerate(reader):
            if None in row or any(v is None for v in row.values()):
                raise DataIntegrityError(
                    f"{name}: data row {n} has {'too many' if None in row else 'too few'} fields "
                    f"(header has {len(header)})"
                )
            rows.append(row)
    except csv.Error as exc:
        raise DataIntegrityError(
            f"{name}: malformed CSV near line {reader.line_num}: {exc}"
        ) from None
    return rows


def parse_targets(cell: str, *, side: str) -> tuple[str, ...]:
    """A target cell is a Python list literal of non-empty strings, e.g. ``"['a', 'Chinese']"``.

    ``ast.literal_eval`` (never ``eval``) keeps multi-word and comma-free targets intact,
    which splitting on commas would not.
    """
    try:
        value = ast.literal_eval(cell.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise TargetError(
            "unparseable_targets", f"{side} cell is not a Python list literal"
        ) from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TargetError("unparseable_targets", f"{side} cell is not a list of strings")
    if not value or any(not v.strip() for v in value):
        raise TargetError("empty_target", f"{side} cell has an empty target")
    return tuple(value)


def mask_spans(template: str) -> list[tuple[int, int]]:
    """Positions of whole-token ``MASK`` placeholders (``MASKs`` is not one)."""
    return [m.span() for m in MASK.finditer(template)]


def fill_template(template: str, targets: Sequence[str]) -> str:
    """Fill the MASK blanks left to right by slicing.

    Slicing, not ``re.sub``: a target containing a backslash or ``\\1`` must be
    inserted literally, and each blank takes its own target in order.
    """
    spans = mask_spans(template)
    if len(spans) != len(targets):
        raise ValueError(f"{len(targets)} targets for {len(spans)} MASK placeholders")
    out: list[str] = []
    pos = 0
    for (start, end), target in zip(spans, targets, strict=True):
        out.append(template[pos:start])
        out.append(target)
        pos = end
    out.append(template[pos:])
    return "".join(out)


def diff_targets(text_a: str, text_b: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The word spans where two sentences differ, aligned pairwise.

    Each non-equal difflib block gives one span per side; a pure insertion gives ``""``
    on the side without words, so both tuples always have the same length.
    """
    a, b = text_a.split(), text_b.split()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    spans = [
        (" ".join(a[i1:i2]), " ".join(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]
    return tuple(s for s, _ in spans), tuple(t for _, t in spans)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class _Collector:
    """Collects items and exclusions, refusing identical pairs and repeats of earlier rows."""

    def __init__(self, version: BenchmarkVersion) -> None:
        self.version = version
        self.namespace = id_namespace(version)
        self.result = ParsedRows()
        self.first_row: dict[str, int] = {}

    def exclude(self, row: int, reason: str, detail: str) -> None:
        self.result.exclusions.append(self.version.excluded(row, reason, detail))

    def admit(self, row: int, text_stereo: str, text_anti: str) -> str | None:
        """The new item's id, or None (and an exclusion) if the pair must not be scored."""
        if normalise_text(text_stereo) == normalise_text(text_anti):
            self.exclude(
                row, "identical_pair", "stereotypical and anti-stereotypical texts are equal"
            )
            return None
        item_id = make_item_id(self.namespace, text_stereo, text_anti)
        if item_id in self.first_row:
            self.exclude(row, "duplicate", f"same pair as row {self.first_row[item_id]}")
            return None
        self.first_row[item_id] = row
        return item_id

    def add(self, row: int, text_stereo: str, text_anti: str, **fields: Any) -> bool:
        """Keep row ``row``'s pair as an item if ``admit`` lets it in (``fields``: what the
        format says besides the texts: axis, region, targets, ...); False if excluded."""
        item_id = self.admit(row, text_stereo, text_anti)
        if item_id is None:
            return False
        self.result.items.append(
            file_pair(self.version, row, (text_stereo, text_anti), item_id=item_id, **fields)
        )
        return True


def _parse_indian_bhed(
    rows: Sequence[Mapping[str, str]],
    version: BenchmarkVersion,
    axis: str,
    region: str,
    errata_by_row: Mapping[int, tuple[str, ...]],
    strip_sentences: bool,
) -> ParsedRows:
    """Indian-BhED rows: a template with MASK blanks and one target list per side.

    The raw cells are kept on the item (after errata) for the ``reference`` metric variant.
    Every excluded row is also kept, filled the way the original code fills it, in
    ``reference_rows``. ``strip_sentences`` removes whitespace around the Sentence cell
    (the neutral control set has leading spaces that carry no meaning).
    """
    out = _Collector(version)

    def keep_for_reference(n: int, template: str, raw_s: str, raw_a: str) -> None:
        reason = out.result.exclusions[-1].reason
        out.result.reference_rows.append(
            _reference_row(version, out.namespace, n, template, raw_s, raw_a, axis, region, reason)
        )

    for n, row in enumerate(rows):
        template = row[BHED_SENTENCE].strip() if strip_sentences else row[BHED_SENTENCE]
        raw_s, raw_a = row[BHED_STEREO], row[BHED_ANTI]
        try:
            ts = parse_targets(raw_s, side="stereotypical")
            ta = parse_targets(raw_a, side="anti-stereotypical")
        except TargetError as exc:
            out.exclude(n, exc.reason, exc.detail)
            keep_for_reference(n, template, raw_s, raw_a)
            continue
        n_mask = len(mask_spans(template))
        if len(ts) != n_mask or len(ta) != n_mask:
            detail = (
                f"{_plural(len(ts), 'stereotypical target')}, "
                f"{_plural(len(ta), 'anti-stereotypical target')}, {n_mask} MASK"
            )
            out.exclude(n, "target_mask_mismatch", detail)
            keep_for_reference(n, template, raw_s, raw_a)
            continue
        text_s, text_a = fill_template(template, ts), fill_template(template, ta)
        if not out.add(
            n,
            text_s,
            text_a,
            axis=axis,
            region=region,
            targets_stereo=ts,
            targets_anti=ta,
            template=template,
            raw_stereo_cell=raw_s,
            raw_anti_cell=raw_a,
            errata=errata_by_row.get(n, ()),
        ):
            keep_for_reference(n, template, raw_s, raw_a)
    return out.result


def code_targets(cell: str) -> list[str]:
    """Targets the way the Indian-BhED code reads a cell: delete ``[``, ``]`` and ``'``,
    split on ``,``; each part stripped here (the code keeps the space, which only the
    ``cll-reference`` metric reproduces, from the raw cell)."""
    return [t.strip() for t in cell.replace("[", "").replace("]", "").replace("'", "").split(",")]


def code_fill(template: str, targets: Sequence[str]) -> str:
    """Each target replaces the first remaining ``MASK``, as the code's ``re.sub(count=1)``
    does: a surplus target is dropped, a surplus blank stays ``MASK`` (literal insertion
    here; the metric re-fills from the raw cells with the code's own ``re.sub``)."""
    out = template
    for target in targets:
        m = MASK.search(out)
        if m is None:
            break
        out = out[: m.start()] + target + out[m.end() :]
    return out


def _reference_row(
    version: BenchmarkVersion,
    namespace: str,
    n: int,
    template: str,
    raw_s: str,
    raw_a: str,
    axis: str,
    region: str,
    reason: str,
) -> Item:
    ts, ta = code_targets(raw_s), code_targets(raw_a)
    text_s, text_a = code_fill(template, ts), code_fill(template, ta)
    payload = {"reference_row": True, "excluded_as": reason, "source_row": n}
    return payload_pair(
        namespace,
        version,
        n,
        "pair",
        payload,
        (text_s, text_a),
        axis=axis,
        region=region,
        targets_stereo=tuple(ts),
        targets_anti=tuple(ta),
        template=template,
        raw_stereo_cell=raw_s,
        raw_anti_cell=raw_a,
    )


def parse_crows_pairs(
    rows: Sequence[Mapping[str, str]],
    *,
    version: BenchmarkVersion,
    region: str,
    errata_by_row: Mapping[int, tuple[str, ...]] | None = None,
) -> ParsedRows:
    """CrowS-Pairs rows. ``sent_more`` is the more-biased sentence in both directions, so it
    is always ``text_stereo``; ``stereo_antistereo`` is kept as the item's direction and
    ``bias_type`` as its axis."""
    errata_by_row = errata_by_row or {}
    out = _Collector(version)
    for n, row in enumerate(rows):
        direction = row["stereo_antistereo"].strip()
        if direction not in CROWS_DIRECTIONS:
            out.exclude(
                n, "unknown_direction", f"stereo_antistereo is not one of {CROWS_DIRECTIONS}"
            )
            continue
        more, less = row["sent_more"], row["sent_less"]
        if not more.strip() or not less.strip():
            out.exclude(n, "empty_sentence", "sent_more or sent_less is empty")
            continue
        ts, ta = diff_targets(more, less)
        out.add(
            n,
            more,
            less,
            axis=row["bias_type"].strip(),
            region=region,
            targets_stereo=ts,
            targets_anti=ta,
            errata=errata_by_row.get(n, ()),
            direction=direction,
        )
    return out.result


def parse_rows(
    rows: Sequence[Mapping[str, str]],
    fmt: str,
    *,
    version: BenchmarkVersion,
    axis: str,
    region: str,
    errata_by_row: Mapping[int, tuple[str, ...]] | None = None,
    strip_sentences: bool = False,
) -> ParsedRows:
    """Dispatch on the manifest's ``format`` (CSV formats; the taxonomy is JSON and is
    read by ``monitor.families.pairs.taxonomy``)."""
    if fmt == "indian-bhed":
        return _parse_indian_bhed(rows, version, axis, region, errata_by_row or {}, strip_sentences)
    if fmt == "crows-pairs":
        return parse_crows_pairs(rows, version=version, region=region, errata_by_row=errata_by_row)
    raise DataIntegrityError(f"{version.benchmark}: unknown benchmark format {fmt!r}")
