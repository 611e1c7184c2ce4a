"""Whether a model's tokenizer can represent a benchmark's script, decided before scoring.

A byte-level BPE tokenizer trained on English (SmolLM2's) has no tokens for Devanagari:
it splits every Hindi character into two or three byte tokens, none of which is a
character on its own. Likelihoods of such byte soup say nothing about the model's view
of the sentence, so the monitor refuses to score it rather than report a number.

The rule, from the tokenizer alone: tokenise the benchmark's sentences and decode every
token by itself. A token that decodes to an incomplete character (U+FFFD: a UTF-8 byte
of a character split across tokens, or a SentencePiece byte-fallback token such as
``<0xE0>``) or to the unknown token is a *fragment*. If more than ``MAX_FRAGMENT_SHARE``
of the tokens are fragments, the model is refused for that benchmark with the measured
share in the reason. Measured on this project's Hindi test set (``tests/data``):
SmolLM2-135M 57% fragments (0.9 characters per token), Gemma-3-270m 0% (3.5 characters
per token); on English Indian-BhED both 0%. The threshold sits far from both.

Only benchmarks whose manifest ``language`` is not English are checked: every tokenizer
the monitor supports covers English, and checking would cost a decode per distinct token.
A family whose benchmarks are one language each may have the unreadable ones skipped,
each with its reason, instead of the snapshot refused (``Family.skips_unreadable``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from monitor.benchmarks.items import LoadedBenchmark

MAX_FRAGMENT_SHARE = 0.10
UNKNOWN_TEXTS = frozenset({"<unk>", "[UNK]", "<|unk|>"})
REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class Coverage:
    """How a tokenizer splits a set of texts."""

    tokens: int
    fragments: int
    characters: int

    @property
    def fragment_share(self) -> float:
        return self.fragments / self.tokens if self.tokens else 0.0

    @property
    def chars_per_token(self) -> float:
        return self.characters / self.tokens if self.tokens else 0.0


def token_coverage(backend, texts: Iterable[str]) -> Coverage:
    """Tokens, fragments and characters of ``texts`` under ``backend``'s tokenizer."""
    tokens = fragments = characters = 0
    decoded: dict[int, bool] = {}
    for text in dict.fromkeys(texts):
        ids = backend.encode(text, add_special_tokens=False)
        tokens += len(ids)
        characters += len(text)
        for t in ids:
            if t not in decoded:
                piece = backend.decode_token(t)
                decoded[t] = REPLACEMENT in piece or piece.strip() in UNKNOWN_TEXTS
            fragments += decoded[t]
    return Coverage(tokens, fragments, characters)


def unreadable(backend, benches: Iterable[LoadedBenchmark]) -> dict[str, str]:
    """Each of ``benches`` whose script ``backend``'s tokenizer cannot represent, with the
    reason (empty when it may score them all), in the benchmarks' order."""
    out: dict[str, str] = {}
    for bench in benches:
        if bench.language == "en" or not bench.items:
            continue
        texts = [t for it in bench.items for t in it.texts()]
        cov = token_coverage(backend, texts)
        if cov.fragment_share > MAX_FRAGMENT_SHARE:
            out[bench.benchmark] = (
                f"its tokenizer cannot represent {bench.benchmark} (language "
                f"{bench.language!r}): {cov.fragment_share:.0%} of the {cov.tokens} tokens of "
                f"its sentences are byte fragments or unknown tokens "
                f"({cov.chars_per_token:.1f} characters per token; the limit is "
                f"{MAX_FRAGMENT_SHARE:.0%}), so its likelihoods would score bytes, not words"
            )
    return out


def unsupported(backend, benches: Iterable[LoadedBenchmark]) -> str | None:
    """Why ``backend`` must not score one of ``benches`` (None when it may score them all):
    the first reason of :func:`unreadable`."""
    return next(iter(unreadable(backend, benches).values()), None)
