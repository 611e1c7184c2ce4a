"""Drawing for a terminal or a CI log, below the families and the CLI that use it.

A family draws its own tables and drift lines (its ``cli_table``, ``show_tables``,
``drift_lines`` hooks) and the CLI draws everything else, both with these helpers, so a
family never imports the CLI: ``output`` (the safe consoles ``out`` and ``err``,
``SafeTable``, the output width, JSON on stdout, progress, listings), ``lines`` (lines at
the reader's width: percentage points, wrapping, runs named by snapshot and id, pairs of
runs) and ``measures`` (a run's measures as a table that fits an 80-column log).
Everything printed passes through ``monitor.display.safe_text``.
"""
