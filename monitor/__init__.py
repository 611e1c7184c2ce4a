"""bias-monitor: a regression monitor for social bias in language models.

The package is organised as one-way rooms (ARCHITECTURE.md, enforced by import-linter):
benchmarks and snapshots -> backends -> scoring -> jobs (the run lifecycle) -> store ->
quality -> drift -> report, with ``cli`` only parsing arguments and calling into them.
"""

__version__ = "0.1.0"
