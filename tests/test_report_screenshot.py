"""The HTML report as a real browser draws it: headless Chromium, offline, screenshot checked.

Parsing the HTML proves what is in the file; only a browser proves the inline SVG and CSS
actually paint a plot. The check is on colours the plot alone uses: the series line, the
interval band and the regression / improvement flag markers. And only a browser knows
where things land: the answer (the "new vs baseline" table) must be on the first screen
of a 1400×900 window, and nothing may be wider than the page.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from _report_store import ReportStore, report_store_fixture  # noqa: F401  (session fixture)
from PIL import Image
from test_report_cases import gpt4o_case

from monitor.report import render_html

WIDTH, HEIGHT = 1280, 2000
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")

LINE = (0x09, 0x69, 0xDA)  # --band in style.css: the series line and dots
BAND = (0xDB, 0xE8, 0xF9)  # the same blue at 16% over white: the Wilson band
REGRESSION = (0xCF, 0x22, 0x2E)
IMPROVEMENT = (0x1A, 0x7F, 0x37)


_OFFLINE = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def screenshot(
    html_file: Path, png: Path, profile: Path, size: tuple[int, int] = (WIDTH, HEIGHT)
) -> None:
    """Render ``html_file`` with no network, no GPU and a throwaway profile."""
    subprocess.run(
        [
            BROWSER,
            *_OFFLINE,
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size={size[0]},{size[1]}",
            html_file.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )


# Appended to a copy of the page (the report itself has no script and a CSP forbidding
# one): measures the layout and writes the numbers into the DOM, which --dump-dom prints.
_MEASURE = """<script>
(() => {
  const t = document.querySelector("table.answer, table.cmp");
  const r = t ? t.getBoundingClientRect() : null;
  const body = getComputedStyle(document.body);  // the page: the body's content box
  const pageRight = document.body.getBoundingClientRect().right - parseFloat(body.paddingRight);
  const out = document.createElement("pre");
  out.id = "layout-measured";
  out.textContent = JSON.stringify({
    table_class: t ? t.className : null,
    table_top: r ? r.top + window.scrollY : null,
    table_right: r ? r.right : null,
    scroll_width: document.documentElement.scrollWidth,
    viewport_width: window.innerWidth,
    viewport_height: window.innerHeight,
    page_right: pageRight,
    wider_than_page: [...document.querySelectorAll("body *")]
      .filter((e) => e.getBoundingClientRect().right > pageRight + 0.5)
      .slice(0, 5)
      .map((e) => `${e.tagName}.${e.getAttribute("class")}: ${e.textContent.slice(0, 60)}`),
  });
  document.body.appendChild(out);
})();
</script>"""


def measure_layout(html_file: Path, work: Path, size: tuple[int, int]) -> dict:
    """Where the first comparison table lands and how wide the document is, in a real
    browser window of ``size``: a copy of the page without its CSP and with the measuring
    script, read back through ``--dump-dom``."""
    page = html_file.read_text(encoding="utf-8")
    page, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    assert n == 1, "the report lost its CSP"
    probe = work / "probe.html"
    probe.write_text(page.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    dom = subprocess.run(
        [
            BROWSER,
            *_OFFLINE,
            f"--user-data-dir={work / 'profile-probe'}",
            f"--window-size={size[0]},{size[1]}",
            "--dump-dom",
            probe.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    ).stdout
    found = re.search(r'<pre id="layout-measured">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script did not run"
    return json.loads(html.unescape(found.group(1)))


def near(pixels: np.ndarray, rgb: tuple[int, int, int], tol: int) -> np.ndarray:
    """Mask of pixels within ``tol`` of ``rgb`` in every channel."""
    return (np.abs(pixels.astype(int) - np.array(rgb)) <= tol).all(axis=-1)


@pytest.mark.skipif(BROWSER is None, reason="no chromium binary on PATH (apt-get install chromium)")
def test_headless_chromium_paints_the_plots(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(gpt4o_case()), encoding="utf-8")
    png = tmp_path / "report.png"
    screenshot(page, png, tmp_path / "profile")

    assert png.is_file() and png.stat().st_size > 10_000
    img = Image.open(png).convert("RGB")
    assert img.size == (WIDTH, HEIGHT)
    assert len(img.getcolors(maxcolors=1 << 24)) > 500, "page looks blank"

    # The trends sit under the answer (the verdict tables) and its charts, in the page's
    # second half.
    top = np.asarray(img)[HEIGHT // 2 : 4 * HEIGHT // 5]
    assert top.std() > 20, "plot region is uniform"
    assert near(top, LINE, 30).sum() > 300, "no series line drawn"
    band = near(top, BAND, 8)
    assert band.sum() > 20_000, "no interval band drawn"
    # Inside the box the bands span (the plot areas, not the badges or the flag list
    # in the same colours) the flag markers must show.
    ys, xs = np.nonzero(band)
    inside = top[ys.min() - 8 : ys.max() + 8, xs.min() - 8 : xs.max() + 8]
    assert near(inside, REGRESSION, 24).sum() > 30, "no regression flag marker drawn"
    assert near(inside, IMPROVEMENT, 24).sum() > 30, "no improvement flag marker drawn"


FIRST_SCREEN = (1400, 900)


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no chromium binary on PATH (apt-get install chromium)")
def test_the_answer_is_on_the_first_screen_and_nothing_is_wider_than_the_page(
    report_store: ReportStore, tmp_path: Path
) -> None:
    """The report of two real compared pairs (the GPT-4o study, two SmolLM2 runs) at
    1400×900: the "new vs baseline" table starts within the first 900 px and the document
    is no wider than the window."""
    layout = measure_layout(report_store.html, tmp_path, FIRST_SCREEN)
    assert layout["viewport_width"] == FIRST_SCREEN[0], layout
    assert layout["table_class"] == "answer", layout
    assert 0 < layout["table_top"] < FIRST_SCREEN[1], layout
    assert layout["scroll_width"] <= layout["viewport_width"], layout
    assert layout["wider_than_page"] == [], layout

    png = tmp_path / "first-screen.png"
    screenshot(report_store.html, png, tmp_path / "profile", FIRST_SCREEN)
    img = Image.open(png).convert("RGB")
    assert img.size == FIRST_SCREEN
    assert len(img.getcolors(maxcolors=1 << 24)) > 50, "page looks blank"
    shutil.copy(png, report_store.folder / "first-screen.png")  # to look at

    # The answer names both runs in full, and every scored axis is in context, panel or not.
    page = report_store.html.read_text(encoding="utf-8")
    answer = page.split('id="answer"', 1)[1].split('id="trends"', 1)[0]
    assert all(f"<code>{run}</code>" in answer for run in report_store.smol_runs)
    in_context = {(c["run_id"], c["axis"]) for c in report_store.data["contexts"]}
    no_panel = report_store.smol_runs[1]
    assert {(no_panel, "caste"), (no_panel, "religion")} <= in_context


def test_a_wide_table_is_caught(tmp_path: Path) -> None:
    """The measurement can fail: a page with a 2,000 px table reports the overflow (past
    the window and past the page's content box) and a table pushed down reports its top."""
    if BROWSER is None:
        pytest.skip("no chromium binary on PATH (apt-get install chromium)")
    page = tmp_path / "wide.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        'content="default-src \'none\'"></head><body><div style="height:1500px"></div>'
        '<table class="cmp" style="width:2000px"><tr><td>x</td></tr></table></body></html>',
        encoding="utf-8",
    )
    layout = measure_layout(page, tmp_path, FIRST_SCREEN)
    assert layout["scroll_width"] > FIRST_SCREEN[0]
    assert layout["wider_than_page"][0].startswith("TABLE")
    assert layout["table_top"] > FIRST_SCREEN[1]
