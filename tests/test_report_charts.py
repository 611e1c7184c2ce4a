"""The report's charts, through `bias-monitor report` on a real store, drawn by a browser.

The store: the GPT-4o caste study imported from its April and July result files (four
axes compared), the April files once more as a second snapshot (a trend the report of
the first must not show), and the BharatBBQ age predictions (llama and gemma compared:
accuracy and bias scores). `report -s` then draws the four kinds of chart: each axis's
new run beside its baseline, the forest of paired changes, the trends and the choice
questions' charts. Headless Chromium at 1400 and 800 px says where each one lands.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from test_caste_history import _env, cli
from test_report_cases import NIGHT0, point
from test_report_screenshot import _OFFLINE, BROWSER, screenshot

from monitor import fmt
from monitor.report import Trend
from monitor.report.model import TrendGroup
from monitor.report.plots import layout

STUDY = "gpt-4o-caste-study"
OTHER = "other-caste-study"
QA = ("--snapshot", "gemma-bharatbbq-paper", "--baseline-snapshot", "llama-bharatbbq-paper")
WIDTHS = (1400, 800)


@pytest.fixture(scope="module")
def reports(tmp_path_factory, shared_datasets, session_cache) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("charts")
    env = _env(base, shared_datasets, session_cache)
    results = shared_datasets / "caste-bias" / "results"
    for month, day, snapshot in (
        ("april", "2024-04-16", STUDY),
        ("july", "2024-07-18", STUDY),
        ("april", "2024-05-01", OTHER),
    ):
        cli(env, "import", "caste-bias", str(results / month), "--snapshot", snapshot,
            "--date", day)  # fmt: skip
    bharat = shared_datasets / "bharatbbq" / "Example_Predictions" / "Age_examples.csv"
    cli(env, "import", "bharatbbq", str(bharat))
    out = {name: base / name for name in ("all", "study", "qa")}
    cli(env, "report", "--out", str(out["all"]), "--since", "2024-01-01")
    cli(env, "report", "--out", str(out["study"]), "-s", STUDY, "--since", "2024-01-01")
    cli(env, "report", "--out", str(out["qa"]), *QA)
    return out


def _page(folder: Path) -> str:
    return (folder / "report.html").read_text(encoding="utf-8")


def _svgs(page: str, kind: str) -> list[str]:
    return re.findall(rf'<svg class="{kind}" .*?</svg>', page, flags=re.S)


def test_each_kind_of_chart_is_drawn_with_its_numbers_and_a_title(reports):
    study = _page(reports["study"])
    beside = _svgs(study, "plot chart dots")
    changes = _svgs(study, "plot chart changes")
    trends = _svgs(study, "plot")
    assert len(beside) == 1 and len(changes) == 1 and len(trends) == 4  # caste, gender, …
    # Beside: every compared axis, baseline and new run each with its interval.
    data = json.loads((reports["study"] / "report.json").read_text())
    comps = {c["axis"]: c for c in data["comparisons"]}
    assert set(comps) == {"caste", "gender", "race", "religion"}
    # A balanced axis draws its balanced rate, each direction and the raw rate (rows with
    # an interval: balanced and raw); an axis naming one group draws its raw rate.
    rows = with_ci = 0
    for axis, c in comps.items():
        assert f"{axis} (bhed-{axis})" in beside[0]
        old, new = f"{100 * c['rate_old']:.1f}%", f"{100 * c['rate_new']:.1f}%"
        assert f"{old} → {new}" in beside[0]
        b = c["balanced"]
        rows += 1 + (1 + len(b["directions"]) if b else 0)
        with_ci += 2 if b else 1
        if b:
            assert f"balanced: baseline {100 * b['rate_old']:.1f}%" in beside[0]
    assert any(c["balanced"] for c in comps.values()) and rows > 4
    assert beside[0].count('<circle class="old"') == beside[0].count('<circle class="new"') == rows
    assert beside[0].count('class="ci-old"') == beside[0].count('class="ci-new"') == with_ci
    # The forest: each axis's tested change (balanced where it has one), its interval and
    # its ±MDE band.
    assert changes[0].count('<rect class="mde"') == 4 and changes[0].count('class="ci"') == 4
    for c in comps.values():  # the numbers the comparison tables print
        tested = c["balanced"] or c
        assert f"{fmt.pp(tested['delta'])} {fmt.pp_interval(tested['delta_ci'])}" in changes[0]
    # Every chart says what it shows, to a screen reader and as a tooltip.
    for svg in beside + changes + trends:
        label = re.search(r'aria-label="([^"]+)"', svg).group(1)
        assert re.search(r"<title>([^<]+)</title>", svg).group(1) == label
        assert len(label) > 30
    # Two runs are two dots, each with its interval (not one dot and a hairline).
    caste = next(t for t in trends if "on caste" in t)
    assert caste.count('<circle class="dot"') == caste.count('<line class="whisker"') == 2

    qa = _page(reports["qa"])
    accuracy, bias = _svgs(qa, "plot chart dots")
    assert "Accuracy per category" in accuracy and "bias scores per category" in bias
    # Accuracy on the disambiguated questions fell (91.1% → 49.3%), drawn beside s_DIS.
    assert "accuracy, disambiguated" in accuracy and "91.1% → 49.3%" in accuracy
    assert "s_AMB, ambiguous" in bias and "+48.5 → +3.2" in bias
    assert accuracy.count('class="ci-new"') == 2 and bias.count('class="ci-new"') == 2


def test_report_s_shows_only_the_asked_snapshot_and_its_baseline(reports):
    everything = _page(reports["all"])
    assert OTHER in everything  # the second snapshot's trend is in the whole report
    for name in ("report.html", "report.md", "report.json"):
        text = (reports["study"] / name).read_text(encoding="utf-8")
        assert STUDY in text and OTHER not in text, name
        assert "bharatbbq-paper" not in text, name  # nor the choice-question runs
    data = json.loads((reports["qa"] / "report.json").read_text())
    shown = {r["snapshot_id"] for r in data["runs"]} | {t["snapshot_id"] for t in data["trends"]}
    assert shown == {"gemma-bharatbbq-paper", "llama-bharatbbq-paper"}  # and its baseline


# Appended to a copy of the page (the report has no script and a CSP forbidding one):
# where each chart and each of its texts lands, read back through --dump-dom.
_PROBE = """<script>
(() => {
  const cs = getComputedStyle(document.body);
  const b = document.body.getBoundingClientRect();
  const left = b.left + parseFloat(cs.paddingLeft), right = b.right - parseFloat(cs.paddingRight);
  const charts = [...document.querySelectorAll("svg.plot")].map((s) => {
    const r = s.getBoundingClientRect();
    const outside = [...s.querySelectorAll("text")].filter((t) => {
      const q = t.getBoundingClientRect();
      return q.width > 0 && (q.left < r.left - 1 || q.right > r.right + 1);
    }).map((t) => t.textContent);
    const font = [...s.querySelectorAll("text")].map((t) => t.getBoundingClientRect().height);
    return {kind: s.getAttribute("class"), left: r.left, right: r.right, width: r.width,
            height: r.height, outside, min_text_px: Math.min(...font)};
  });
  const out = document.createElement("pre");
  out.id = "charts-measured";
  out.textContent = JSON.stringify({left, right, charts,
    scroll_width: document.documentElement.scrollWidth, viewport: window.innerWidth});
  document.body.appendChild(out);
})();
</script>"""


def measure_charts(page: Path, work: Path, width: int) -> dict:
    text = page.read_text(encoding="utf-8")
    text, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    assert n == 1, "the report lost its CSP"
    probe = work / f"probe-{width}.html"
    probe.write_text(text.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    dom = subprocess.run(
        [
            BROWSER,
            *_OFFLINE,
            f"--user-data-dir={work / 'profile'}",
            f"--window-size={width},900",
            "--dump-dom",
            probe.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    ).stdout
    found = re.search(r'<pre id="charts-measured">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script did not run"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.skipif(BROWSER is None, reason="no chromium binary on PATH (apt-get install chromium)")
@pytest.mark.parametrize("width", WIDTHS)
def test_every_chart_lies_within_the_page_in_chromium(reports, tmp_path, width):
    kinds: dict[str, int] = {}
    for name in ("study", "qa"):
        m = measure_charts(reports[name] / "report.html", tmp_path, width)
        assert m["viewport"] == width and m["scroll_width"] <= width, m
        for c in m["charts"]:
            kinds[c["kind"]] = kinds.get(c["kind"], 0) + 1
            assert c["left"] >= m["left"] - 0.5 and c["right"] <= m["right"] + 0.5, c
            assert c["width"] > 0.4 * (m["right"] - m["left"]) and c["height"] > 40, c
            assert c["outside"] == [], c  # no label cut at the chart's edge
            assert c["min_text_px"] >= 8, c  # readable, not shrunk to specks
        screenshot(reports[name] / "report.html", tmp_path / f"{name}-{width}.png",
                   tmp_path / "profile-shot", (width, 2400))  # fmt: skip
        assert (tmp_path / f"{name}-{width}.png").stat().st_size > 10_000
    # The four kinds: beside and choice questions (dots), changes, trends.
    assert kinds == {"plot chart dots": 3, "plot chart changes": 1, "plot": 4}, kinds


def test_two_runs_of_one_configuration_minutes_apart_are_two_dots_and_a_noise_band():
    """The SmolLM2 case of the issue: two runs of one configuration in one afternoon drew
    as one dot with a hairline interval. Each run is now a dot with its interval, on an
    axis of runs (time would put them on one pixel), and their spread is a noise band."""
    a = point("a", NIGHT0, 60, 100)
    b = point("b", NIGHT0 + timedelta(minutes=20), 66, 100)
    trend = Trend(
        snapshot_id="s",
        benchmark="bhed-caste",
        axis="caste",
        points=[a, b],
        groups=[TrendGroup(key="k", label="2 runs of one configuration", run_ids=("a", "b"))],
    )
    plot = layout(trend)
    assert len(plot.dots) == 2 and len(plot.whiskers) == 2
    (da, db) = plot.dots
    assert db.x - da.x > 100  # apart, not on one pixel
    assert [w.y_high < w.y_low for w in plot.whiskers] == [True, True]
    [band] = plot.groups
    assert band.y_low == da.y and band.y_high == db.y  # from the lower run to the higher
    assert band.x0 < da.x < db.x < band.x1
    assert len(plot.x_ticks) == 2 and plot.x_ticks[1].label == "02:50"  # the second run's time
