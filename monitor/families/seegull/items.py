"""A SeeGULL Multilingual stereotypes file → items (reads bytes only; pure otherwise).

The rule (issue 48), applied to one language's file:

1. A row is a **stereotype** when at least two of its three annotators voted
   ``stereotype`` (every row has at least one). Rows with one vote are excluded
   (``fewer_than_two_votes``), but still count as rows of their identity below.
2. Each identity gets a kind from its English gloss (``identities``: nationality or
   Indian region); a stereotype of an identity of unknown or mixed kind is excluded
   (``identity_kind_unknown``). A repeated (identity, attribute) row is excluded
   (``duplicate``), as is a row with an empty identity or attribute (``empty_field``).
3. For each stereotype (S, a), the **contrasts** are the identities C of S's kind that
   have **no row at all** with attribute ``a`` in the file (any votes: an attribute one
   annotator tied to C is not a clean contrast). A stereotype without one is excluded
   (``no_contrast``). Each (S, C, a) is one item.

Which contrasts, by ``size`` (``run --size``; the seed is ``SEED``, recorded with every
run in the benchmark's sampling):

* ``full``: every contrast of every stereotype;
* ``default`` (no ``--size``): ``CONTRASTS`` contrasts per stereotype, drawn without
  replacement by a generator seeded with ``SEED``, the benchmark id, S and a, so a
  stereotype's draw does not depend on the rest of the file;
* ``mini``: whole identities: ``MINI_IDENTITIES`` identities of each kind drawn with the
  seed from those with a stereotype, every stereotype of each, and every contrast among
  the drawn identities of its kind. Rows of other identities are ``not_sampled`` (left
  out by design, not for a defect).

Item id: ``version.content_id(KIND, payload)`` over the file version and (S, C,
a, the kind, the row's votes and offensiveness), so a changed row gets a new id and
drift never pairs it with its old self. ``template`` is S, so the core's clustering by
template clusters on the stereotyped identity. Its ``texts`` are frame 1 naming S and C
with the attribute, built from the payload: what the core's tokenizer check reads.
"""

from __future__ import annotations

import csv
import io
import random
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from monitor.benchmarks.items import (
    BenchmarkVersion,
    Exclusion,
    Item,
    LoadedBenchmark,
    ParsedRows,
    check_row_count,
)
from monitor.benchmarks.manifest import BenchmarkSpec
from monitor.contract.capabilities import LoadRequest
from monitor.errors import DataIntegrityError, UserInputError
from monitor.families.seegull.frames import FRAMES, continuation, frames_label, prompt
from monitor.families.seegull.identities import KINDS, identity_kinds

KIND = "seegull-stereotype"


@dataclass(frozen=True)
class SeegullItem(Item):
    """A SeeGULL item: the core record (its content in ``payload``) that can say which
    sentences a model reads (frame 1 naming S, then C, with the attribute)."""

    kind: str = KIND

    def texts(self) -> tuple[str, ...]:
        p = self.payload
        lang, cont = str(p["language"]), continuation(str(p["attribute"]))
        return tuple(prompt(lang, 0, str(p[who])) + cont for who in ("identity", "contrast"))


FORMAT = "seegull-stereotypes-csv"
COLUMNS = (
    "identity",
    "attribute",
    "non_stereotype",
    "stereotype",
    "unsure",
    "mean_offensive_score",
    "translated_identity",
    "translated_attribute_list",
)
MIN_VOTES = 2
SEED = 48
CONTRASTS = 3
MINI_IDENTITIES = 3
SIZES = ("mini", "default", "full")
# Offensiveness bands over the file's mean score (−1 not offensive … 4 extremely).
BANDS = (("not-offensive", 0.0), ("mildly-offensive", 2.0), ("offensive", float("inf")))


def band(score: float) -> str:
    """The offensiveness band of a mean score: below 0, below 2, from 2 on."""
    return next(name for name, upper in BANDS if score < upper)


@dataclass(frozen=True)
class Row:
    """One parsed row of the file (``n``: its 0-based data row)."""

    n: int
    identity: str
    attribute: str
    votes: tuple[int, int, int]  # stereotype, non_stereotype, unsure
    offensive: float
    identity_en: str
    attribute_en: str


def _rows(text: str, name: str) -> list[Row]:
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise DataIntegrityError(f"{name}: the header is not {', '.join(COLUMNS)}")
    out = []
    for n, r in enumerate(reader):
        try:
            votes = (int(r["stereotype"]), int(r["non_stereotype"]), int(r["unsure"]))
            offensive = float(r["mean_offensive_score"])
        except (TypeError, ValueError):
            raise DataIntegrityError(
                f"{name}: row {n} has a vote or score that is not a number"
            ) from None
        out.append(
            Row(
                n,
                (r["identity"] or "").strip(),
                (r["attribute"] or "").strip(),
                votes,
                offensive,
                (r["translated_identity"] or "").strip(),
                (r["translated_attribute_list"] or "").strip(),
            )
        )
    return out


def _size(options: Mapping[str, Any] | None, name: str) -> str:
    size = str((options or {}).get("size") or "default")
    if size not in SIZES:
        raise UserInputError(f"{name}: unknown size {size!r}; use {', '.join(SIZES)}")
    return size


def load(request: LoadRequest) -> LoadedBenchmark:
    """The pinned file as items by the rule in the module docstring."""
    spec, data, version, options = request.spec, request.data, request.version, request.options
    name = f"{spec.id} ({spec.path})"
    if spec.options:
        raise UserInputError(f"{name}: this benchmark takes no manifest options")
    if spec.language not in FRAMES:
        raise UserInputError(f"{name}: no frames for language {spec.language!r}")
    size = _size(options, name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DataIntegrityError(f"{name}: not UTF-8") from None
    rows = _rows(text, name)
    check_row_count(rows, spec.rows, name=name)

    glosses: dict[str, set[str]] = defaultdict(set)
    attributes_of: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        glosses[r.identity].add(r.identity_en)
        attributes_of[r.identity].add(r.attribute)
    kind_of = identity_kinds(glosses)

    exclusions: list[Exclusion] = []
    stereotypes: list[Row] = []
    seen: set[tuple[str, str]] = set()
    for r in rows:
        if not r.identity or not r.attribute:
            exclusions.append(version.excluded(r.n, "empty_field", "identity or attribute empty"))
        elif (r.identity, r.attribute) in seen:
            exclusions.append(version.excluded(r.n, "duplicate", "repeats an earlier row"))
        elif r.votes[0] < MIN_VOTES:
            exclusions.append(
                version.excluded(
                    r.n,
                    "fewer_than_two_votes",
                    f"{r.votes[0]} of 3 annotators voted stereotype",
                )
            )
        elif kind_of[r.identity] not in KINDS:
            exclusions.append(
                version.excluded(
                    r.n,
                    "identity_kind_unknown",
                    f"the gloss names no nationality or Indian region ({kind_of[r.identity]})",
                )
            )
        else:
            stereotypes.append(r)
        seen.add((r.identity, r.attribute))

    by_kind: dict[str, list[str]] = defaultdict(list)
    for identity in dict.fromkeys(r.identity for r in rows if r.identity):
        by_kind[kind_of[identity]].append(identity)

    def contrasts(r: Row) -> list[str]:
        return [
            c
            for c in by_kind[kind_of[r.identity]]
            if c != r.identity and r.attribute not in attributes_of[c]
        ]

    drawn: set[str] | None = None
    if size == "mini":
        rng = random.Random(f"{SEED}:{spec.id}:mini")
        with_stereotypes = {r.identity for r in stereotypes}
        drawn = set()
        for kind in KINDS:
            pool = [i for i in by_kind[kind] if i in with_stereotypes]
            drawn |= set(rng.sample(pool, min(MINI_IDENTITIES, len(pool))))

    items: list[Item] = []
    not_sampled: list[int] = []
    for r in stereotypes:
        eligible = contrasts(r)
        if not eligible:
            exclusions.append(
                version.excluded(
                    r.n,
                    "no_contrast",
                    "every identity of its kind has a row with this attribute",
                )
            )
            continue
        if drawn is not None:
            if r.identity not in drawn:
                not_sampled.append(r.n)
                continue
            chosen = [c for c in eligible if c in drawn]
            if not chosen:
                not_sampled.append(r.n)
                continue
        elif size == "default" and len(eligible) > CONTRASTS:
            rng = random.Random(f"{SEED}:{spec.id}:{r.identity}:{r.attribute}")
            picked = set(rng.sample(eligible, CONTRASTS))
            chosen = [c for c in eligible if c in picked]
        else:
            chosen = eligible
        for c in chosen:
            items.append(_item(spec, version, r, c, kind_of, glosses))
    return LoadedBenchmark.of_entry(
        spec,
        version,
        ParsedRows(items, exclusions),
        source_rows=len(rows),
        language=spec.language,
        not_sampled=not_sampled,
        sampling={
            "size": size,
            "seed": SEED,
            "contrasts": "all" if size in ("full", "mini") else CONTRASTS,
            "mini_identities": MINI_IDENTITIES if size == "mini" else None,
            "frames": frames_label(spec.language),
        },
    )


def _item(
    spec: BenchmarkSpec,
    version: BenchmarkVersion,
    r: Row,
    contrast: str,
    kind_of: Mapping[str, str],
    glosses: Mapping[str, set[str]],
) -> Item:
    payload = {
        "identity": r.identity,
        "contrast": contrast,
        "attribute": r.attribute,
        "identity_kind": kind_of[r.identity],
        "votes": list(r.votes),
        "offensive": r.offensive,
        "band": band(r.offensive),
        "language": spec.language,
        "identity_en": r.identity_en,
        "contrast_en": sorted(glosses[contrast])[0],
        "attribute_en": r.attribute_en,
    }
    return SeegullItem(
        item_id=version.content_id(KIND, payload),
        benchmark=spec.id,
        axis=kind_of[r.identity],
        region=spec.region,
        benchmark_version=version.label,
        source_row=r.n,
        template=r.identity,
        kind=KIND,
        payload=payload,
    )
