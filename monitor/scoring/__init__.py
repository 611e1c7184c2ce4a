"""Scoring room: items + metric + backend -> per-item ``ScoreRow``s.

Split the way Inspect splits an evaluation: the task is the items and a metric name,
the solver is the backend answering bulk log-prob requests (``requests``), and the
scorer is the pure metric functions in ``monitor.metrics`` (``finish``).
"""

from monitor.metrics.registry import default_metric, metric_info, metrics_for_kind
from monitor.scoring.score import ScoringStats, score_items

__all__ = ["ScoringStats", "default_metric", "metric_info", "metrics_for_kind", "score_items"]
