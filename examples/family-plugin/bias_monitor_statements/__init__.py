"""bias-monitor family "truth-statements": does a model call stereotypes true?

A family written outside bias-monitor's repository, against its typed family contract,
and registered through the ``bias_monitor.families`` entry point (see pyproject.toml and
README.md). Modules: ``frame`` (the prompt and what an answer means), ``items`` (the
benchmark file), ``quality`` (its data checks), ``scoring`` (a local causal LM),
``measures`` (rates with intervals), ``compare`` (drift's paired comparison),
``section`` and ``table`` (report and terminal), ``family`` (the Family object).
"""
