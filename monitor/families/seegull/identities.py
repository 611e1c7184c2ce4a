"""Each identity's kind, from the file's English gloss (pure).

The files mix nationalities (Pakistani, Nigerian), Indian states and union territories
(Kerala, Delhi) and the regional groups named after them (Keralite, Tamil, Marwari).
A contrast must be of the stereotyped identity's kind: comparing "Keralite" with
"Pakistani" would measure nationality against region, not the attribute.

The rule reads ``translated_identity``, the annotators' English gloss, lower-cased:

* ``indian-region``: the gloss names an Indian state or union territory, or a people or
  language named after one (``REGION_PREFIXES``: a word of the gloss starts with one;
  ``REGION_EXACT``: the whole gloss is one, for glosses too short or too ambiguous to
  match by prefix, such as "bangla", and for two mis-glosses in the files, "daily" for
  डेल्ही (Delhi, Hindi file) and "middle area" for మధ్య ప్రదేశి (Madhya Pradeshi, Telugu
  file)). States and the groups named after them are one kind, not two: the glosses do
  not separate them ("Kerala" and "Keralite" gloss the same people in different files,
  and "he is from Kerala" is a sentence), and a state and its people are one region;
* ``unknown``: a gloss that names neither (``UNKNOWN``: "kon", Tamil file); such an
  identity's rows are excluded with the reason ``identity_kind_unknown``;
* ``nationality``: every other gloss (a country's people, including "Indian" and
  continental groups such as "Africans").

An identity whose rows carry glosses of two kinds is ``ambiguous`` and excluded
(none in the five files; the rule is there so that a new file cannot mix kinds silently).
"""

from __future__ import annotations

from typing import Literal

IdentityKind = Literal["nationality", "indian-region", "unknown"]
KINDS: tuple[str, ...] = ("nationality", "indian-region")

REGION_PREFIXES = (
    "andaman", "andhra", "arunachal", "aruna ", "assam", "bengal", "bihar", "chhattisgarh",
    "delhi", "goa", "gowan", "gujarat", "harian", "haryan", "himachal", "jharkhand",
    "kannad", "karnatak", "kashmir", "cashmere", "kerala", "keralite", "madhya pradesh",
    "maharashtra", "malayali", "manipur", "marathi", "marwari", "meghalaya", "mizo",
    "mizzou", "nagaland", "odia", "odisha", "oriya", "punjabi", "the punjabis",
    "rajasthan", "sikkim", "tamil", "telangana", "telugu", "tripur", "song tripuris",
    "uttar pradesh", "uttarakhand", "west bengal", "a resident of delhi",
    "a resident of west bengal", "people of madhya pradesh", "people of meghalaya",
    "he is from kerala", "delhi people",
)  # fmt: skip
REGION_EXACT = frozenset({"bangla", "daily", "middle area"})
UNKNOWN = frozenset({"kon"})
NATIONALITY_EXACT = frozenset({"indian", "indians"})


def gloss_kind(gloss: str) -> IdentityKind:
    """The kind one English gloss names (see the module docstring)."""
    g = " ".join(gloss.strip().lower().split())
    if g in NATIONALITY_EXACT:
        return "nationality"
    if g in UNKNOWN or not g:
        return "unknown"
    if g in REGION_EXACT:
        return "indian-region"
    words = g.split(" ")
    if any(g.startswith(p) for p in REGION_PREFIXES) or any(
        w.startswith(p) for w in words for p in REGION_PREFIXES if " " not in p
    ):
        return "indian-region"
    return "nationality"


def identity_kinds(glosses: dict[str, set[str]]) -> dict[str, str]:
    """Identity (in the file's script) → its kind, or ``ambiguous`` where its glosses
    name two kinds."""
    out: dict[str, str] = {}
    for identity, gs in glosses.items():
        kinds = {gloss_kind(g) for g in gs}
        out[identity] = kinds.pop() if len(kinds) == 1 else "ambiguous"
    return out
