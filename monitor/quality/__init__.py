"""Quality gate: great-expectations suites for benchmark data and for run results.

Importing this package is cheap: great-expectations is imported only when a suite
actually runs (``monitor.quality.suites.run_suite``). The suites read plain frames handed
to them (``monitor.store.view.StoreView.result_frames``); they never open the store.
"""

from monitor.quality.benchmark_suite import validate_benchmark
from monitor.quality.gate import GateVerdict, judge
from monitor.quality.results_suite import validate_run
from monitor.quality.suites import FailedExpectation, SuiteResult

__all__ = [
    "FailedExpectation",
    "GateVerdict",
    "SuiteResult",
    "judge",
    "validate_benchmark",
    "validate_run",
]
