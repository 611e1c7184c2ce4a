"""`bias-monitor run` and `bias-monitor snapshots list`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from monitor.cli.commands_snapshots import SnapshotsDirOpt, use_snapshots_dir
from monitor.errors import NotApplicable, UserInputError
from monitor.fmt import interval, pct
from monitor.terminal.output import Format, err, out, print_json, progress_bars

if TYPE_CHECKING:
    from monitor.contract.family import Family

snapshots_app = typer.Typer(help="Pinned model snapshots (snapshots/*.toml).", no_args_is_help=True)


def _panel_metrics(values: list[str] | None, panel: bool) -> tuple[str, ...]:
    """The metrics ``--metrics`` adds to the panel, checked: panel metrics only, and not
    together with ``--no-panel`` (which scores the run's metric alone)."""
    from monitor.metrics.panel import PANEL_METRICS

    names = tuple(dict.fromkeys(n.strip() for v in values or () for n in v.split(",") if n.strip()))
    unknown = [n for n in names if n not in PANEL_METRICS]
    if unknown:
        raise UserInputError(
            f"--metrics {', '.join(unknown)}: not a panel metric; use "
            f"{', '.join(PANEL_METRICS)} (the run's own metric is --metric)"
        )
    if names and not panel:
        raise UserInputError("--metrics adds to the metric panel; --no-panel scores none")
    return names


def _check_panel_metrics(snapshot, metric: str) -> None:
    """Refuse ``--metrics`` for a snapshot whose run has no panel (another metric)."""
    from monitor.metrics.panel import PANEL_METRICS

    if metric not in PANEL_METRICS:
        raise UserInputError(
            f"--metrics adds to the panel of a {', '.join(PANEL_METRICS)} run; "
            f"{snapshot.id} is scored with {metric}"
        )


def _device_choice(value: str) -> str:
    if value not in ("auto", "cpu", "cuda") and not value.startswith("cuda:"):
        raise typer.BadParameter("must be auto, cpu, cuda or cuda:N")
    return value


def run(
    snapshot: Annotated[
        list[str] | None,
        typer.Option(
            "--snapshot",
            "-s",
            help="Snapshot id (repeatable). Default: the snapshots "
            "marked default (SmolLM2-135M-Instruct).",
        ),
    ] = None,
    benchmark: Annotated[
        list[str] | None,
        typer.Option(
            "--benchmark",
            "-b",
            help="Benchmark id (repeatable). Default: the four "
            "Indian-BhED axes (bhed-caste, bhed-religion, bhed-gender, bhed-race).",
        ),
    ] = None,
    db: Annotated[
        Path | None,
        typer.Option("--db", help="DuckDB file (default: $MONITOR_DB or results/monitor.duckdb)."),
    ] = None,
    batch_size: Annotated[
        int | None, typer.Option("--batch-size", min=1, help="Sequences per forward pass.")
    ] = None,
    device: Annotated[
        str, typer.Option("--device", callback=_device_choice, help="auto, cpu or cuda.")
    ] = "auto",
    dtype: Annotated[
        str,
        typer.Option(
            "--dtype", help="auto (fp32 on CPU, bf16 on CUDA), float32, bfloat16 or float16."
        ),
    ] = "auto",
    repeat: Annotated[
        int,
        typer.Option(
            "--repeat",
            min=1,
            help="Score each snapshot N times (each is its own run; measures the noise floor).",
        ),
    ] = 1,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            help="Override the snapshot kind's default metric: cll (default for causal LMs "
            "and vLLM completions), cll-reference, ull; aul (masked LMs); forced-choice "
            "(default for chat APIs) or sampled-choice; on BBQ/BharatBBQ mc-loglik (causal "
            "LMs), mc-letter (default for chat APIs) or mc-letter-sampled. `snapshots list` "
            "shows each kind's.",
        ),
    ] = None,
    errata: Annotated[
        str,
        typer.Option(
            "--errata", help="'current' applies data/errata.toml; 'none' scores the raw files."
        ),
    ] = "current",
    seed: Annotated[int, typer.Option("--seed", help="Recorded with the run.")] = 0,
    trigger: Annotated[
        str | None,
        typer.Option(
            "--trigger", help="Recorded with the run (default: $GITHUB_EVENT_NAME or 'manual')."
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume/--no-resume",
            help="Continue a killed run of the same configuration instead of starting anew.",
        ),
    ] = True,
    controls: Annotated[
        bool,
        typer.Option(
            "--controls/--no-controls",
            help="Also score each benchmark's control set (bhed-caste: the 55-sentence neutral "
            "control bhed-neutral), shown beside its bias rate.",
        ),
    ] = True,
    panel: Annotated[
        bool,
        typer.Option(
            "--panel/--no-panel",
            help="With a log-probability metric (cll, cll-reference, ull) on a causal LM, "
            "local or served by vLLM: also score the metric panel in the same pass (cll and "
            "ull, and what --metrics adds; shown beside the bias rate). ull reads cll's "
            "sentences, so the default panel costs about what cll alone does. --no-panel "
            "scores the run's metric alone.",
        ),
    ] = True,
    panel_metrics: Annotated[
        list[str] | None,
        typer.Option(
            "--metrics",
            help="Add metrics to the panel (repeatable or comma-separated): cll-reference, "
            "the seed code's no-BOS variant kept for parity with published numbers, is "
            "scored only when asked (its sequences share no forward pass with cll's: about "
            "twice the scoring time).",
        ),
    ] = None,
    indic_bias: Annotated[
        Path | None,
        typer.Option(
            "--indic-bias",
            help="Folder with a downloaded copy of the gated Hugging Face dataset "
            "ai4bharat/Indic-Bias (CC-BY-4.0): also score its official stereotype templates "
            "(see --indic-task). Without -b, only these are scored.",
        ),
    ] = None,
    indic_task: Annotated[
        list[str] | None,
        typer.Option(
            "--indic-task",
            help="With --indic-bias (repeatable): plausibility, plausibility-none, judgement, "
            "judgement-none, generation. Default: plausibility and judgement.",
        ),
    ] = None,
    indic_partners: Annotated[
        int,
        typer.Option(
            "--indic-partners",
            min=1,
            help="With --indic-bias: identities each template's identity is paired with "
            "(the paper used 10).",
        ),
    ] = 2,
    indic_limit: Annotated[
        int | None,
        typer.Option(
            "--indic-limit",
            min=1,
            help="With --indic-bias: score this many templates per task, drawn with --seed.",
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge",
            help="With --indic-task generation: the snapshot id of the judge model (an "
            "openai-chat or openai-responses kind, e.g. served by vLLM).",
        ),
    ] = None,
    temperature: Annotated[
        float,
        typer.Option(
            "--temperature",
            min=0.0,
            max=2.0,
            help="With --indic-task generation: sampling temperature of the generating "
            "model (the paper's default 0.8); recorded with the run.",
        ),
    ] = 0.8,
    generation_max_tokens: Annotated[
        int,
        typer.Option(
            "--generation-max-tokens",
            min=1,
            help="With --indic-task generation: longest answer of the generating model "
            "(the paper allowed 2048; a server's context must hold the prompt and this).",
        ),
    ] = 512,
    judge_max_tokens: Annotated[
        int,
        typer.Option(
            "--judge-max-tokens",
            min=1,
            help="With --indic-task generation: longest answer of the judge (its JSON verdict).",
        ),
    ] = 400,
    size: Annotated[
        str | None,
        typer.Option(
            "--size",
            help="Choice-question benchmarks (bbq-*, bharatbbq-*): mini (a few whole "
            "templates per category, both contexts and polarities), default (a few hundred "
            "items per category) or full (every row).",
        ),
    ] = None,
    translations: Annotated[
        Path | None,
        typer.Option(
            "--translations",
            help="BharatBBQ benchmarks (bharatbbq-*): a folder holding your translation of "
            "the files, row-parallel to the pinned English ones and named like them "
            "(Caste_examples.csv, same columns); score it instead of the English text. "
            "Needs --language. Drift pairs its items with an English run's by source id.",
        ),
    ] = None,
    language: Annotated[
        str | None,
        typer.Option(
            "--language",
            help="With --translations: the BCP-47 code of the translation (e.g. hi); "
            "recorded with the run.",
        ),
    ] = None,
    only_applicable: Annotated[
        bool,
        typer.Option(
            "--only-applicable",
            help="Skip, by name, the snapshots whose kind has no metric for the selected "
            "benchmarks (an embedding model and questions) instead of refusing the "
            "command: for a job that runs one benchmark set over many snapshots.",
        ),
    ] = False,
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
    snapshots_dir: SnapshotsDirOpt = None,
) -> None:
    """Score snapshots on benchmarks and store every item score in DuckDB.

    Fetches (or imports from $MONITOR_DATA_MIRROR) the pinned benchmark files when they are
    not cached yet, scores each snapshot, runs the quality gate and prints per-axis bias rates
    with 95% Wilson intervals.
    """
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest
    from monitor.contract.registry import families
    from monitor.jobs.options import RunOptions
    from monitor.jobs.run import item_kinds, metric_for, run_snapshot, sized_benchmarks
    from monitor.kinds import get_kind
    from monitor.paths import default_db_path
    from monitor.snapshots.model import LocalDirSource
    from monitor.snapshots.registry import get_snapshot, load_snapshots
    from monitor.snapshots.resolve import verify_local_dir
    from monitor.store.db import Store, check_writable

    use_snapshots_dir(snapshots_dir)
    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise UserInputError(f"unknown --dtype {dtype!r}; use auto, float32, bfloat16 or float16")
    if errata not in ("current", "none"):
        raise UserInputError(f"unknown --errata {errata!r}; use current or none")
    if size not in (None, "mini", "default", "full"):
        raise UserInputError(f"unknown --size {size!r}; use mini, default or full")
    translated = _translation_options(translations, language)

    # Everything that can be wrong with the input is checked before the store is opened.
    snaps = load_snapshots()
    chosen = (
        [get_snapshot(s, snaps) for s in snapshot]
        if snapshot
        else [s for s in snaps.values() if s.default]
    )
    for s in chosen:  # an unknown or inapplicable --metric is refused before any work
        metric_for(s, get_kind(s.kind), metric)
    extra = _panel_metrics(panel_metrics, panel)
    for s in chosen:  # a changed or missing model folder refuses the run (exit 2)
        if isinstance(s.source, LocalDirSource):
            verify_local_dir(s)
    _warn_stored_credentials(chosen)
    manifest = load_manifest()
    specs = (
        []
        if indic_bias is not None and not benchmark
        else manifest.select(benchmark or None, controls=controls)
    )
    if translated:
        _check_translatable(specs)
    if indic_bias is None and (indic_task or indic_limit or judge):
        raise UserInputError("--indic-task, --indic-limit and --judge need --indic-bias DIR")
    db_path = Path(db) if db else default_db_path()
    check_writable(db_path)
    fetch(manifest, [s.id for s in specs], on_event=lambda m: err.print(m))
    benches = load_benchmarks(
        [s.id for s in specs],
        errata=errata,
        manifest=manifest,
        options={**({"size": size} if size else {}), **translated} or None,
    )
    if size and not sized_benchmarks(benches):
        sized = ", ".join(f.name for f in families() if f.sized)
        names = ", ".join(sorted({b.benchmark for b in benches}))
        raise UserInputError(f"--size applies to {sized} benchmarks; not to {names}")
    generation = []
    if indic_bias is not None:
        official = _official(manifest, indic_bias, indic_task, indic_partners, indic_limit, seed)
        generation = [b for b in official if b.benchmark == "indic-bias-generation"]
        benches += [b for b in official if b not in generation]
        if generation and judge is None:
            raise UserInputError("--indic-task generation needs --judge SNAPSHOT (a chat model)")
    judge_snapshot = get_snapshot(judge, snaps) if judge is not None else None
    applicable = []
    for s in chosen:  # one metric a run: choice questions and pairs are two commands
        try:
            metric_for(s, get_kind(s.kind), metric, item_kinds(benches))
        except NotApplicable as exc:
            if not only_applicable:
                raise
            err.print(f"skipped {s.id}: {exc} (--only-applicable)", style="yellow")
            continue
        applicable.append(s)
    chosen = applicable
    for s in chosen if extra else ():  # --metrics adds to a log-probability run's panel
        _check_panel_metrics(s, metric_for(s, get_kind(s.kind), metric, item_kinds(benches)))
    if not chosen:
        err.print("nothing to score: no selected snapshot applies to these benchmarks")
        if fmt is Format.json:
            print_json([])
        return
    store = Store.open(db_path)

    options = RunOptions(
        batch_size=batch_size,
        device=device,
        dtype=dtype,
        repeat=repeat,
        metric=metric,
        seed=seed,
        trigger=trigger,
        resume=resume,
        errata=errata,
        panel=panel,
        panel_metrics=extra,
    )
    outcomes = []
    with progress_bars() as factory:
        for snap in chosen:
            if benches:
                outcomes += run_snapshot(
                    store,
                    snap,
                    benches,
                    options,
                    on_event=lambda m: err.print(m),
                    progress_factory=factory,
                )
            if generation:
                from monitor.contract.registry import judged_scorer

                outcomes.append(
                    judged_scorer()(
                        store,
                        snap,
                        judge_snapshot,
                        generation,
                        options,
                        temperature=temperature,
                        max_tokens=generation_max_tokens,
                        judge_max_tokens=judge_max_tokens,
                        on_event=lambda m: err.print(m),
                        progress_factory=factory,
                    )
                )

    if fmt is Format.json:
        print_json([_outcome_dict(o) for o in outcomes])
    else:
        _print_summary(outcomes, benches)
    statuses = {o.status for o in outcomes}
    if statuses & {"failed", "quarantined"}:
        raise typer.Exit(1)
    if "skipped" in statuses:
        raise typer.Exit(3)


def _translation_options(folder: Path | None, language: str | None) -> dict[str, str]:
    """The loader options of ``--translations DIR --language CODE`` (empty without them),
    refused in one line when either is missing, the folder is not one or the code is not
    a language code: a run must never score a translation it cannot name."""
    import re

    if folder is None and language is None:
        return {}
    if folder is None:
        raise UserInputError("--language applies with --translations DIR (a translation)")
    if not language:
        raise UserInputError("--translations needs --language CODE (e.g. hi), the translation's")
    if not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]{1,8})*", language):
        raise UserInputError(f"--language {language!r} is not a BCP-47 code such as hi or mr")
    path = folder.expanduser()
    if not path.is_dir():
        raise UserInputError(f"--translations {folder}: no such folder")
    return {"translations": str(path.resolve()), "language": language}


def _check_translatable(specs) -> None:
    """Only BharatBBQ files have translations the loader can pair row by row."""
    others = [s.id for s in specs if s.format != "bharatbbq-csv"]
    if not specs:
        raise UserInputError("--translations needs a BharatBBQ benchmark (-b bharatbbq-caste)")
    if others:
        raise UserInputError(
            "--translations applies to BharatBBQ benchmarks (bharatbbq-*) only, not to "
            + ", ".join(others)
        )


def _warn_stored_credentials(snapshots) -> None:
    """A snapshot file is committed: a credential in its ``base_url`` is accepted (it is
    redacted everywhere) but named, so that it moves to an environment variable."""
    from monitor.redaction import url_credentials

    for s in snapshots:
        found = url_credentials(getattr(s.source, "base_url", None))
        if found:
            err.print(
                f"warning: snapshot {s.id}: source.base_url carries credentials "
                f"({', '.join(found)}); they are redacted from the store and every output, "
                "but move the URL to an environment variable named by source.base_url_env "
                "(and the key to source.api_key_env)"
            )


def _official(manifest, folder: Path, tasks, partners: int, limit: int | None, seed: int):
    """The official Indic-Bias templates from a downloaded copy; identity partners come
    from the pinned taxonomy, fetched (or imported from the mirror) like any benchmark."""
    from monitor.benchmarks.fetch import fetch
    from monitor.contract.registry import official_template_reader

    fetch(manifest, ["indic-taxonomy"], on_event=lambda m: err.print(m))
    return official_template_reader()(
        manifest,
        folder,
        tasks or ["plausibility", "judgement"],
        partners=partners,
        limit=limit,
        seed=seed,
    )


def _outcome_dict(o) -> dict:
    return {
        "snapshot": o.snapshot_id,
        "run_id": o.run_id,
        "status": o.status,
        "reason": o.reason,
        "resumed_from": o.resumed_from,
        "n_scored": o.n_scored,
        "n_excluded": o.n_excluded,
        "quality_failures": o.quality_failures,
        "measures": [m.__dict__ for m in o.measures],
    }


def _print_family_table(o, title: str) -> Family | None:
    """A run's table: its family's ``cli_table`` hook's, else every measure as a plain row
    (benchmark, subject, measure, value, 95% interval, k/n). Returns the family, whose
    declaration words the line under the table (None where the run names no metric)."""
    from monitor.metrics.registry import get_metric
    from monitor.terminal.output import SafeTable as Table

    family = get_metric(o.metric).family if o.metric else None
    hook = family.terminal().cli_table if family is not None else None
    if hook is not None:
        out.print(hook(o.measures, title))
        return family
    table = Table(title=title, title_justify="left")
    for col in ("benchmark", "subject", "measure", "value", "95% CI", "k/n"):
        left = col in ("benchmark", "subject", "measure")
        table.add_column(col, justify="left" if left else "right")
    for m in sorted(o.measures, key=lambda m: (m.benchmark, m.axis, m.measure)):
        share = m.kind == "rate"
        table.add_row(
            m.benchmark,
            m.axis,
            m.measure,
            (pct(m.value) if share else f"{m.value:+.3f}") if m.value is not None else "-",
            interval((m.ci_low, m.ci_high)) if share else _plain_interval(m.ci_low, m.ci_high),
            f"{m.k}/{m.n}" if m.k is not None and m.n is not None else "",
        )
    out.print(table)
    return family


def _plain_interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"


def _print_summary(outcomes, benches) -> None:

    counts = _Counts.of(benches)
    for o in outcomes:
        if o.status == "skipped":
            err.print(f"skipped {o.snapshot_id}: {o.reason}", style="yellow")
            continue
        if o.status in ("failed", "pending"):
            where = f" (run {o.run_id})" if o.run_id else ""
            style = "red" if o.status == "failed" else "yellow"
            err.print(f"{o.status} {o.snapshot_id}{where}: {o.reason}", style=style)
            continue
        if o.run_id is None:
            continue
        title = f"{o.snapshot_id}  run {o.run_id}  ({o.status})"
        family = _print_family_table(o, title)
        if family is None:
            _print_counts(o, counts, "items")
        else:
            _print_counts(o, counts, family.item_noun, family.count_note)


@dataclass(frozen=True)
class _Counts:
    """What the command's benchmarks left out, counted once for every outcome's line."""

    reasons: dict[str, int]
    not_sampled: int

    @classmethod
    def of(cls, benches) -> _Counts:
        from collections import Counter

        reasons = Counter(e.reason for b in benches for e in b.exclusions)
        return cls(dict(sorted(reasons.items())), sum(len(b.not_sampled) for b in benches))


def _print_counts(o, counts: _Counts, unit: str, note: str = "") -> None:
    """The line under every run's table, whatever its family: what was scored, how many
    source rows were left out and why (the denominator a reader needs), then any quality
    failure. Under a sample (``--size mini``, a per-identity variant) the exclusions are
    counted over the whole files, so the line says so and how many rows were not drawn."""
    out.print(
        f"scored {o.n_scored} {unit}; excluded {o.n_excluded} source rows"
        + (f"; resumed with {o.resumed_from} already stored" if o.resumed_from else "")
        + note
    )
    if counts.reasons:
        out.print("exclusions: " + ", ".join(f"{r} {n}" for r, n in counts.reasons.items()))
    if counts.not_sampled:
        out.print(
            f"a sample: {counts.not_sampled} source rows not drawn"
            + ("; exclusions counted over the whole files" if o.n_excluded else "")
        )
    for f in o.quality_failures:
        err.print(f"quality: {f}", style="red")


@snapshots_app.command("list")
def snapshots_list(
    fmt: Annotated[Format, typer.Option("--format", help="table or json.")] = Format.table,
    snapshots_dir: SnapshotsDirOpt = None,
) -> None:
    """List the pinned snapshots, what exactly each one means, the metrics that apply
    (the default first) and the folder each came from (yours first, then the shipped
    ones)."""
    from monitor.jobs.run import metric_for
    from monitor.kinds import get_kind
    from monitor.snapshots.registry import load_snapshots

    use_snapshots_dir(snapshots_dir)
    snaps = load_snapshots()
    _warn_stored_credentials(snaps.values())

    def metrics(s) -> list[str]:
        kind = get_kind(s.kind)
        first = metric_for(s, kind, None)
        return [first, *(m for m in kind.metrics if m != first)]

    if fmt is Format.json:
        print_json(
            [
                s.model_dump(mode="json")
                | {
                    "revision": s.revision_label,
                    "metrics": metrics(s),
                    "folder": str(s.file.parent) if s.file else None,
                }
                for s in snaps.values()
            ]
        )
        return
    from monitor.terminal.output import print_listing

    print_listing(
        ("id", "kind", "default", "metrics", "revision", "folder"),
        [
            (
                s.id,
                s.kind,
                "yes" if s.default else "",
                ", ".join(metrics(s)),
                s.revision_label,
                str(s.file.parent) if s.file else "",
            )
            for s in sorted(snaps.values(), key=lambda s: s.id)
        ],
    )
