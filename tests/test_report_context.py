"""Bias rates in context (neutral control and metric panel) in the three report formats."""

from __future__ import annotations

from datetime import UTC, datetime

from _report_sections import pairs, updated

from monitor.report.html import render_html
from monitor.report.json_out import from_json, to_json
from monitor.report.markdown import render_markdown
from monitor.report.model import ContextRate, ReportInput, ScoreContext


def _report(snapshot: str = "smollm2") -> ReportInput:
    ctx = ScoreContext(
        run_id="20261123T000000Z-smollm2-abc123",
        snapshot_id=snapshot,
        benchmark="bhed-caste",
        axis="caste",
        metric="cll",
        rate=ContextRate(label="cll", value=0.387, ci=(0.30, 0.482), k=41, n=106),
        control_benchmark="bhed-neutral",
        control=ContextRate(label="bhed-neutral", value=0.25, ci=(0.152, 0.382), k=13, n=52),
        panel=(
            ContextRate(label="cll", value=0.387, k=41, n=106, control=0.25),
            ContextRate(label="cll-reference", value=0.613, k=65, n=106, control=0.923),
            ContextRate(label="ull", value=0.462, k=49, n=106, control=0.346),
        ),
        agreement=ContextRate(label="all three metrics agree", value=0.075, k=8, n=106),
    )
    return ReportInput(title="t", generated_at=datetime(2026, 11, 23, tzinfo=UTC), contexts=(ctx,))


def test_markdown_html_and_json_show_the_context() -> None:
    report = _report()
    md = render_markdown(report)
    assert "### Bias rates in context" in md
    row = next(line for line in md.splitlines() if line.startswith("| smollm2"))
    for text in ("38.7% [30.0, 48.2]", "25.0% [15.2, 38.2] bhed-neutral", "61.3% (ctl 92.3%)",
                 "46.2% (ctl 34.6%)", "7.5% of 106"):  # fmt: skip
        assert text in row
    html = render_html(report)
    assert "Bias rates in context" in html and "61.3%" in html and "ctl 92.3%" in html
    assert from_json(to_json(report)) == report
    # The run whole: two runs of one snapshot share their first 20 characters and more.
    assert "| 20261123T000000Z-smollm2-abc123 |" in row
    assert "<td><code>20261123T000000Z-smollm2-abc123</code></td>" in html


def test_a_default_panel_shows_the_metrics_it_has() -> None:
    """A run scored with the default panel (cll and ull) has no cll-reference: the context
    table shows the two it has and their agreement, and no empty cll-reference column."""
    report = _report()
    (ctx,) = pairs(report).contexts
    two = ctx.model_copy(
        update={
            "panel": (ctx.panel[0], ctx.panel[2]),
            "agreement": ContextRate(label="both metrics agree", value=0.5, k=53, n=106),
        }
    )
    report = updated(report, **{"contexts": (two,)})
    md = render_markdown(report)
    header = next(line for line in md.splitlines() if line.startswith("| Snapshot"))
    assert "cll-reference" not in md and "| cll | ull | Metrics agree |" in header
    row = next(line for line in md.splitlines() if line.startswith("| smollm2"))
    assert "46.2% (ctl 34.6%)" in row and "50.0% of 106" in row
    html = render_html(report)
    assert "<th>cll-reference</th>" not in html and "<th>ull</th><th>Metrics agree</th>" in html
    # Beside a stored run that has all three, the column is there, a dash for the other.
    both = updated(report, **{"contexts": (two, pairs(_report()).contexts[0])})
    lines = render_markdown(both).splitlines()
    assert (
        "| cll | cll-reference | ull | Metrics agree |"
        in lines[next(i for i, line in enumerate(lines) if line.startswith("| Snapshot"))]
    )
    assert "| 38.7% (ctl 25.0%) | — | 46.2% (ctl 34.6%) |" in next(
        line for line in lines if line.startswith("| smollm2") and "50.0% of 106" in line
    )


def test_context_values_are_escaped() -> None:
    report = _report(snapshot="<script>x</script>|*")
    assert "<script>" not in render_html(report)
    md = render_markdown(report)
    assert "<script>" not in md and "\\|\\*" in md


def test_no_context_section_without_contexts() -> None:
    """A report without pair results (nothing compared, or choice questions only) has no
    pair sections: no empty trends, comparisons or context tables to scroll past."""
    empty = ReportInput(title="t", generated_at=datetime(2026, 11, 23, tzinfo=UTC))
    assert "Bias rates in context" not in render_markdown(empty)
    html = render_html(empty)
    for section in ('id="trends"', 'id="comparisons"', 'id="context"'):
        assert section not in html
    assert "No comparison in this report: no run had a baseline to compare with." in html
    # With a context, the section is there (and the others with it).
    assert 'id="context"' in render_html(_report())
