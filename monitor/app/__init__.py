"""The application layer: ``run``, ``drift``, ``report``, ``show`` and the predictions
import as functions a Python caller can use, with typed requests and results.

It prints nothing and parses no command line: ``monitor.cli`` parses arguments, calls
these and renders what they return. Layers: cli -> app -> families -> core rooms.

    from monitor.app import RunRequest, run
    result = run(RunRequest(snapshots=["smollm2-135m-instruct"], benchmarks=["bhed-caste"]))
"""

from monitor.app.options import BackendOptions, ScoringOptions
from monitor.app.run import run
from monitor.app.run_request import RunEvents, RunRequest, RunResult

__all__ = [
    "BackendOptions",
    "RunEvents",
    "RunRequest",
    "RunResult",
    "ScoringOptions",
    "run",
]
