"""Result families that live in one folder each.

A *result family* is a kind of result. A family folder, ``monitor/families/<name>/``,
holds everything particular to it: its item payload and loader, its request planners,
its per-item outcome and numbers, its aggregation with intervals, its drift comparator,
its benchmark-data suite, its report section and its CLI tables. Its ``family.py``
exports one ``FAMILY`` (``monitor.contract.family.Family``), registered as an entry point
of the ``bias_monitor.families`` group in pyproject.toml, exactly as a family from
another package registers; the rooms find it through ``monitor.contract.registry`` and
never import a family folder.

The contract is typed: each capability (``items``, ``metrics``, ``scoring``, ``drift``,
``terminal``, ``report``, ``importers``) groups hooks whose signatures are Protocols in
``monitor.contract.capabilities``; ``tests/test_family_contract.py`` compares every
family's functions with them, and ARCHITECTURE.md ("One way in for each kind of result")
lists them.

Each module of a family folder belongs to the room whose job it does, and the import
contracts in ``pyproject.toml`` hold it to that room's rules: ``metrics`` and
``measures`` are pure like ``monitor.metrics``; ``items`` reads files like
``monitor.benchmarks``; ``scoring`` talks to backends like ``monitor.scoring``/
``monitor.jobs``; ``compare`` is drift (no store, no report); ``section`` is report (no
store); ``table`` and ``drift_output`` draw for the terminal with ``monitor.terminal``.
No module of a family imports the CLI or the app room (an import contract says so); a
family's ``import`` commands are data (``monitor.importers.spec.Importer``) that the CLI
turns into commands.

Folders: ``pairs`` (sentence and identity pairs), ``association`` (WEAT/SEAT effect
sizes), ``choice_qa`` (BBQ, BharatBBQ).
"""
