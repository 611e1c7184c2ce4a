"""The association-test family's scoring driver, for embedding kinds: association tests
(WEAT on words, SEAT on sentences) through the same run lifecycle as every other run.

``FAMILY.scoring.driver``: every embedding kind (``monitor.kinds``) uses it.

For each run: embed every distinct term of the selected word-set benchmarks once, then
per test compute each term's association with the opposite pair of sets (``s(w, A, B)``
for a target word, ``s(a, X, Y)`` for an attribute word), store one score row and one
vector per term, and let the lifecycle compute the per-test effect sizes from the
stored rows (``metrics.py`` beside it) and run the quality gate.

A term the model cannot embed (a static vocabulary lacks it) is stored with outcome
``other`` and no number, so every listed term has a row and each test lists what it
missed. Scores are a function of the whole sets, so a resumed run recomputes them (it is
cheap next to embedding) and stores only the rows it does not hold yet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from monitor.backends.device_facts import torch_facts, weights_facts
from monitor.backends.embedding import Embedded
from monitor.benchmarks.items import Item
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.families.association.metrics import MISSING_OUTCOME, cosine_matrix
from monitor.jobs.context import JobContext
from monitor.jobs.driver import RunHooks, drive
from monitor.jobs.lifecycle import OpenRun
from monitor.jobs.options import RunOutcome
from monitor.jobs.run_record import fingerprint, new_repeat_group
from monitor.provenance import environment
from monitor.records import RunRecord, ScoreRow

WORD_SET_KIND = "word-set-term"
OPPOSITE = {"X": ("A", "B"), "Y": ("A", "B"), "A": ("X", "Y"), "B": ("X", "Y")}
BATCH = 500  # score rows per store transaction
_PASSED = ("role", "occurrence", "shared_with", "source_role")


def _usable(e: Embedded | None) -> np.ndarray | None:
    if e is None or e.vector is None:
        return None
    v = np.asarray(e.vector, dtype=np.float32)
    return v if v.ndim == 1 and np.isfinite(v).all() and np.any(v) else None


def _missing_reason(e: Embedded | None) -> str:
    if e is None or e.vector is None:
        return str((e.note if e else {}).get("missing", "no vector"))
    return "zero or non-finite vector"


def term_rows(
    items: Sequence[Item], embedded: Mapping[str, Embedded], metric: str, version: str
) -> tuple[list[ScoreRow], dict[str, np.ndarray]]:
    """One score row per term and the vectors to store, from each term's embedding.

    ``delta`` = mean cosine with the first opposite set minus mean cosine with the second
    (``s(w, A, B)`` for X and Y words, ``s(a, X, Y)`` for A and B words), both means kept
    in ``details``; the cosines are computed in float64 from the float32 vectors.
    """
    by_test: dict[tuple[str, str], dict[str, list[Item]]] = defaultdict(lambda: defaultdict(list))
    for it in items:
        by_test[(it.benchmark, it.axis)][it.payload["role"]].append(it)
    rows: list[ScoreRow] = []
    vectors: dict[str, np.ndarray] = {}
    for sets in by_test.values():
        usable = {
            it.item_id: v
            for members in sets.values()
            for it in members
            if (v := _usable(embedded.get(it.payload["text"]))) is not None
        }
        stacks = {
            role: [usable[it.item_id] for it in sets.get(role, []) if it.item_id in usable]
            for role in ("X", "Y", "A", "B")
        }
        for role, members in sets.items():
            first, second = OPPOSITE[role]
            scored = [it for it in members if it.item_id in usable]
            if scored and stacks[first] and stacks[second]:
                w = np.stack([usable[it.item_id] for it in scored])
                cos_first = cosine_matrix(w, np.stack(stacks[first])).mean(axis=1)
                cos_second = cosine_matrix(w, np.stack(stacks[second])).mean(axis=1)
                numbers = {
                    it.item_id: (float(c1), float(c2))
                    for it, c1, c2 in zip(scored, cos_first, cos_second, strict=True)
                }
            else:
                numbers = {}
            for it in members:
                e = embedded.get(it.payload["text"])
                details: dict[str, Any] = {k: it.payload[k] for k in _PASSED if k in it.payload}
                if e is not None and e.note:
                    details["embedding"] = e.note
                if it.item_id in usable:
                    vectors[it.item_id] = usable[it.item_id]
                if it.item_id not in numbers:
                    if it.item_id in usable:
                        empty = first if not stacks[first] else second
                        details["undefined"] = f"no embedded term in set {empty}"
                    else:
                        details["missing"] = _missing_reason(e)
                    rows.append(_row(it.item_id, metric, version, MISSING_OUTCOME, None, details))
                    continue
                c1, c2 = numbers[it.item_id]
                details["mean_cos_first"] = c1
                details["mean_cos_second"] = c2
                rows.append(_row(it.item_id, metric, version, None, c1 - c2, details))
    return rows, vectors


def _row(item_id, metric, version, outcome, delta, details) -> ScoreRow:
    # outcome None: an association term has no stereo/anti outcome (schema 3 allows NULL).
    return ScoreRow(item_id, metric, version, outcome, delta, details=details)


def score_snapshot(ctx: JobContext) -> list[RunOutcome]:
    """Score ``ctx.snapshot`` on the word-set benchmarks ``options.repeat`` times."""
    return drive(ctx, _open(ctx))


def _open(ctx: JobContext) -> _EmbedScoring | RunOutcome:
    """Refuse benchmarks that are not word sets, then load the encoder once for every
    repeat, or say why this snapshot is skipped."""
    snapshot, options, spec = ctx.snapshot, ctx.options, ctx.metric
    items = ctx.items
    other = sorted({b.benchmark for b in ctx.benches for it in b.items if it.kind != WORD_SET_KIND})
    if other or not items:
        raise UserInputError(
            f"snapshot {snapshot.id} ({snapshot.kind}) scores association tests on word-set "
            f"benchmarks (sochindi-weat, socbias-hi-weat, en-weat, ...); "
            + (f"not {', '.join(other)}" if other else "no word-set benchmark was selected")
        )
    try:
        backend = ctx.kind.load_backend()(
            snapshot, device=options.device, dtype=options.dtype, on_event=ctx.on_event
        )
    except SnapshotUnavailable as exc:
        return RunOutcome(snapshot.id, None, "skipped", reason=str(exc))
    return _EmbedScoring(
        ctx,
        backend,
        fingerprint=fingerprint(snapshot, spec.name, spec.version, ctx.benches, options),
        metric=spec.name,
        repeats=options.repeat,
        repeat_group=new_repeat_group(options.repeat),
        texts=sorted({it.payload["text"] for it in items}),
    )


@dataclass
class _EmbedScoring:
    """A loaded encoder and what every repeat of its runs shares."""

    ctx: JobContext
    backend: Any
    fingerprint: str
    metric: str
    repeats: int
    repeat_group: str | None
    texts: list[str]  # every distinct term, embedded once a run

    def repeat(self, rep: int) -> _EmbedRun:
        return _EmbedRun(self, rep)


@dataclass
class _EmbedRun(RunHooks):
    """One repeat: embed every term, store a row and a vector per term and what embedded
    them. Nothing is skipped on resume: scores depend on the whole sets (see above)."""

    shared: _EmbedScoring
    rep: int

    def new_record(self) -> RunRecord:
        ctx, backend = self.shared.ctx, self.shared.backend
        return ctx.local_record(
            self.shared,
            self.rep,
            backend,
            batch_size=None,
            environment=environment() | torch_facts(backend.device) | weights_facts(backend),
        )

    def score(self, run: OpenRun) -> None:
        ctx, backend, spec, texts = (
            self.shared.ctx,
            self.shared.backend,
            self.shared.ctx.metric,
            self.shared.texts,
        )
        if hasattr(backend, "progress"):
            backend.progress = ctx.progress(
                f"{ctx.snapshot.id} #{self.rep + 1} embedding", len(texts)
            )
        embedded = dict(zip(texts, backend.embed(texts), strict=True))
        rows, vectors = term_rows(ctx.items, embedded, spec.name, spec.version)
        for start in range(0, len(rows), BATCH):
            ctx.store.add_scores(run.run_id, rows[start : start + BATCH])
        ctx.store.add_embeddings(run.run_id, {k: v.tolist() for k, v in vectors.items()})
        ctx.store.update_run_environment(run.run_id, {"embedding": backend.describe()})
