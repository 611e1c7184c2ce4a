"""The HTML report: one self-contained, script-free file with a plot per trend, within budget."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

import pytest
from _report_sections import pairs, updated
from test_report_cases import IMG, NIGHT0, SCRIPT, gpt4o_case, malicious_case, point, year_case

from monitor.report import Trend, render_html, write_report
from monitor.report.html import environment
from monitor.report.plots import layout, tick_labels, time_ticks

SIZE_BUDGET = 300_000  # bytes, for a year of nightly runs of a few snapshots


class _Tags(HTMLParser):
    """Every start tag with its attributes, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    p = _Tags()
    p.feed(html)
    return p.tags


def test_one_svg_plot_per_trend_with_band_line_reference_and_flags():
    report = gpt4o_case()
    html = render_html(report)
    svgs = re.findall(r'<svg class="plot" .*?</svg>', html, flags=re.S)  # the trends
    assert len(svgs) == len(pairs(report).trends) == 2
    smol = svgs[1]
    assert 'aria-label="bias_rate of smollm2-135m on caste (bhed-caste) over time"' in smol
    assert smol.count("<polygon") == 1 and smol.count("<polyline") == 1
    assert smol.count('<circle class="dot"') == 14
    assert smol.count('<line class="ref"') == 1 and smol.count('<line class="ctl"') == 1
    assert smol.count('<g class="flag regression">') == 1
    assert '<g class="flag improvement">' in svgs[0]
    assert "2024-07-11 smol-n10: 70.0% [60.4, 78.1] — regression" in html


def test_the_page_reaches_for_nothing_outside_itself():
    for report in (gpt4o_case(), year_case(snapshots=1, axes=("caste",))):
        html = render_html(report)
        assert not re.search(r"https?://", html)
        assert "<script" not in html.lower()
        assert "@import" not in html and "url(" not in html
        for tag, attrs in tags(html):
            assert tag not in ("script", "link", "img", "iframe", "object", "embed"), tag
            assert not any(k in ("src", "href") or k.startswith("on") for k in attrs), tag
        csp = next(a for t, a in tags(html) if a.get("http-equiv") == "Content-Security-Policy")
        assert csp["content"].startswith("default-src 'none'")


def test_a_year_of_nightlies_fits_the_size_budget():
    report = year_case()  # 3 snapshots × 4 axes × 365 nights
    html = render_html(report)
    size = len(html.encode("utf-8"))
    assert size < SIZE_BUDGET, f"{size} bytes"
    assert html.count('<svg class="plot" ') == 12  # a trend plot per snapshot × axis
    # The thousand complete runs are plotted, not tabulated; the compared ones are listed.
    assert "1089 other complete runs are plotted in the trends, not listed." in html


def test_hostile_values_are_escaped_everywhere():
    html = render_html(malicious_case())
    assert "<script" not in html.lower()
    assert "<img" not in html and "<iframe" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    for tag, attrs in tags(html):
        assert tag not in ("script", "img", "iframe"), tag
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
    # Inside attributes (SVG labels, code titles) the quote cannot close the attribute.
    assert f'title="run{IMG}"' not in html
    assert any(a.get("title") == f"run{IMG}" for _, a in tags(html))
    assert any(a.get("aria-label", "").startswith(f"bias_rate of {SCRIPT}") for _, a in tags(html))


def test_every_template_is_autoescaped():
    env = environment()
    for name in env.list_templates():
        assert env.autoescape(name) is True, name
    assert env.from_string("{{ x }}").render(x=SCRIPT) == "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_quality_provenance_and_quarantine_are_shown():
    html = render_html(gpt4o_case())
    assert '<tr class="fail">' in html and "expect_column_values_to_not_be_null(lp_stereo)" in html
    assert '<tr class="quarantined">' in html
    assert "results suite failed: 12 items with NaN log-probability" in html
    assert "<code>snapshot_manifest.source.model</code></td><td>gpt-4</td><td>gpt-4o</td>" in html
    assert "1 run bookkeeping fields differ" in html
    assert "35 flipped items" in html
    # The quarantined run is nowhere in a plot.
    assert "smol-q07" not in "".join(re.findall(r"<svg\b.*?</svg>", html, flags=re.S))


def test_a_gap_in_a_series_breaks_the_line_and_band():
    pts = [point(f"r{i}", NIGHT0 + timedelta(days=i), 60, 100) for i in range(6)]
    pts[3] = pts[3].model_copy(update={"value": None, "ci_low": None, "ci_high": None, "n": 0})
    plot = layout(Trend(snapshot_id="s", benchmark="bhed-caste", axis="caste", points=pts))
    assert len(plot.lines) == 2 and len(plot.bands) == 2
    assert len(plot.dots) == 5


def test_plot_geometry_matches_the_values():
    pts = [point("a", NIGHT0, 60, 100), point("b", NIGHT0 + timedelta(days=10), 80, 100, "x")]
    plot = layout(Trend(snapshot_id="s", benchmark="bhed-caste", axis="caste", points=pts))
    (a, b) = plot.dots
    # First and last run span the plot, a few px clear of its frame.
    pad = 0.03 / 1.06 * (plot.x1 - plot.x0)
    assert a.x == pytest.approx(plot.x0 + pad, abs=0.1)
    assert b.x == pytest.approx(plot.x1 - pad, abs=0.1)
    # y spans 50%..90% (the reference line and the upper Wilson bound, snapped to 10%).
    assert [t.label for t in plot.y_ticks] == ["50%", "60%", "70%", "80%", "90%"]
    assert plot.reference_y == plot.y1
    assert a.y == plot.y1 - 0.25 * (plot.y1 - plot.y0)  # 60% is a quarter of the way up
    assert b.y == round(plot.y1 - 0.75 * (plot.y1 - plot.y0), 1)
    assert plot.flags[0].x == b.x and plot.flags[0].kind == ""  # "x" names no verdict
    assert plot.last is not None and plot.last.label == "80.0%"


def test_time_ticks_are_calendar_aligned_and_few():
    start = datetime(2024, 1, 1, 2, tzinfo=UTC)
    year = time_ticks(start, start + timedelta(days=364))
    assert len(year) <= 8 and all(t.day == 1 for t in year)
    assert tick_labels(year)[0] == "Mar 2024"  # 1 Jan 02:00 is after the first month start
    fortnight = time_ticks(start, start + timedelta(days=13))
    assert len(fortnight) <= 8 and tick_labels(fortnight)[0] == "2 Jan"


def test_write_report_writes_all_three(tmp_path):
    paths = write_report(gpt4o_case(), tmp_path / "out")
    assert {p.name for p in paths.values()} == {"report.md", "report.html", "report.json"}
    assert all(p.stat().st_size > 500 for p in paths.values())


_PR_RUNS = (
    "20261125T110508Z-smollm2-135m-instruct-q4-finetune-1ce080",
    "20261124T020000Z-smollm2-135m-instruct-q4-77aa01",
)


def _pr_case():
    """A PR check's report: a new snapshot (one run) against SmolLM2's four-axis baseline,
    scored on caste and religion only; caste carries its neutral control, and a stale
    comparison of the control benchmark itself (as older drift output had) is present."""
    from test_report_cases import comparison

    from monitor.report.model import ContextRate, ControlBeside, ScoreContext, UnscoredAxis

    new, old = (
        "20261125T110508Z-smollm2-135m-instruct-q4-finetune-1ce080",
        "20261124T020000Z-smollm2-135m-instruct-q4-77aa01",
    )
    base = gpt4o_case()
    caste = comparison("my-finetune", "caste", old, new, 41, 106, 30, 106, 14, 3)
    caste |= dict(
        verdict="improvement",
        flagged=True,
        p_adjusted=0.02,
        mde=0.074,
        control=ControlBeside(
            benchmark="bhed-neutral", axis="caste-control", rate_old=0.25, rate_new=0.058
        ),
    )
    religion = comparison("my-finetune", "religion", old, new, 57, 121, 58, 121, 1, 2)
    religion |= dict(verdict="no significant change", p_adjusted=0.9, mde=0.065)
    stale_control = comparison("my-finetune", "caste-control", old, new, 13, 52, 3, 52, 10, 0)
    stale_control |= dict(benchmark="bhed-neutral", verdict="improvement", p_adjusted=0.006)
    contexts = tuple(
        ScoreContext(
            run_id=r, snapshot_id="my-finetune", benchmark="bhed-caste", axis="caste", metric="cll",
            rate=ContextRate(label="cll", value=v), control_benchmark="bhed-neutral",
            control=ContextRate(label="bhed-neutral", value=c),
        )
        for r, v, c in ((new, 30 / 106, 0.058), (old, 41 / 106, 0.25))
    )  # fmt: skip
    single = Trend(
        snapshot_id="my-finetune", benchmark="bhed-religion", axis="religion", metric="cll",
        points=(point(new, NIGHT0, 58, 121),),
    )  # fmt: skip
    control_trend = Trend(
        snapshot_id="my-finetune", benchmark="bhed-neutral", axis="caste-control", metric="cll",
        points=(point(new, NIGHT0, 3, 52),),
    )  # fmt: skip
    unscored = tuple(
        UnscoredAxis(snapshot_id="my-finetune", new_run_id=new, baseline_run_id=old,
                     benchmark=f"bhed-{a}", axis=a, missing="new")
        for a in ("gender", "race")
    )  # fmt: skip
    runs = tuple(
        r.model_copy(update={"run_id": rid, "snapshot_id": snap})
        for r, (rid, snap) in zip(
            base.runs[:2], ((new, "my-finetune"), (old, "smollm2-135m-instruct-q4")), strict=True
        )
    )
    return updated(
        base,
        **{
            "comparisons": tuple(
                type(pairs(base).comparisons[0])(**c) for c in (caste, religion, stale_control)
            ),
            "contexts": contexts,
            "trends": (pairs(base).trends[1], single, control_trend),
            "unscored": unscored,
            "runs": runs,
            "provenance": (),
        },
    )


def test_the_answer_comes_first_with_controls_beside_their_axis():
    html = render_html(_pr_case())
    head, rest = html.split('<h2 id="trends">', 1)
    answer = head.split('<h2 id="answer">', 1)[1]
    # The verdict sentence and badges lead; the control is never a verdict or a badge.
    assert "my-finetune: 1 improvement: caste (−10.4 pp); 1 other axis comparison" in head
    badges = re.findall(r'<span class="v-[^"]+">([^<]+)</span>', head.split("</header>")[0])
    assert badges == ["1 improvement", "1 no significant change"]
    # Both runs named once, in full, with their snapshots (the baseline's own name).
    new, old = (f"<code>{r}</code>" for r in _PR_RUNS)
    assert f"<strong>my-finetune</strong> {new}" in answer
    assert f"<strong>smollm2-135m-instruct-q4</strong> {old}" in answer
    rows = re.findall(r"<tr>\s*<td><strong>(\w[\w-]*)</strong>.*?</tr>", answer, flags=re.S)
    assert rows == ["caste", "religion"]  # no caste-control row
    caste_row = re.search(r"<tr>\s*<td><strong>caste</strong>.*?</tr>", answer, flags=re.S)[0]
    assert '25.0% → 5.8%<br><span class="muted">bhed-neutral</span>' in caste_row
    assert "±7.4 pp" in caste_row and "improvement" in caste_row
    assert "Not scored in the new run: gender, race (no verdict)." in answer
    # Nowhere else is the control a comparison or a chart of its own.
    assert "caste-control" not in html
    # The one-run series is a row of points on the shared scale, not a chart.
    assert 'id="single-runs"' in rest and rest.count('<figure id="trend-') == 1
    strip = rest.split('id="single-runs"', 1)[1].split("</table>", 1)[0]
    assert "<strong>my-finetune</strong> — religion" in strip and "47.9%" in strip
    assert '<circle class="dot " cx="173.2"' in strip  # 16 px + 47.9% of 328 px


def test_the_markdown_of_a_pr_check_leads_with_its_verdict():
    from monitor.report import render_markdown

    text = render_markdown(_pr_case())
    lines = text.splitlines()
    assert lines[0].startswith("**Verdict:** my-finetune: 1 improvement: caste (−10.4 pp)")
    new, old = _PR_RUNS
    assert lines[2] == (
        f"**new** my-finetune, run {new} · **baseline** smollm2-135m-instruct-q4, run {old}"
    )
    caste = next(line for line in lines if line.startswith("| caste (bhed-caste) |"))
    assert caste.endswith("| ±7.4 pp | 25.0% → 5.8% (bhed-neutral) |")
    assert "Not scored in the new run: gender, race (no verdict)." in text
    assert "caste-control" not in text
    assert "2 comparisons: 0 regressions, 1 improvement, 1 no significant change" in text


def test_whiskers_and_dots_read_as_the_template_loop_wrote_them():
    """``whisker_lines`` / ``dot_circles`` draw a trend's runs without Jinja's per-number
    lookup: the same bytes as the autoescaped loop they replace, a value that is not a
    number (never one in a plot, but nothing is trusted) escaped as the loop escaped it."""
    from monitor.report.html import dot_circles, whisker_lines
    from monitor.report.plots import Marker, Whisker

    whiskers = [Whisker(46.5, 120.0, 160.3), Whisker(612, 0.1, 1e-05), Whisker('"><b>', 1, 2)]
    dots = [Marker(46.5, 140.2, ""), Marker(612, 3, "<i>"), Marker(7.0, "<script>", "")]
    loop = environment().from_string(
        "{% for w in ws %}\n"
        '<line class="whisker" x1="{{ w.x }}" x2="{{ w.x }}" y1="{{ w.y_high }}" '
        'y2="{{ w.y_low }}"/>\n'
        "{% endfor %}\n"
        "{% for d in ds %}\n"
        '<circle class="dot" cx="{{ d.x }}" cy="{{ d.y }}" r="2.5"/>\n'
        "{% endfor %}\n"
    )
    assert whisker_lines(whiskers) + dot_circles(dots) == loop.render(ws=whiskers, ds=dots)
    assert "&#34;&gt;&lt;b&gt;" in whisker_lines(whiskers)
    assert "<script>" not in dot_circles(dots)
    assert whisker_lines([]) == dot_circles([]) == ""


def test_a_family_folder_s_templates_are_compiled_once_per_process(monkeypatch):
    """A family's parts render in one overlay of the report's environment per folder: a
    fresh overlay per part compiled its templates, and the report's macros, again."""
    import jinja2

    report = gpt4o_case()
    render_html(report)  # every template compiled once
    compiled: list[str | None] = []
    original = jinja2.Environment.compile

    def counting(self, source, name=None, *args, **kwargs):
        compiled.append(name)
        return original(self, source, name, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counting)
    again = render_html(report)
    assert compiled == []
    assert again == render_html(report)


def test_one_run_or_suite_not_listed_is_said_in_the_singular():
    """The counts of what the page leaves out agree in number with what they count."""
    from monitor.report.html import _runs_shown

    report = gpt4o_case()
    shown, _, hidden = _runs_shown(report)
    assert hidden > 1
    one_hidden = next(r for r in report.runs if r not in shown)
    one = report.model_copy(update={"runs": (*shown, one_hidden), "quality_not_listed": 1})
    html = render_html(one)
    assert "1 other complete run is plotted in the trends, not listed." in html
    assert "1 passing suite of runs not compared here is not listed." in html
    assert "runs are" not in html and "suites of" not in html
    many = render_html(report.model_copy(update={"quality_not_listed": 2}))
    assert f"{hidden} other complete runs are plotted in the trends" in many
    assert "2 passing suites of runs not compared here are not listed." in many
