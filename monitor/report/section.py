"""A family's section of the report: its own data, and how the report shows it.

Every family reports through this one pattern. Its ``Report`` capability names its
section model (a subclass of ``FamilySection`` declared in the family's folder, holding
whatever the family shows: the pairs' comparisons and trends, the association tests'
effect sizes, the choice questions' measures per run) and builds it from drift's result
and the stored runs. ``ReportInput.sections`` holds one per family with something of its
own to show; the report frame names no family's fields.

The renderers ask every registered family's section, in the registry's order, for its
parts; each has a default that shows nothing, so a family overrides only what it has:

``lead``      first under the verdict (in the Markdown above the report's title, the
              part a pull-request comment leads with);
``answer``    the family's answer, right under the report's meta line;
``block``     its detail, after every family's answer;
``appendix``  reference material, after what changed between the compared runs;
``headline``  its sentence in the one-line verdict;
``verdicts``  its comparisons' verdicts and runs, which the report counts and lists.

A family whose comparisons are drift's generic records (``ReportInput.family_comparisons``)
gets ``headline`` and ``verdicts`` worded from them by default, and reads them in its
``answer`` with ``ReportInput.comparisons_of``. A section with nothing to show is its
model's default (every field empty); the report keeps none of those, and renders a
family without one from that default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from monitor import fmt as f
from monitor.contract.registry import find_family
from monitor.records import TOO_FEW
from monitor.report.frozen import Frozen

if TYPE_CHECKING:
    from jinja2 import Environment

    from monitor.report.model import ReportInput

ReportFormat = Literal["markdown", "html"]
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


def record_verdicts(report: ReportInput, family: str) -> list[VerdictRef]:
    """The verdicts of ``family``'s comparisons among drift's generic records (a
    section's default ``verdicts``)."""
    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    return [
        VerdictRef(
            snapshot_of.get(c.new_run_id, c.new_run_id),
            c.new_run_id,
            c.baseline_run_id,
            c.verdict.label,
        )
        for c in report.comparisons_of(family)
    ]


def records_headline(report: ReportInput, family: str) -> str:
    """A family's drift records in one sentence (empty if it compared nothing): what each
    flag is about, or how many comparisons nothing cleared (a section's default
    ``headline``)."""
    comps = report.comparisons_of(family)
    if not comps:
        return ""
    snapshot_of = {r.run_id: r.snapshot_id for r in report.runs}
    snapshots = sorted({snapshot_of.get(c.new_run_id, c.new_run_id) for c in comps})
    where = snapshots[0] if len(snapshots) == 1 else f"{len(snapshots)} snapshots"
    known = find_family(family)
    what = (known.words if known else "") or family
    parts = []
    # "difference": a change between runs that differ by design (languages), not drift.
    for verdict in (*FLAGS, "difference"):
        hits = [c for c in comps if c.verdict.label == verdict]
        if hits:
            listed = ", ".join(f"{c.axis} {c.measure} ({f.pp(c.delta)})" for c in hits)
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


@dataclass(frozen=True)
class Rendering:
    """What the report asks a section's part in: ``fmt`` (Markdown or HTML), ``max_rows``
    (the Markdown's row budget) and ``env`` (the HTML report's Jinja2 environment:
    autoescape, its macros; a part extends it with its own folder). Built once per
    part by ``report.families.family_parts``."""

    fmt: ReportFormat
    max_rows: int
    env: Environment | None = None


def no_part(report: ReportInput, how: Rendering) -> str:
    """A part of a family's section (``FamilySection.lead`` and the others) that shows
    nothing: ""."""
    return ""


class FamilySection(Frozen):
    """The base of a family's section model.

    ``family``: the name of the family it belongs to (the registry's). ``json_before``:
    where each of its fields sits in the report's JSON, as the generic key it comes just
    before (a field not named comes just before ``alpha``): the report's JSON is one flat
    document (schema 2), laid out as it was before sections existed, so a reader of an
    older report reads a newer one alike. Every field must have a default: the default
    section is what the report renders, and writes, for a family with nothing to show.
    """

    family: ClassVar[str]
    json_before: ClassVar[Mapping[str, str]] = {}

    def shows_trends(self) -> bool:
        """Whether the section plots runs over time (the run list then says the runs it
        leaves out are plotted)."""
        return False

    # The four parts a section may show, each "" for none, in the report's order:
    # ``lead`` first under the verdict; ``answer`` the family's answer under the report's
    # meta line; ``block`` its detail after every family's answer; ``appendix`` its
    # reference material after what changed between the compared runs. Each is called
    # as ``part(report, how)`` (``no_part``'s signature, ``how`` a ``Rendering``): a section
    # overrides one with a method, or with ``staticmethod(f)`` of a function that needs
    # nothing of the section but the report.
    lead = staticmethod(no_part)
    answer = staticmethod(no_part)
    block = staticmethod(no_part)
    appendix = staticmethod(no_part)

    def headline(self, report: ReportInput) -> str:
        """Its sentence in the one-line verdict ("" for none); by default worded from its
        comparisons among drift's generic records."""
        return records_headline(report, self.family)

    def verdicts(self, report: ReportInput) -> list[VerdictRef]:
        """Its comparisons' verdicts and runs; by default those of its comparisons among
        drift's generic records, in their order."""
        return record_verdicts(report, self.family)
