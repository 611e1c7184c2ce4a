"""Scoring room: items + metric + backend -> per-item ``ScoreRow``s.

Split the way Inspect splits an evaluation: the task is the items and a metric name,
the solver is the backend answering bulk log-prob requests (``requests``), and the
scorer is the pure metric functions in ``monitor.metrics`` (``finish``).
"""

from monitor.scoring.score import ScoringStats, score_items

__all__ = ["ScoringStats", "score_items"]
