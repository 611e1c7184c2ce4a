"""The application layer: ``run``, ``drift``, ``report``, ``show`` and the
imports as functions a Python caller can use, with typed requests and results.

It prints nothing and parses no command line: ``monitor.cli`` parses arguments, calls
these and renders what they return. Layers: cli -> app -> families -> core rooms.

    from monitor.app import RunRequest, run
    result = run(RunRequest(snapshots=["smollm2-135m-instruct-q4"]))  # default benchmarks

The functions are exported under their modules' names (``monitor.app.run`` is the
function; its module is ``monitor.app.run`` in ``sys.modules``): import what you need
from the package, as above.
"""

from monitor.app.drift import DriftOutcome, DriftRequest, DriftSelection, drift
from monitor.app.imports import ImportRequest, run_import
from monitor.app.options import BackendOptions, ScoringOptions
from monitor.app.report import ReportRequest, report
from monitor.app.run import run
from monitor.app.run_request import RunEvents, RunRequest, RunResult
from monitor.app.show import ShownRun, show

__all__ = [
    "BackendOptions",
    "DriftOutcome",
    "DriftRequest",
    "DriftSelection",
    "ImportRequest",
    "ReportRequest",
    "RunEvents",
    "RunRequest",
    "RunResult",
    "ScoringOptions",
    "ShownRun",
    "drift",
    "report",
    "run",
    "run_import",
    "show",
]
