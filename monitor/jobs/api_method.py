"""How an API run asks: the metric, samples per option order, and request parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.scoring.api_tasks import ChatRequest, PlannedRequest, asks_logprobs, chat_request
from monitor.snapshots.model import ApiSettings


@dataclass(frozen=True)
class Method:
    """How this run asks: metric, samples per order, and the request parameters."""

    metric: str
    samples: int
    temperature: float | None
    max_tokens: int
    top_logprobs: int
    seed: int | None

    def request(self, planned: PlannedRequest) -> ChatRequest:
        """The wire request for a planned one with this run's parameters: the one way
        both the direct calls and the Batch API's lines are built."""
        return chat_request(
            planned,
            method=self.metric,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_logprobs=self.top_logprobs,
            seed=self.seed,
        )

    def params(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_logprobs": self.top_logprobs if asks_logprobs(self.metric) else None,
            "logprobs": asks_logprobs(self.metric),
            "seed": self.seed,
            "samples": self.samples,
        }


def method_for(metric: str, settings: ApiSettings) -> Method:
    if asks_logprobs(metric):
        return Method(
            metric,
            1,
            settings.temperature,
            settings.max_tokens,
            settings.top_logprobs,
            settings.seed,
        )
    return Method(
        metric,
        settings.samples,
        settings.sampling_temperature,
        settings.sampling_max_tokens or settings.max_tokens,
        settings.top_logprobs,
        settings.seed,
    )
