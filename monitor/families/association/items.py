"""Word-set benchmarks for association tests (WEAT, SEAT): files → items, no file system.

Three formats:

* ``weat-json``: one test per file, one JSON object ``{"targ1": {"category", "examples"},
  "targ2": …, "attr1": …, "attr2": …}``: bias-bench's English WEAT/SEAT files (from
  sent-bias) and the soc_bias Hindi files. targ1/targ2 are the targets X/Y, attr1/attr2
  the attributes A/B. A ``sent-*`` file's examples are sentences; they are embedded whole.
* ``sochindi-weat``: the 17 tests of the SocHindi notebook (Malik et al. 2022), as
  extracted into ``sochindi_wordlists.extracted.json``: X, Y, A, B word lists per test.
* ``sochindi-seat``: the same tests with every word put into the notebook's Hindi
  templates (its ``_`` slot), one sentence per word and template.

Every listed term becomes one item of kind ``word-set-term`` (its id hashes the test,
the role, the text and the occurrence), so nothing is dropped: a term listed twice in a
set is two items (``occurrence`` 0 and 1), as the notebook computes; a term listed in
both attribute sets (SocHindi tests 2 and 3 list वह, "he" and "she", in A and B) or in
both target sets is kept in both and marked ``shared_with``. The association metric
lists both in every test's result.

Roles. WEAT's targets (X, Y) are the concepts compared, its attributes (A, B) the
qualities. In SocHindi tests 12, 13, 14 and 17 the notebook puts the pleasant/unpleasant
words in X/Y and the group terms in A/B; since d is not symmetric in the two pairs of
sets, those four tests are scored with the roles put back (the file's A/B become the
targets X/Y, its X/Y the attributes A/B) and each term keeps its ``source_role``.
A positive d then means, in every test, that the first target set goes with the first
attribute set. SEAT templates follow the notebook: X and Y words use X's template type
(the notebook never sets Y's own type correctly), A and B words use A's (B's is never
set).

Messages never quote a term: benchmark terms include slurs and identity words.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from monitor.benchmarks.items import (
    BenchmarkVersion,
    Exclusion,
    Item,
    LoadedBenchmark,
    normalise_text,
)
from monitor.contract.capabilities import LoadRequest
from monitor.errors import DataIntegrityError

ITEM_KIND = "word-set-term"
WORD_SET_FORMATS = ("weat-json", "sochindi-weat", "sochindi-seat")
ROLES = ("X", "Y", "A", "B")
WEAT_JSON_KEYS = {"targ1": "X", "targ2": "Y", "attr1": "A", "attr2": "B"}
# SocHindi tests whose X/Y hold the attribute words and A/B the group terms (see above).
SOCHINDI_SWAPPED = frozenset({"12", "13", "14", "17"})
SOCHINDI_GROUPS = {
    "gender": "gender",
    "caste": "caste",
    "religion": "religion",
    "extra (occupation/class)": "occupation",
}
SLOT = "_"


def decode_json(data: bytes, *, name: str) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DataIntegrityError(f"{name}: not valid UTF-8 ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise DataIntegrityError(
            f"{name}: not valid JSON ({exc.msg} at line {exc.lineno})"
        ) from None


class _Builder:
    """Turns (test, role, text) triples into items and counts occurrences and overlaps."""

    def __init__(self, version: BenchmarkVersion, region: str) -> None:
        self.version = version
        self.region = region
        self.items: list[Item] = []
        self.exclusions: list[Exclusion] = []
        self.row = 0

    def add_test(self, test: str, sets: Mapping[str, Sequence[dict[str, Any]]]) -> None:
        """``sets``: role → entries with at least ``text`` (plus payload extras)."""
        texts = {
            role: {normalise_text(e["text"]) for e in entries} for role, entries in sets.items()
        }
        partner = {"X": "Y", "Y": "X", "A": "B", "B": "A"}
        for role in ROLES:
            seen: Counter[str] = Counter()
            for entry in sets.get(role, ()):
                row, self.row = self.row, self.row + 1
                text = normalise_text(entry["text"])
                if not text:
                    self.exclusions.append(
                        self.version.excluded(
                            row,
                            "empty_term",
                            f"test {test} set {role}: empty term",
                        )
                    )
                    continue
                payload = {**entry, "text": text, "test": test, "role": role}
                payload["occurrence"] = seen[text]
                seen[text] += 1
                if text in texts.get(partner[role], set()):
                    payload["shared_with"] = [partner[role]]
                self.items.append(
                    Item(
                        item_id=self.version.content_id(ITEM_KIND, payload),
                        benchmark=self.version.benchmark,
                        axis=test,
                        region=self.region,
                        benchmark_version=self.version.label,
                        source_row=row,
                        kind=ITEM_KIND,
                        payload=payload,
                    )
                )


def _examples(obj: Any, key: str, name: str) -> tuple[str, list[str]]:
    entry = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(entry, dict) or not isinstance(entry.get("examples"), list):
        raise DataIntegrityError(f"{name}: missing {key}.examples")
    examples = entry["examples"]
    if not all(isinstance(e, str) for e in examples):
        raise DataIntegrityError(f"{name}: {key}.examples must be strings")
    return str(entry.get("category", key)), examples


def count_terms(data: bytes, fmt: str, *, name: str) -> int:
    """Terms listed in the file (all sets of all tests): what the manifest's ``rows`` pins."""
    obj = decode_json(data, name=name)
    if fmt == "weat-json":
        return sum(len(_examples(obj, k, name)[1]) for k in WEAT_JSON_KEYS)
    tests = _sochindi_tests(obj, name)
    return sum(len(t[r]["list"]) for t in tests.values() for r in ROLES)


def parse_weat_json(data: bytes, *, version: BenchmarkVersion, test: str, region: str) -> _Builder:
    name = f"{version.benchmark}"
    obj = decode_json(data, name=name)
    out = _Builder(version, region)
    sets: dict[str, list[dict[str, Any]]] = {}
    for key, role in WEAT_JSON_KEYS.items():
        category, examples = _examples(obj, key, name)
        sets[role] = [{"text": e, "set": category} for e in examples]
    out.add_test(test, sets)
    return out


def _sochindi_tests(obj: Any, name: str) -> dict[str, dict[str, Any]]:
    tests = obj.get("tests") if isinstance(obj, dict) else None
    if not isinstance(tests, dict) or not tests:
        raise DataIntegrityError(f"{name}: no 'tests' object")
    for number, test in tests.items():
        for role in ROLES:
            entry = test.get(role) if isinstance(test, dict) else None
            if not isinstance(entry, dict) or not isinstance(entry.get("list"), list):
                raise DataIntegrityError(f"{name}: test {number} lacks {role}.list")
    return tests


def sochindi_test_id(number: str, group: str) -> str:
    return f"t{int(number):02d}-{SOCHINDI_GROUPS.get(group, group.split()[0])}"


def parse_sochindi(data: bytes, *, version: BenchmarkVersion, region: str, seat: bool) -> _Builder:
    name = version.benchmark
    obj = decode_json(data, name=name)
    tests = _sochindi_tests(obj, name)
    templates = obj.get("seat_templates") if seat else None
    if seat and not isinstance(templates, dict):
        raise DataIntegrityError(f"{name}: no 'seat_templates' object")
    out = _Builder(version, region)
    for number in sorted(tests, key=int):
        test = tests[number]
        test_id = sochindi_test_id(number, str(test.get("group", "")))
        swapped = number in SOCHINDI_SWAPPED
        # file role -> scored role, and the template type each file role's words use
        scored = {"X": "A", "Y": "B", "A": "X", "B": "Y"} if swapped else {r: r for r in ROLES}
        types = {"X": test["X"].get("type"), "Y": test["X"].get("type")}
        types |= {"A": test["A"].get("type"), "B": test["A"].get("type")}
        sets: dict[str, list[dict[str, Any]]] = {}
        for file_role in ROLES:
            entries: list[dict[str, Any]] = []
            for word in test[file_role]["list"]:
                base = {"source_role": file_role, "group": test.get("group")}
                if not seat:
                    entries.append({**base, "text": word})
                    continue
                kind = types[file_role]
                slots = templates.get(kind) if templates else None
                if not isinstance(slots, list) or not slots:
                    raise DataIntegrityError(f"{name}: test {number}: no templates of type {kind}")
                for k, template in enumerate(slots):
                    tokens = [word if t == SLOT else t for t in template.split(" ")]
                    entries.append(
                        {**base, "text": " ".join(tokens), "term": word, "template": f"{kind}#{k}"}
                    )
            sets[scored[file_role]] = entries
        out.add_test(test_id, sets)
    return out


def parse_word_sets(
    data: bytes,
    fmt: str,
    *,
    version: BenchmarkVersion,
    axis: str,
    region: str,
) -> _Builder:
    """Dispatch on the manifest's ``format`` (one of ``WORD_SET_FORMATS``)."""
    if fmt == "weat-json":
        return parse_weat_json(data, version=version, test=axis, region=region)
    if fmt in ("sochindi-weat", "sochindi-seat"):
        return parse_sochindi(data, version=version, region=region, seat=fmt == "sochindi-seat")
    raise DataIntegrityError(f"{version.benchmark}: unknown word-set format {fmt!r}")


def load(request: LoadRequest) -> LoadedBenchmark:
    """The family's ``load`` hook: a word-set file (association tests), every listed term
    an item. The manifest's ``rows`` pins the number of terms; no options apply."""
    spec, data, version = request.spec, request.data, request.version
    name = f"{spec.id} ({spec.path})"
    terms = count_terms(data, spec.format, name=name)
    if terms != spec.rows:
        raise DataIntegrityError(f"{name}: {terms} terms, the manifest pins {spec.rows}")
    built = parse_word_sets(data, spec.format, version=version, axis=spec.axis, region=spec.region)
    return LoadedBenchmark.of_entry(
        spec,
        version,
        built,
        source_rows=built.row,  # term slots: a SEAT word fills one slot per template
    )
