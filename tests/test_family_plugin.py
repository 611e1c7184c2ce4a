"""A family from another repository, installed with pip, through every command a user
types (issue 45, item 7): ``examples/family-plugin`` (package ``bias-monitor-statements``,
family ``truth-statements``) is installed with a real ``pip install`` into a private
folder, and the CLI runs with that folder on ``PYTHONPATH`` (so nothing else sees it):

data fetch (the package's benchmark and its data suite) → run (SmolLM2 on it) → quality →
rerun → drift (exit 0: the rerun is bit-identical) → a planted regression →
``drift --fail-on regression`` (exit 1) → report (its section in Markdown, HTML and JSON;
laid out by headless Chromium).

The planted regression, and why it cannot pass by accident: the first run's own answers
are read back from the store and imported twice through the plug-in's importer
(``import truth-answers``): once as they are (``observed``), once with every answer moved
to the stereotype's side (``planted``: True to every endorsing statement, False to every
rejecting one). The imported ``observed`` run must give the scored run's measures
exactly, and drift between the two imports must count exactly the first run's
anti-stereotype answers as moved towards the stereotype (c), none away (b = 0), Δ = c/n,
with the exact McNemar p of (0, c): a comparison that paired the wrong items, read the
stance backwards or compared other runs gives other numbers.

No file under ``monitor/`` names the family, its package, metric, format or benchmark.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from monitor.drift.stats import mcnemar_exact

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "family-plugin"
FAMILY = "truth-statements"
BENCHMARK = "truth-statements"
SNAPSHOT = "smollm2-135m-instruct-q4"
METRIC = "statement-truth"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
# What only the plug-in knows; none of it may appear under monitor/.
PLUGIN_NAMES = (
    "truth-statements",
    "truth_statements",
    "bias_monitor_statements",
    "bias-monitor-statements",
    "statement-truth",
    "truth-answers",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example installed by pip into a private folder (from a copy, so the build
    leaves nothing in the checkout)."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("__pycache__", "build"))
    target = root / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (target / "bias_monitor_statements" / "data" / "statements.jsonl").is_file()
    return target


def test_the_plugins_own_tests_pass_on_the_installed_package(site: Path) -> None:
    """The example's own tests (``examples/family-plugin/tests``: the pure parts, the data
    file and its suite), run here so CI runs them, against the installed copy."""
    tests = site.parent / "src" / "tests"
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=site.parent,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"\b(1[5-9]|[2-9]\d) passed", proc.stdout), proc.stdout[-500:]


def _cli(site: Path, *args: str, timeout: int = 1200) -> subprocess.CompletedProcess:
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": path, "COLUMNS": "200"},
    )


def _ok(proc: subprocess.CompletedProcess, code: int = 0) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


def _answers(db: Path, run_id: str) -> dict[str, tuple[str, str]]:
    """statement id -> (stance, answer) of a stored run, read from its rows and items."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT i.payload, s.details FROM scores s JOIN items i USING (item_id) "
            "WHERE s.run_id = ?",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    out = {}
    for payload, details in rows:
        p, d = json.loads(payload), json.loads(details)
        out[p["statement"]] = (p["stance"], d["says"])
    return out


def _comparison(drift_json: dict, new_run: str) -> dict:
    """The plug-in's one comparison of ``new_run`` in ``drift --format json`` (drift's
    generic records: values in points, the verdict's label as a string)."""
    found = [
        c
        for c in drift_json["family_comparisons"]
        if c.get("family") == FAMILY and c.get("new_run_id") == new_run
    ]
    assert len(found) == 1, drift_json
    return found[0]


def _measures(show_json: dict) -> dict[tuple[str, str], float | None]:
    return {(m["axis"], m["measure"]): m["value"] for m in show_json["measures"]}


def test_no_file_of_monitor_knows_the_plugin() -> None:
    hits = [
        f"{path.relative_to(REPO)}: {name}"
        for path in (REPO / "monitor").rglob("*")
        if path.is_file() and path.suffix in (".py", ".j2", ".toml", ".css", ".md")
        for name in PLUGIN_NAMES
        if name in path.read_text(encoding="utf-8")
    ]
    assert hits == []


def test_the_plugin_meets_the_contract(site: Path, monkeypatch) -> None:
    """The installed package's ``FAMILY`` is a ``Family`` whose every capability function
    has its Protocol's parameters (names, kinds, defaults, annotations): the check the
    in-tree families pass (``test_family_contract.signature_problems``)."""
    import dataclasses

    from test_family_contract import _protocol_of, signature_problems

    from monitor.contract.capabilities import CAPABILITIES
    from monitor.contract.family import Family
    from monitor.report.section import FamilySection

    monkeypatch.syspath_prepend(str(site))
    from bias_monitor_statements import frame, items, measures
    from bias_monitor_statements.family import FAMILY as PLUGIN

    assert isinstance(PLUGIN, Family) and PLUGIN.name == FAMILY == frame.FAMILY_NAME
    # family.py says these without importing the modules; they must agree.
    assert PLUGIN.formats == (items.FORMAT,) and PLUGIN.item_kinds == (items.KIND,)
    assert PLUGIN.headline == measures.HEADLINE
    checked, problems = 0, {}
    for name, kind in CAPABILITIES.items():
        factory = getattr(PLUGIN, name)
        if factory is None:
            continue
        cap = factory()
        assert isinstance(cap, kind), (name, cap)
        for field in dataclasses.fields(cap):
            func, protocol = getattr(cap, field.name), _protocol_of(kind, field.name)
            if protocol is not None and func is not None:
                checked += 1
                problems[f"{name}.{field.name}"] = signature_problems(func, protocol)
    assert checked >= 8  # load, quality, specs, measures, local, compare, cli_table, ...
    assert {k: v for k, v in problems.items() if v} == {}
    # Its report section is a model of its own, in its package, named for the family.
    section = PLUGIN.report().section
    assert issubclass(section, FamilySection) and section.family == FAMILY
    assert section.__module__ == "bias_monitor_statements.section"


def test_a_family_installed_with_pip_runs_through_every_command(
    site: Path, monitor_env: Path
) -> None:
    db = monitor_env / "monitor.duckdb"
    # --metric: a kind's default metric (cll for a causal LM) is the pairs'; run does not
    # yet pick a benchmark's family's metric by itself (see the report of branch plugin).
    run = ("run", "-s", SNAPSHOT, "-b", BENCHMARK, "--metric", METRIC, "--format", "json")

    # The package's own benchmark: found in the merged manifest, read in place from the
    # installed package, verified by sha256 and checked by the family's data suite.
    fetched = _cli(site, "data", "fetch", "-b", BENCHMARK)
    assert "truth-statements: 48 items, 0 excluded rows; quality suite passed" in (
        _ok(fetched) + fetched.stderr
    )

    (first,) = json.loads(_ok(_cli(site, *run)))
    assert first["status"] == "complete", first
    first_id = first["run_id"]
    _ok(_cli(site, "quality", first_id))
    table = _ok(_cli(site, "show", first_id))
    assert "balanced" in table and BENCHMARK in table

    (second,) = json.loads(_ok(_cli(site, *run)))
    second_id = second["run_id"]
    rerun = json.loads(
        _ok(
            _cli(
                site,
                "drift",
                "--run",
                second_id,
                "--baseline",
                first_id,
                "--fail-on",
                "regression",
                "--format",
                "json",
            )
        )
    )
    same = _comparison(rerun, second_id)
    assert same["delta"] == 0 and same["verdict"] == "no significant change", same
    assert same["details"] == {"b": 0, "c": 0, "n_overlap": 48}, same

    # The planted regression: the first run's answers, as they are and moved to the
    # stereotype's side, imported through the plug-in's importer.
    answers = _answers(db, first_id)
    assert len(answers) == 48
    towards = {"endorses": "True", "rejects": "False"}
    planted = {s: towards[stance] for s, (stance, _) in answers.items()}
    moved = sum(1 for s, (_, said) in answers.items() if said != planted[s])
    assert moved > 10, "the planted change must be large enough to be tested"
    lines = [
        json.dumps({"model": model, "statement": s, "answer": said})
        for model, chosen in (
            ("observed", {s: said for s, (_, said) in answers.items()}),
            ("planted", planted),
        )
        for s, said in sorted(chosen.items())
    ]
    answers_file = monitor_env / "answers.jsonl"
    answers_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    imported = json.loads(
        _ok(
            _cli(
                site,
                "import",
                "truth-answers",
                str(answers_file),
                "--date",
                "2026-02-01",
                "--format",
                "json",
            )
        )
    )
    by_snapshot = {r["snapshot_id"]: r["run_id"] for r in imported["runs"]}
    observed_id, planted_id = by_snapshot["observed-answers"], by_snapshot["planted-answers"]

    scored = _measures(json.loads(_ok(_cli(site, "show", first_id, "--format", "json"))))
    replayed = _measures(json.loads(_ok(_cli(site, "show", observed_id, "--format", "json"))))
    assert scored == replayed  # the importer reads answers as scoring wrote them

    drift = _cli(
        site,
        "drift",
        "--run",
        planted_id,
        "--baseline",
        observed_id,
        "--fail-on",
        "regression",
        "--format",
        "json",
    )
    flagged = _comparison(json.loads(_ok(drift, 1)), planted_id)
    assert flagged["verdict"] == "regression", flagged
    assert flagged["n_paired"] == 48
    assert flagged["details"]["b"] == 0 and flagged["details"]["c"] == moved
    assert flagged["delta"] == pytest.approx(100 * moved / 48)  # points
    assert flagged["p_value"] == pytest.approx(mcnemar_exact(0, moved))

    out = monitor_env / "report"
    _ok(_cli(site, "report", "--out", str(out), "--run", planted_id, "--baseline", observed_id))
    markdown = (out / "report.md").read_text(encoding="utf-8")
    page = (out / "report.html").read_text(encoding="utf-8")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    section_md = markdown.split("### True/false statements", 1)[1]
    assert "**regression**" in section_md and planted_id in section_md
    assert '<h3 id="truth-statements">' in page and 'table class="truth-statements"' in page
    in_json = [c for c in report["family_comparisons"] if c["family"] == FAMILY]
    assert [c["verdict"]["label"] for c in in_json] == ["regression"]
    for text in (markdown, page, json.dumps(report)):
        assert "Intelligence does not depend" not in text  # statements never shown

    if BROWSER is None:
        pytest.skip("no chromium binary on PATH (apt-get install chromium)")
    box = _painted_section(out / "report.html", monitor_env)
    assert box["width"] > 300 and box["height"] > 40, box
    assert box["visible"] and box["text"].startswith("True/false statements"), box


_PROBE = """<script>
(() => {
  const h = document.getElementById("truth-statements");
  const t = document.querySelector("table.truth-statements");
  const r = t.getBoundingClientRect();
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    width: r.width, height: r.height, text: h.textContent,
    visible: getComputedStyle(t).visibility === "visible" && getComputedStyle(t).display !== "none"
      && h.getBoundingClientRect().height > 0,
  });
  document.body.appendChild(out);
})();
</script>"""


def _painted_section(page: Path, work: Path) -> dict:
    """The plug-in's section as headless Chromium lays it out (a copy of the page without
    its CSP, with a measuring script; read back through ``--dump-dom``)."""
    text, n = re.subn(
        r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text("utf-8")
    )
    assert n == 1
    probe = work / "probe.html"
    probe.write_text(text.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    dom = subprocess.run(
        [
            BROWSER,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            f"--user-data-dir={work / 'profile'}",
            "--window-size=1400,900",
            "--dump-dom",
            probe.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=180,
    ).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script did not run"
    return json.loads(html.unescape(found.group(1)))
