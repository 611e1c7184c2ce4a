"""Result families that live in one folder each.

A *result family* is a kind of result (see ``monitor.metrics.families``). A family in its
own folder, ``monitor/families/<name>/``, holds everything that is particular to it: its
item payload and parser, its request planner(s), its per-item outcome and numbers, its
aggregation with intervals, the comparator drift uses, its quality expectations, its
report section and its CLI table. It declares itself in ``<name>/spec.py`` (a
``ResultFamily`` with ``hooks``; pure data) and is registered by one line in
``monitor.metrics.families.FAMILIES``; its metric specs by one line in
``monitor.metrics.registry``. The generic rooms find its code through
``ResultFamily.hook(name)``; they never import a family folder.

Each module of a family folder belongs to the room whose job it does, and the import
contracts in ``pyproject.toml`` hold it to that room's rules: ``spec`` and ``measures``
are pure like ``monitor.metrics``; ``items`` reads files like ``monitor.benchmarks``;
``scoring`` talks to backends like ``monitor.scoring``/``monitor.jobs``; ``compare``
is drift (no store, no report); ``section`` is report (no store); ``table`` and
``drift_output`` draw for the terminal with ``monitor.terminal``. No module of a family
imports the CLI or the app room (an import contract says so).

Hook names (a family supplies the ones that apply; the signature is the contract):

``load``          (spec, data, version, options) -> LoadedBenchmark: parse a pinned
                  benchmark file (its verified bytes); ``monitor.benchmarks.load`` names it
                  per manifest format in ``FAMILY_LOADERS`` and passes ``load_benchmarks``'
                  ``options`` (e.g. ``{"size": "mini"}``); a format whose rows errata edit
                  (sentence pairs) also gets ``errata=`` and ``data_dir=`` (companion files)
``official_templates`` (manifest, folder, tasks, *, partners, limit, seed) -> [LoadedBenchmark]:
                  benchmarks read from a copy of a gated dataset the user downloaded
                  (``run --indic-bias DIR``: the official Indic-Bias templates, the pairs'),
                  with what the pinned manifest adds (the taxonomy's identities)
``score_judged``  (store, snapshot, judge_snapshot, benchmarks, options, *, temperature,
                  max_tokens, judge_max_tokens, on_event, progress_factory) -> RunOutcome:
                  a task scored by two snapshots, the model answering and a judge reading
                  its answers (``run --indic-bias DIR --judge SNAPSHOT``: the Indic-Bias
                  generation task, the pairs')
``benchmark_quality`` (loaded, *, expected_rows) -> SuiteResult: the family's benchmark-data
                  suite (``monitor.quality.suites``), run by ``validate_benchmark`` whenever a
                  benchmark of its item kinds is fetched or imported
``measures``      (rows, items_by_id, *, aggregate) -> list[Measure]: a run's measures from
                  stored rows, given its metric spec's own per-axis ``aggregate``, which
                  the family adds to or refines (a family without the hook keeps it)
``score_local``   (backend, items, metric, *, progress, already_scored, on_batch, **options)
                  -> rows: score items with a local backend, in item order, handing each
                  finished batch to ``on_batch`` (the local driver stores it) and skipping
                  ``already_scored`` (a resumed run); ``options``: ``batch_size``,
                  ``panel`` (the run's ``--no-panel``) and
                  ``panel_metrics`` (its ``--metrics``)
``score_api``     (metric) -> ``monitor.scoring.api_tasks.ApiScoring`` | None: how the chat
                  API driver plans and reads the family's API metric (its requests per item,
                  whether it needs log-probabilities and what it falls back to, the row
                  from the answers); the driver's budget, probe, storage and resume apply
``compare``       drift comparator: (view, new_run_id, baseline_run_id, *, alpha, confidence,
                  noise_book, role, sign_flips, controls) -> comparisons
``unscored``      (view, new_run_id, baseline_run_id, *, controls) -> the subjects only one
                  run of the pair scored (named by drift, never compared)
``explain``       (comparisons, *, alpha, n_tests) -> comparisons: the family's comparisons
                  with their verdicts in plain words, written after the session's BH
                  adjustment, when its number of tests is known (the pairs' paragraphs);
                  a family without it words its comparisons in ``compare``
``report_section`` (comparisons, *, fmt, level, alpha, snapshot_of) -> str: the family's
                  part of the Markdown or HTML report, from drift's generic comparisons
                  (``snapshot_of``: run id -> snapshot name of the runs the report covers)
``cli_table``     (measures, title) -> rich table: the family's table for ``run`` and ``show``
``show_tables``   (measures, metric, title) -> [rich tables]: ``show``'s tables where they
                  differ from ``run``'s (the pairs': every measure, each bias rate in
                  context, identity rankings, where ``run`` shows the bias rates)
``show_json``     (measures, metric) -> {key: value}: the family's own keys of ``show
                  --format json`` (the pairs': ``context``)
``item_scores``   (view, run_id, *, with_texts) -> rows: ``show --items``' per-item rows, where
                  the family's items are not sentence pairs (the association tests' terms);
                  ``view`` is the command's ``StoreView``
``importers``     () -> {name: ``monitor.importers.spec.Importer``}: the family's
                  ``bias-monitor import <name>`` commands as data (what each reads, a
                  pydantic model of its options, its work, which returns what the CLI
                  shows); ``cli.commands_import`` builds the commands from them (the pairs':
                  the caste study's results and history folders, its GPT-5 follow-up; the
                  choice questions': BBQ's and BharatBBQ's prediction files)

A family whose comparator returns a type of its own (the pairs' ``AxisComparison``, the
association tests' ``EffectComparison``, not ``records.FamilyComparison``) draws it with
these; each also gets ``drift=`` (drift's whole ``DriftResult``: the compared pairs of runs
with their roles, the subjects only one run scored) and ``show_flips=`` (``drift
--show-flips``: list the ids of the items whose answer moved):

``drift_lines``   (comparisons, snapshot_of, width, level, *, drift, show_flips) -> lines:
                  ``drift``'s default output
``drift_table``   (comparisons, level, *, drift, show_flips) -> None: prints its part of
                  ``drift --format table-wide``
``drift_json``    (comparisons, snapshot_of, *, drift, show_flips) -> {key: value}: its keys
                  of ``drift --format json`` (called with no comparisons too, so its keys
                  are always there)
``report_input``  (view, comparisons, *, since, flags, new_runs, with_flips) -> {field:
                  value}: its fields of ``ReportInput`` (``monitor.report.input``; the
                  pairs': comparisons, contexts, bias-rate trends, repeat groups, methods);
                  ``with_flips``: ``--show-flips``, list the ids of the items that moved
``report_lead``   (report, *, fmt, max_rows, env) -> str: its answer, first under the
                  verdict (the pairs': per compared pair of runs, a row per axis); "" when
                  it compared nothing
``report_verdicts`` (report) -> [``report.answer.VerdictRef``]: its comparisons' verdicts
                  and runs, which the report counts, names among its runs and lists under
                  "What changed" (a family whose comparisons are drift's records needs none)
``report_block``  (report, *, fmt, max_rows, env) -> str: its detail section in Markdown
                  or HTML (``env``: the report's Jinja2 environment), after every family's
                  answer, in the registry's order (the pairs': trends, every paired
                  comparison, rates in context)
``report_appendix`` (report, *, fmt, max_rows, env) -> str: its reference material, after
                  what changed between the compared runs in the Markdown and after every
                  family's detail in the HTML (the pairs': repeat groups, methods side by
                  side); "" when it has none
``report_headline`` (report) -> str: its sentence in the report's one-line verdict
                  ("" when it compared nothing)

Folders: ``pairs`` (sentence and identity pairs: its declaration, parsers and loader,
comparator, benchmark suite, run/show tables, drift output, report fields and scoring
hooks so far),
``association`` (WEAT/SEAT effect sizes), ``choice_qa`` (BBQ, BharatBBQ).
"""
