"""The HTML report as a real browser draws it: headless Chromium, offline, screenshot checked.

Parsing the HTML proves what is in the file; only a browser proves the inline SVG and CSS
actually paint a plot. The check is on colours the plot alone uses: the series line, the
interval band and the regression / improvement flag markers.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_report_cases import gpt4o_case

from monitor.report import render_html

WIDTH, HEIGHT = 1280, 2000
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")

LINE = (0x09, 0x69, 0xDA)  # --band in style.css: the series line and dots
BAND = (0xDB, 0xE8, 0xF9)  # the same blue at 16% over white: the Wilson band
REGRESSION = (0xCF, 0x22, 0x2E)
IMPROVEMENT = (0x1A, 0x7F, 0x37)


def screenshot(html_file: Path, png: Path, profile: Path) -> None:
    """Render ``html_file`` with no network, no GPU and a throwaway profile."""
    subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            f"--window-size={WIDTH},{HEIGHT}",
            html_file.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )


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

    # The trends sit under the header, in the top third of the page.
    top = np.asarray(img)[: HEIGHT // 3]
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
