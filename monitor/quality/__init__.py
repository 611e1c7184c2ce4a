"""Quality gate: great-expectations suites for benchmark data and for run results.

Importing this package is cheap: great-expectations is imported only when a suite
actually runs (``monitor.quality.suites.run_suite``).
"""

from monitor.quality.benchmark_suite import validate_benchmark
from monitor.quality.results_suite import validate_run
from monitor.quality.suites import FailedExpectation, SuiteResult
from monitor.quality.verdict import quarantine, store_validation

__all__ = [
    "FailedExpectation",
    "SuiteResult",
    "quarantine",
    "store_validation",
    "validate_benchmark",
    "validate_run",
]
