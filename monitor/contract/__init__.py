"""The family contract: what a result family is (``family.Family``), what each of its
capabilities looks like (``capabilities``: typed Protocols grouped into capability
objects) and where the monitor finds families (``registry``: the ``bias_monitor.families``
entry points).

This package sits below every room that uses a family (benchmarks, metrics, scoring,
drift, report, the CLI): it imports no room at run time. The types its Protocols name
come from the rooms above under ``TYPE_CHECKING`` only, so the contract can name the real
parameter types without an import cycle. See ARCHITECTURE.md, "One way in for each kind
of result".
"""
