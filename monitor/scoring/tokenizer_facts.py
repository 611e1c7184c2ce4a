"""What a run records about its model's tokenizer, so that drift can later decide from the
store alone which metrics are valid readings for that model.

Two facts decide it (read by the sentence-pair family's validity check):

* whether the tokenizer adds a BOS token by itself, and the text that token decodes to.
  ``cll-reference`` reproduces code that tokenises with the tokenizer's default special
  tokens and skips only a position that decodes to ``<s>``, ``" "`` or ``"  "``: a BOS
  that decodes to anything else (Gemma 3's ``<bos>``) is read as the target word's last
  log-prob a second time (the wrap-around index), so every prior is wrong;
* for each benchmark not in English, the share of its sentences' tokens that are byte
  fragments or unknown tokens (``monitor.scoring.coverage``): above the limit, the
  tokenizer cannot read the script and no likelihood metric is a reading of the words.

Recorded as ``environment["tokenizer"]`` by the local driver; a backend without a local
tokenizer (a served model) records nothing, and drift then marks no metric invalid.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from monitor.benchmarks.items import LoadedBenchmark
from monitor.scoring.coverage import token_coverage

PROBE = "a"  # any text the tokenizer reads as ordinary tokens


@dataclass(frozen=True)
class _Tokens:
    """A Hugging Face tokenizer in the shape ``token_coverage`` reads."""

    tokenizer: Any

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=add_special_tokens))

    def decode_token(self, token_id: int) -> str:
        return str(self.tokenizer.decode([int(token_id)]))


def added_bos(tokenizer: Any) -> str | None:
    """The text of the token the tokenizer puts before a text by itself (its BOS), or
    None when it adds none: ``encode`` with and without its default special tokens."""
    tokens = _Tokens(tokenizer)
    plain = tokens.encode(PROBE, add_special_tokens=False)
    special = tokens.encode(PROBE, add_special_tokens=True)
    if len(special) > len(plain) and special[1 : 1 + len(plain)] == plain:
        return tokens.decode_token(special[0])
    return None


def tokenizer_facts(tokenizer: Any, benches: Iterable[LoadedBenchmark] = ()) -> dict[str, Any]:
    """The run's ``environment["tokenizer"]``: ``adds_bos``, ``bos_text`` and, per
    benchmark not in English, ``fragment_share`` (rounded to 4 places)."""
    bos = added_bos(tokenizer)
    shares: dict[str, float] = {}
    for bench in benches:
        if bench.language == "en" or not bench.items:
            continue
        texts = [t for it in bench.items for t in it.texts()]
        shares[bench.benchmark] = round(token_coverage(_Tokens(tokenizer), texts).fragment_share, 4)
    return {"adds_bos": bos is not None, "bos_text": bos, "fragment_share": shares}
