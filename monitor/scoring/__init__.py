"""Scoring room: items + a family's planner + backend -> per-item ``ScoreRow``s.

Split the way Inspect splits an evaluation: the task is the items, the solver is the
backend answering bulk log-prob requests, and the scorer is a family's pure metric
functions, reached through its plans' ``finish`` (``plans``). ``score.score_plans`` is
the loop every planner goes through; the planners are the families' (the sentence pairs':
their planners and metric panel).
"""

from monitor.scoring.score import ScoringStats, score_plans

__all__ = ["ScoringStats", "score_plans"]
