"""Metric names, implementation versions and the model kind each one needs.

A name is one algorithm forever; changing what a metric computes means a new version
(or a new name), so stored scores of two algorithms are never compared as one.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.errors import UserInputError
from monitor.metrics.aul import AUL, AUL_VERSION
from monitor.metrics.cll import CLL, CLL_VERSION, ULL, ULL_VERSION
from monitor.metrics.cll_reference import CLL_REFERENCE, CLL_REFERENCE_VERSION
from monitor.metrics.forced_choice import FORCED_CHOICE, FORCED_CHOICE_VERSION
from monitor.metrics.sampling import SAMPLED_CHOICE, SAMPLED_CHOICE_VERSION


@dataclass(frozen=True)
class MetricInfo:
    name: str
    version: str
    model_kind: str  # "hf-causal" | "hf-mlm" | "openai-chat"
    summary: str
    also_kinds: tuple[str, ...] = ()  # further snapshot kinds that can be scored with it


METRICS: dict[str, MetricInfo] = {
    m.name: m
    for m in (
        MetricInfo(
            CLL,
            CLL_VERSION,
            "hf-causal",
            "conditional log-likelihood ln P(S) - ln P(targets), BOS-conditioned, "
            "one-space target priors, ties reported as ties",
        ),
        MetricInfo(
            CLL_REFERENCE,
            CLL_REFERENCE_VERSION,
            "hf-causal",
            "Indian-BhED's original CLL code reproduced quirk for quirk; ties count as stereo",
        ),
        MetricInfo(
            ULL,
            ULL_VERSION,
            "hf-causal",
            "unconditional sentence log-likelihood difference ln P(S_stereo) - ln P(S_anti)",
        ),
        MetricInfo(
            AUL,
            AUL_VERSION,
            "hf-mlm",
            "All Unmasked Likelihood: mean log P(w_i | unmasked sentence) per token",
        ),
        MetricInfo(
            FORCED_CHOICE,
            FORCED_CHOICE_VERSION,
            "openai-chat",
            "fill-the-blank with one of two options at temperature 0; option masses from "
            "the top-20 log-probs by prefix matching, ambiguous tokens kept apart, both "
            "option orders averaged",
            also_kinds=("openai-responses",),
        ),
        MetricInfo(
            SAMPLED_CHOICE,
            SAMPLED_CHOICE_VERSION,
            "openai-chat",
            "N sampled answers per item and order parsed to stereo/anti/neutral/refusal/"
            "other, majority vote; neutral split reported beside the plain rate",
            also_kinds=("openai-responses",),
        ),
    )
}

DEFAULT_METRIC = {
    "hf-causal": CLL,
    "hf-mlm": AUL,
    "openai-chat": FORCED_CHOICE,
    "openai-responses": FORCED_CHOICE,
}


def get_metric(name: str) -> MetricInfo:
    try:
        return METRICS[name]
    except KeyError:
        known = ", ".join(sorted(METRICS))
        raise UserInputError(f"unknown metric {name!r}; known metrics: {known}") from None


def metric_info(name: str) -> tuple[str, str, str]:
    """(name, version, model_kind) of a metric; unknown names are a ``UserInputError``."""
    m = get_metric(name)
    return m.name, m.version, m.model_kind


def metrics_for_kind(kind: str) -> list[str]:
    """Metric names valid for a snapshot kind, the default first."""
    names = [m.name for m in METRICS.values() if m.model_kind == kind or kind in m.also_kinds]
    default = DEFAULT_METRIC.get(kind)
    return sorted(names, key=lambda n: (n != default, n))


def default_metric(kind: str) -> str:
    try:
        return DEFAULT_METRIC[kind]
    except KeyError:
        raise UserInputError(f"no metric for model kind {kind!r}") from None
