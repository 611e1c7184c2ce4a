"""Whether a panel metric is a valid reading of a model, from what its run recorded.

A run of a causal LM records its tokenizer's facts (``environment["tokenizer"]``,
``monitor.scoring.tokenizer_facts``). Two rules read them:

* ``cll-reference`` reproduces code that skips a BOS position only when it decodes to
  ``<s>`` (or a space token). A tokenizer that adds a BOS with other text (Gemma 3:
  ``<bos>``) has that position read as the target word's last log-prob again, through
  the code's wrap-around index: each target's prior counts its last token twice, and
  the variant's rate is no reading of the model (SmolLM2 and GPT-2 add no BOS; a
  Llama-style ``<s>`` is skipped as the code intends);
* a tokenizer that cannot read a benchmark's script (more than
  ``coverage.MAX_FRAGMENT_SHARE`` of its tokens byte fragments) makes no likelihood
  metric valid on that benchmark (docs/hindi.md; such runs are normally refused before
  they are recorded).

Runs that recorded no tokenizer facts (before this rule, served models, imports) are
taken as valid: nothing is marked invalid without evidence. Pure: run fields in, reasons
out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from monitor.families.pairs.cll_reference import CLL_REFERENCE, SKIPPED_TOKEN_TEXTS
from monitor.scoring.coverage import MAX_FRAGMENT_SHARE


def tokenizer_of(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """The tokenizer facts a run recorded (empty when it recorded none)."""
    env = fields.get("environment")
    if isinstance(env, str):
        try:
            env = json.loads(env)
        except ValueError:
            return {}
    facts = env.get("tokenizer") if isinstance(env, Mapping) else None
    return facts if isinstance(facts, Mapping) else {}


def invalid_reason(metric: str, benchmark: str, facts: Mapping[str, Any]) -> str | None:
    """Why ``metric`` is not a valid reading on ``benchmark`` for a model whose tokenizer
    has ``facts``; None when it is (or nothing says otherwise)."""
    share = (facts.get("fragment_share") or {}).get(benchmark)
    if isinstance(share, int | float) and share > MAX_FRAGMENT_SHARE:
        return (
            f"its tokenizer cannot read {benchmark}'s script ({share:.0%} of tokens are byte "
            f"fragments; the limit is {MAX_FRAGMENT_SHARE:.0%})"
        )
    bos = facts.get("bos_text")
    if metric == CLL_REFERENCE and facts.get("adds_bos") and bos not in SKIPPED_TOKEN_TEXTS:
        return (
            f"its tokenizer adds a BOS token ({bos!r}) that the reference code does not skip: "
            "that position is read as each target word's last log-prob again, so every "
            "prior is wrong"
        )
    return None


def pair_invalid_reason(
    metric: str,
    benchmark: str,
    models: Mapping[str, Mapping[str, Any]],
) -> str | None:
    """Why ``metric`` is not valid for one of the compared models (model name → its
    tokenizer facts), naming the model; None when it is valid for every one."""
    for model, facts in models.items():
        why = invalid_reason(metric, benchmark, facts)
        if why is not None:
            return f"{model}: {why}"
    return None
