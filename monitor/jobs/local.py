"""The scoring driver for kinds scored from token log-probabilities.

Local transformers models (``hf-causal``, ``hf-mlm``) and open models served by vLLM
(``openai-completions``) differ only in their backend; the metric code, the chunking
that makes scores reproducible and the run lifecycle are the same. A backend that can
say what answered it (``provenance()``, the remote one) has that stored with the run.
"""

from __future__ import annotations

from monitor.backends.device_facts import torch_facts
from monitor.errors import SnapshotUnavailable
from monitor.jobs.context import JobContext
from monitor.jobs.options import RunOutcome
from monitor.jobs.run_record import fingerprint, new_repeat_group, new_run_record
from monitor.provenance import environment
from monitor.scoring import score_items
from monitor.scoring.coverage import unsupported
from monitor.scoring.score import scoring_provenance


def score_snapshot(ctx: JobContext) -> list[RunOutcome]:
    """Score ``ctx.snapshot`` ``options.repeat`` times; every repeat is its own run.

    Weights that cannot be had here, and a tokenizer that cannot represent a benchmark's
    script (``monitor.scoring.coverage``), turn into a 'skipped' outcome with the reason,
    never a silent failure or a score of byte fragments.
    """
    snapshot, options, spec = ctx.snapshot, ctx.options, ctx.metric
    try:
        backend = ctx.kind.load_backend()(
            snapshot, device=options.device, dtype=options.dtype, on_event=ctx.on_event
        )
    except SnapshotUnavailable as exc:
        return [RunOutcome(snapshot.id, None, "skipped", reason=str(exc))]
    refusal = unsupported(backend, ctx.benches)
    if refusal is not None:  # refused before a run is recorded: nothing half-written
        return [RunOutcome(snapshot.id, None, "skipped", reason=f"{snapshot.id}: {refusal}")]

    items = ctx.items
    # A family in its own folder may score its items itself (same arguments); the
    # choice-qa family packs an item's options into one forward pass.
    score = spec.family.hook("score_local") or score_items
    fp = fingerprint(snapshot, spec.name, spec.version, ctx.benches, options)
    repeat_group = new_repeat_group(options.repeat)
    outcomes: list[RunOutcome] = []
    for rep in range(options.repeat):
        run = ctx.lifecycle.open(
            fingerprint=fp,
            resume=options.resume,
            items=items,
            benches=ctx.benches,
            new_record=lambda rep=rep: new_run_record(
                snapshot,
                ctx.benches,
                options,
                metric=spec.name,
                metric_version=spec.version,
                fingerprint=fp,
                repeat_group=repeat_group,
                repeat_index=rep,
                device=backend.device,
                dtype=backend.dtype,
                # What was used, also when the backend's default was: "None" would not
                # say how the scores were batched (float32 results depend on it).
                batch_size=options.batch_size or getattr(backend, "batch_size", None),
                # Prefix sharing, chunking and batch shape decide the last bits of a score.
                environment={
                    **environment(),
                    **torch_facts(backend.device),
                    "scoring": {**scoring_provenance(backend), "panel": options.panel},
                },
                origin=ctx.kind.origin,
            ),
        )
        todo = len(items) - len(run.already_scored & {it.item_id for it in items})
        advance = ctx.progress(f"{snapshot.id} #{rep + 1}", todo)
        with ctx.lifecycle.attempt(run, snapshot.id) as attempt:
            score(
                backend,
                items,
                spec.name,
                batch_size=options.batch_size,
                progress=advance,
                already_scored=run.already_scored,
                on_batch=lambda rows, rid=run.run_id: ctx.store.add_scores(rid, rows),
                panel=options.panel,
            )
            served_by = getattr(backend, "provenance", None)
            if callable(served_by):  # a remote backend: what answered, for the record
                ctx.store.update_run_environment(run.run_id, {"api": served_by()})
        if attempt.outcome is not None:
            outcomes.append(attempt.outcome)
            continue
        outcomes.append(
            ctx.lifecycle.finalise(
                run.run_id,
                items,
                metric=spec.name,
                snapshot_id=snapshot.id,
                n_excluded=ctx.n_excluded,
                resumed_from=attempt.resumed_from,
            )
        )
    return outcomes
