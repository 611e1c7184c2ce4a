"""Jobs room: the one place that wires the rooms together, in the order of the data flow.

``run.run_snapshot`` looks a snapshot's kind up (``monitor.kinds``) and hands it to the
kind's scoring driver (``local`` for log-prob kinds, the association family's
``scoring`` for embedding kinds, ``api`` for chat kinds; ``judged`` for the generation
task). The drivers share one loop, ``driver.drive``, and supply what differs as hooks.
Every driver, and every importer, creates and closes runs through
``lifecycle.RunLifecycle``: begin or resume, write items and exclusions, turn an error
into a status, compute the measures from what is stored, pass the quality gate, finalise.
No driver computes a metric or writes SQL itself.
"""
