"""The HTML report: one self-contained, script-free file with a plot per trend, within budget."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser

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
    svgs = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    assert len(svgs) == len(report.trends) == 2
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
    assert html.count("<svg") == 12
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
    assert (a.x, b.x) == (plot.x0, plot.x1)  # first and last run span the plot
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
