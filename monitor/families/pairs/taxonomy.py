"""Stereotype association items from the Indic-Bias taxonomy (AI4Bharat, MIT licence).

The taxonomy (``stereotype_map.json``) lists 1,717 stereotypes of 84 identities in four
types (religion, region, caste, tribe). For each stereotype of identity X we build
*identity pairs*: one of our own neutral templates (``data/indic_taxonomy_templates.toml``)
filled with X (the "stereotypical" sentence) and with a partner Y of the same type (the
"anti-stereotypical" one). The pair outcome says whether the model attributes the
stereotype to X rather than Y; the share of pairs X wins is X's stereotype association
rate. Partners, the sampled stereotypes and the template of each pair come from
generators seeded by (seed, stereotype id), so the items depend only on the pinned files
and the options, never on the order anything runs in.

Quirks of the files, handled here and documented in README:

* The ``tribe`` list of ``identites.json`` mixes the tribal identities (which have
  stereotypes) with ten dominant comparators (Brahmin, Tamil, Rajput, ...) which have
  none; ``tribe_combinations.json`` pairs every tribe with those comparators. A tribe's
  partners are therefore its comparators from that file (all ten for the two tribal
  entries the file does not list, "Bhumihar" and "Tribals"), never another tribe.
* Eight names are both a region or caste and a tribe comparator (Brahmin, Tamil, ...).
  An identity is (type, name): "caste/Brahmin" and "tribe/Brahmin" are different
  subjects with different partners and rates. "Iyengar" (tribe comparator) and
  "Iyyengar" (caste) are spelt differently in the files and kept as spelt.
* A partner whose name the stereotype itself mentions ("... hate muslims" of one
  religion paired with "Muslim") would make a nonsense sentence: such partners are not
  drawn. Names match as whole words only (``Ho`` must not match "house"; names of three
  letters or fewer also match case-sensitively), with an optional plural "s"/"es".
* Three stereotypes are marked "(duplicate)" in the file and five repeat an earlier one
  of the same identity word for word; they are excluded with reason
  ``duplicate_stereotype``.

Pure: bytes in, items out. Stereotype texts are never put in messages.
"""

from __future__ import annotations

import json
import random
import re
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, Literal

from monitor import paths
from monitor.benchmarks.items import (
    BenchmarkVersion,
    Exclusion,
    Item,
    normalise_text,
)
from monitor.errors import DataIntegrityError, UserInputError
from monitor.families.pairs.records import payload_pair

KIND = "identity-pair"
TYPES = ("religion", "region", "caste", "tribe")
MASK = "MASK"
STEREOTYPE_SLOT = "{stereotype}"
DUPLICATE_MARK = re.compile(r"\(\s*duplicate\s*\)\s*$", re.IGNORECASE)
COMPANIONS = ("identities", "tribe_pairs")


@dataclass(frozen=True)
class TaxonomyOptions:
    """How many items to build (``[benchmarks.<id>.options]`` in the manifest).

    ``partners``: identities paired with each stereotype (k). ``templates``: ``"one"``
    (one template per pair, drawn with the seed) or ``"all"`` (every template).
    ``per_identity``: stereotypes sampled per identity (0 = all). ``seed`` seeds every
    draw and is recorded in each item's payload.
    """

    partners: int = 2
    templates: Literal["one", "all"] = "one"
    per_identity: int = 0
    seed: int = 12

    @classmethod
    def from_options(cls, options: Mapping[str, Any], *, name: str) -> TaxonomyOptions:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise UserInputError(
                f"{name}: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        out = cls(**dict(options))
        if not isinstance(out.partners, int) or out.partners < 1:
            raise UserInputError(f"{name}: option partners must be a positive integer")
        if out.templates not in ("one", "all"):
            raise UserInputError(f"{name}: option templates must be 'one' or 'all'")
        if not isinstance(out.per_identity, int) or out.per_identity < 0:
            raise UserInputError(f"{name}: option per_identity must be 0 (all) or more")
        if not isinstance(out.seed, int):
            raise UserInputError(f"{name}: option seed must be an integer")
        return out

    def as_dict(self) -> dict[str, Any]:
        """The options as recorded in a run's sampling, in their declared order."""
        return asdict(self)


@dataclass(frozen=True)
class Template:
    id: str
    text: str


@dataclass(frozen=True)
class TemplateSet:
    version: str
    templates: tuple[Template, ...]
    phrases: Mapping[str, str] = field(default_factory=dict)

    def phrase(self, name: str) -> str:
        return self.phrases.get(name, name)


@dataclass(frozen=True)
class Stereotype:
    """One stereotype of one identity; ``row`` is its position in file order (the
    benchmark's source row) and ``id`` reads ``type:identity:n`` (n-th of the identity)."""

    row: int
    id: str
    type: str
    identity: str
    category: str
    text: str


@dataclass(frozen=True)
class Taxonomy:
    stereotypes: tuple[Stereotype, ...]
    identities: Mapping[str, tuple[str, ...]]  # type -> names (identites.json)
    tribe_partners: Mapping[str, tuple[str, ...]]  # tribe -> comparators

    def partner_pool(self, type_: str, identity: str) -> tuple[tuple[str, ...], str]:
        """(candidate partners, how they were chosen) for a stereotype of ``identity``."""
        if type_ == "tribe":
            comparators = tuple(sorted({c for cs in self.tribe_partners.values() for c in cs}))
            listed = self.tribe_partners.get(identity)
            if listed:
                return tuple(sorted(listed)), "tribe_combinations.json"
            return comparators, "all tribe comparators (tribe not in tribe_combinations.json)"
        return (
            tuple(sorted(n for n in self.identities.get(type_, ()) if n != identity)),
            f"identities of type {type_}",
        )


def default_templates_path() -> Path:
    return paths.config_dir() / "indic_taxonomy_templates.toml"


@cache
def _load_templates_cached(path: str, mtime_ns: int) -> TemplateSet:
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserInputError(f"cannot read taxonomy templates {path}: {exc}") from None
    entries = raw.get("template")
    if not isinstance(entries, list) or not entries:
        raise UserInputError(f"taxonomy templates {path}: no [[template]] entries")
    templates = []
    for e in entries:
        tid, text = e.get("id"), e.get("text")
        if not isinstance(tid, str) or not isinstance(text, str):
            raise UserInputError(f"taxonomy templates {path}: every template needs id and text")
        if text.count(MASK) != 1 or text.count(STEREOTYPE_SLOT) != 1:
            raise UserInputError(
                f"taxonomy templates {path}: template {tid!r} needs exactly one MASK and one "
                f"{STEREOTYPE_SLOT}"
            )
        templates.append(Template(tid, text))
    if len({t.id for t in templates}) != len(templates):
        raise UserInputError(f"taxonomy templates {path}: template ids must be unique")
    phrases = raw.get("phrases", {})
    if not isinstance(phrases, dict) or not all(isinstance(v, str) for v in phrases.values()):
        raise UserInputError(f"taxonomy templates {path}: [phrases] maps names to text")
    return TemplateSet(str(raw.get("version", "1")), tuple(templates), dict(phrases))


def load_templates(path: Path | None = None) -> TemplateSet:
    """Our own neutral templates (``data/indic_taxonomy_templates.toml``)."""
    path = Path(path) if path is not None else default_templates_path()
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        raise UserInputError(f"taxonomy templates {path} not found") from None
    return _load_templates_cached(str(path), mtime)


def _json(data: bytes, name: str) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataIntegrityError(f"{name}: not valid UTF-8 JSON ({exc})") from None


def read_taxonomy(
    stereotype_map: bytes, identities: bytes, tribe_pairs: bytes, *, name: str
) -> Taxonomy:
    """Parse the three pinned files; a file of the wrong shape is a ``DataIntegrityError``."""
    smap = _json(stereotype_map, f"{name} (stereotype map)")
    ids = _json(identities, f"{name} (identities)")
    pairs = _json(tribe_pairs, f"{name} (tribe combinations)")
    if not isinstance(smap, dict) or not all(isinstance(v, dict) for v in smap.values()):
        raise DataIntegrityError(f"{name}: the stereotype map is not type -> identity -> ...")
    if not isinstance(ids, dict) or not all(isinstance(v, list) for v in ids.values()):
        raise DataIntegrityError(f"{name}: the identity list is not type -> [names]")
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
    ):
        raise DataIntegrityError(f"{name}: tribe combinations are not [comparator, tribe] pairs")
    unknown = sorted(set(smap) - set(TYPES))
    if unknown:
        raise DataIntegrityError(f"{name}: unknown identity type(s) {', '.join(unknown)}")
    stereotypes: list[Stereotype] = []
    for type_, by_identity in smap.items():
        for identity, by_category in by_identity.items():
            if not isinstance(by_category, dict):
                raise DataIntegrityError(f"{name}: {type_}/{identity} is not category -> [...]")
            n = 0
            for category, texts in by_category.items():
                if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                    raise DataIntegrityError(
                        f"{name}: {type_}/{identity}/{category} is not a list of strings"
                    )
                for text in texts:
                    stereotypes.append(
                        Stereotype(
                            len(stereotypes),
                            f"{type_}:{identity}:{n}",
                            type_,
                            identity,
                            category,
                            text,
                        )
                    )
                    n += 1
    tribe_partners: dict[str, list[str]] = {}
    for comparator, tribe in pairs:
        tribe_partners.setdefault(tribe, []).append(comparator)
    return Taxonomy(
        tuple(stereotypes),
        {t: tuple(v) for t, v in ids.items()},
        {t: tuple(v) for t, v in tribe_partners.items()},
    )


def mentions(name: str, text: str) -> bool:
    """Whether ``text`` mentions identity ``name`` as a whole word (plural "s"/"es" allowed).

    Names of three letters or fewer ("Ho", "Jat", "OBC") also match case-sensitively, so
    an everyday word spelt the same in lower case is not taken for them.
    """
    pattern = rf"(?<![A-Za-z]){re.escape(name)}(?:e?s)?(?![A-Za-z])"
    flags = 0 if len(name) <= 3 else re.IGNORECASE
    return re.search(pattern, text, flags) is not None


@dataclass
class BuiltItems:
    items: list[Item]
    exclusions: list[Exclusion]
    not_sampled: list[int]


def build_items(
    taxonomy: Taxonomy,
    templates: TemplateSet,
    options: TaxonomyOptions,
    *,
    version: BenchmarkVersion,
    namespace: str,
    region: str = "india",
) -> BuiltItems:
    """Identity-pair items for every (sampled) stereotype × partner × template."""
    out = BuiltItems([], [], [])
    usable: dict[tuple[str, str], list[Stereotype]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for s in taxonomy.stereotypes:
        key = (s.type, s.identity, normalise_text(s.text).casefold())
        if DUPLICATE_MARK.search(s.text):
            out.exclusions.append(
                version.excluded(s.row, "duplicate_stereotype", "marked '(duplicate)' in the file")
            )
            continue
        if key in seen:
            out.exclusions.append(
                version.excluded(
                    s.row,
                    "duplicate_stereotype",
                    f"same stereotype of the same identity as row {seen[key]}",
                )
            )
            continue
        seen[key] = s.row
        usable.setdefault((s.type, s.identity), []).append(s)

    chosen: list[Stereotype] = []
    for (type_, identity), group in usable.items():
        if options.per_identity and len(group) > options.per_identity:
            rng = random.Random(f"{options.seed}:{type_}:{identity}")
            keep = {s.row for s in rng.sample(group, options.per_identity)}
            out.not_sampled += [s.row for s in group if s.row not in keep]
            group = [s for s in group if s.row in keep]
        chosen += group
    chosen.sort(key=lambda s: s.row)

    for s in chosen:
        pool, how = taxonomy.partner_pool(s.type, s.identity)
        candidates = [p for p in pool if not mentions(p, s.text)]
        if not candidates:
            out.exclusions.append(
                version.excluded(s.row, "no_partner", "the stereotype mentions every partner")
            )
            continue
        rng = random.Random(f"{options.seed}:{s.id}")
        partners = rng.sample(candidates, min(options.partners, len(candidates)))
        for other in partners:
            use = (
                templates.templates
                if options.templates == "all"
                else (rng.choice(templates.templates),)
            )
            for t in use:
                out.items.append(
                    _item(s, other, t, templates, options, how, version, namespace, region)
                )
    return out


def _item(
    s: Stereotype,
    other: str,
    t: Template,
    templates: TemplateSet,
    options: TaxonomyOptions,
    how: str,
    version: BenchmarkVersion,
    namespace: str,
    region: str,
) -> Item:
    template = t.text.replace(STEREOTYPE_SLOT, s.text.strip())
    mine, theirs = templates.phrase(s.identity), templates.phrase(other)
    text_s, text_a = template.replace(MASK, mine), template.replace(MASK, theirs)
    payload = {
        "identity": s.identity,
        "other": other,
        "identity_type": s.type,
        "stereotype_id": s.id,
        "category": s.category,
        "template_id": t.id,
        "templates_version": templates.version,
        "seed": options.seed,
        "partner_pool": how,
    }
    return payload_pair(
        namespace,
        version,
        s.row,
        KIND,
        payload,
        (text_s, text_a),
        axis=s.type,
        region=region,
        targets_stereo=(mine,),
        targets_anti=(theirs,),
        template=template,
        raw_stereo_cell=str([mine]),
        raw_anti_cell=str([theirs]),
    )
