"""Every `bias-monitor import <name>` is a family's `Importer` declaration (issue 45).

The CLI builds each command from the declaration (argument, one option per field of its
pydantic options model, help), and the work returns what the CLI shows without printing,
so a Python caller can run an import with no CLI: the same runs and the same JSON
document as the command a user types.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from test_caste_history import _env, cli

from monitor.contract.registry import families
from monitor.importers.spec import Importer, ImportOptions, ImportOutcome


def _importers() -> dict[str, Importer]:
    out: dict[str, Importer] = {}
    for family in families():
        declared = family.importers().declared
        out.update(declared() if declared is not None else {})
    return out


def test_each_import_command_is_built_from_its_declaration(tmp_path, shared_datasets,
                                                           session_cache):  # fmt: skip
    """`import --help` lists the declared importers, and each command's help shows its
    declaration: the argument's help and an option per field of its options model, with
    the field's description, no other option but --db (with --lake-data) and --format."""
    importers = _importers()
    assert set(importers) == {"caste-bias", "caste-bias-gpt-5", "bbq", "bharatbbq"}
    env = _env(tmp_path, shared_datasets, session_cache)
    listed = cli(env, "import", "--help").stdout
    assert set(re.findall(r"^  (\S+)\s", listed.split("Commands:", 1)[1], re.M)) == set(importers)
    for name, importer in importers.items():
        assert issubclass(importer.options, ImportOptions)
        shown = cli(env, "import", name, "--help").stdout
        flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", shown.split("Options:", 1)[1]))
        text = "".join(shown.split())  # click wraps lines at spaces and after hyphens
        assert "".join(importer.help.split()[:8]) in text
        assert "".join(importer.reads.help.split()) in text
        fields = {f"--{f.replace('_', '-')}" for f in importer.options.model_fields}
        assert flags == fields | {"--db", "--lake-data", "--format", "--help"}, (name, flags)
        for field in importer.options.model_fields.values():
            assert "".join(str(field.description).split()) in text, (name, field.description)


def test_a_python_caller_imports_without_the_cli(tmp_path, shared_datasets, session_cache,
                                                 monkeypatch, capsys):  # fmt: skip
    """The caste study's April folder through the declaration's work: nothing printed,
    and the same document as `import caste-bias ... --format json`, the same measures."""
    from monitor.store.db import Store

    folder = shared_datasets / "caste-bias" / "results" / "april"
    args = ["--snapshot", "gpt-4o-caste-study", "--date", "2025-04-15"]
    env = _env(tmp_path / "cli", shared_datasets, session_cache)
    (tmp_path / "cli").mkdir()
    typed = json.loads(
        cli(env, "import", "caste-bias", str(folder), *args, "--format", "json").stdout
    )

    for key in ("MONITOR_DATA_DIR", "MONITOR_DATA_MIRROR", "MONITOR_CACHE_DIR"):
        monkeypatch.setenv(key, env[key])
    importer = _importers()["caste-bias"]
    options = importer.options(snapshot="gpt-4o-caste-study", date="2025-04-15")
    events: list[str] = []
    store = Store.open(tmp_path / "python.duckdb")
    done = importer.work(store, [folder], options, events.append)
    assert isinstance(done, ImportOutcome) and not done.failed
    assert capsys.readouterr().out == ""  # the work prints nothing: the CLI does
    assert done.document == typed
    (run_id,) = typed["run_ids"]
    with store.read() as view:
        ours = [(m.axis, m.measure, m.k, m.n, m.value) for m in view.measures(run_id)]
    with Store.open(Path(env["MONITOR_DB"])).read() as view:
        theirs = [(m.axis, m.measure, m.k, m.n, m.value) for m in view.measures(run_id)]
    assert ours == theirs and any(m[1] == "bias_rate" for m in ours)
    rates = [s.body for s in done.shown if isinstance(s.body, str) and "%" in s.body]
    assert len(rates) == 4, done.shown  # a bias-rate line per axis, as the table shows


def test_an_option_the_model_refuses_is_one_line_and_creates_no_store(tmp_path, shared_datasets,
                                                                      session_cache):  # fmt: skip
    """`--snapshot gpt-5` (not MODEL=SNAPSHOT) is refused by the options model, before
    the store is opened: exit 2, one line naming the option, no database file."""
    env = _env(tmp_path, shared_datasets, session_cache)
    folder = shared_datasets / "caste-bias-gpt-5" / "results"
    db = tmp_path / "never.duckdb"
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "import", "caste-bias-gpt-5", str(folder),
         "--date", "2025-08-14", "--snapshot", "gpt-5", "--db", str(db)],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "error: --snapshot 'gpt-5': use MODEL=SNAPSHOT"
    assert not db.exists()
