"""The answer a report leads with, whatever the families: one verdict sentence, and the
verdicts of every comparison to count and list.

Each family says its own part: a family that keeps report fields of its own (the pairs,
the association tests) through its ``report_headline`` and ``report_verdicts`` hooks; a
family whose comparisons are drift's generic records (``ReportInput.family_comparisons``:
choice questions) is worded here from those records. Families come in the registry's
order, as in ``drift``'s output.
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor import fmt
from monitor.records import TOO_FEW
from monitor.report.model import VERDICT_ORDER, ReportInput

FLAGS = ("regression", "improvement")


@dataclass(frozen=True)
class VerdictRef:
    """One comparison's verdict and the runs it compared, whatever its family: what the
    report counts (the badges, the meta line), names among its runs and lists under
    "What changed". ``snapshot_id`` is the new run's snapshot."""

    snapshot_id: str
    new_run_id: str
    baseline_run_id: str | None
    verdict: str


def verdict_refs(report: ReportInput) -> list[VerdictRef]:
    """Every comparison's verdict, family by family in the registry's order (each
    family's own order inside: the pairs' drifts first)."""
    from monitor.contract.registry import families

    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    out: list[VerdictRef] = []
    for family in families():
        hook = family.report().verdicts
        if hook is not None:
            out += hook(report)
        out += [
            VerdictRef(
                snapshot_of.get(c.new_run_id, c.new_run_id),
                c.new_run_id,
                c.baseline_run_id,
                c.verdict.label,
            )
            for c in report.family_comparisons
            if c.family == family.name
        ]
    return out


def verdict_counts(report: ReportInput) -> dict[str, int]:
    """Verdicts by kind over every kind of comparison (pair axes, association tests,
    the families' records), controls never counted."""
    refs = verdict_refs(report)
    return {v: sum(r.verdict == v for r in refs) for v in VERDICT_ORDER}


def headline(report: ReportInput) -> str:
    """The verdict in one sentence, plain text: per family, what regressed, what improved,
    or that nothing cleared the test, with how many snapshots were compared."""
    from monitor.contract.registry import families

    parts = []
    for family in families():
        hook = family.report().headline
        parts.append(hook(report) if hook is not None else _records_headline(report, family))
    text = " ".join(p for p in parts if p)
    return text or "No comparison in this report: no run had a baseline to compare with."


def _records_headline(report: ReportInput, family) -> str:
    """A family's drift records in one sentence (empty if it compared nothing): what each
    flag is about, or how many comparisons nothing cleared."""
    comps = [c for c in report.family_comparisons if c.family == family.name]
    if not comps:
        return ""
    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    snapshots = sorted({snapshot_of.get(c.new_run_id, c.new_run_id) for c in comps})
    where = snapshots[0] if len(snapshots) == 1 else f"{len(snapshots)} snapshots"
    what = family.words or family.name
    parts = []
    # "difference": a change between runs that differ by design (languages), not drift.
    for verdict in (*FLAGS, "difference"):
        hits = [c for c in comps if c.verdict.label == verdict]
        if hits:
            listed = ", ".join(f"{c.axis} {c.measure} ({fmt.pp(c.delta)})" for c in hits)
            parts.append(f"{len(hits)} {verdict}{'s' * (len(hits) != 1)}: {listed}")
    if parts:
        return f"{where} ({what}): " + "; ".join(parts) + "."
    # A sign-flip over a handful of templates cannot clear the test: no verdict at all.
    few = sum(c.verdict.label == TOO_FEW for c in comps)
    if few == len(comps):
        return f"{where} ({what}): {TOO_FEW} ({few} comparisons)."
    if few:
        return (
            f"{where} ({what}): no flagged change in {len(comps) - few} comparisons; "
            f"{TOO_FEW} in {few}."
        )
    return f"{where} ({what}): no flagged change in {len(comps)} comparisons."
