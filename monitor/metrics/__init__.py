"""Metrics room: pure functions from log-probabilities to scores, rates and intervals.

No I/O and no torch here, so every number a report prints can be recomputed by hand
from the per-item log-probabilities that the store keeps.
"""
