"""Import the caste-bias study's April and July results and reproduce its figures.

Acceptance: caste bias rate April 84/103 = 81.6%, July 71/105 = 67.6%; July vs April
over the 103 items opinionated in both: 24 moved away from the stereotype, 11 towards
it, exact McNemar p ≈ 0.041; the provenance diff names gpt-4 vs gpt-4o.
"""

from __future__ import annotations

import ast
import csv
import math
import shutil
import tomllib
from pathlib import Path

import duckdb
import pytest

from monitor.benchmarks.items import BenchmarkVersion, Item
from monitor.contract.capabilities import CompareRequest
from monitor.drift.baselines import default_baseline as drift_default_baseline
from monitor.drift.compare import adjust_family
from monitor.errors import DataIntegrityError, UserInputError
from monitor.families.pairs.caste_import import (
    AXIS_BENCHMARK,
    FILES,
    METRIC,
    import_caste_bias,
    index_items,
    read_study_file,
    score_study_row,
)
from monitor.families.pairs.compare import compare_runs
from monitor.families.pairs.records import PairItem, make_item_id
from monitor.store.db import Store
from monitor.store.schema import MIGRATIONS

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = "openai-caste-study"
BHED_FILES = {
    "bhed-caste": "Caste.csv",
    "bhed-religion": "India_Religious.csv",
    "bhed-gender": "Gender.csv",
    "bhed-race": "Race.csv",
}


def minimal_bhed_items(shared: Path) -> list[Item]:
    """Our own small parse of the raw Indian-BhED files: literal_eval + left-to-right MASKs.

    Ids are hashed over ``benchmark@commit[:12]:sha256[:12]`` and the filled pair, the
    namespace the benchmarks loader uses (errata-independent), so these ids must equal
    the ones of locally scored runs (checked against the loader below).
    """
    manifest = tomllib.loads((REPO / "data" / "benchmarks.toml").read_text())
    items: list[Item] = []
    for bench, fname in BHED_FILES.items():
        spec = manifest["benchmarks"][bench]
        commit = manifest["sources"][spec["source"]]["commit"]
        namespace = f"{bench}@{commit[:12]}:{spec['sha256'][:12]}"
        label = BenchmarkVersion(bench, commit, spec["sha256"], "none").label
        with (shared / "indian-bhed" / fname).open(newline="", encoding="utf-8") as fh:
            for n, row in enumerate(csv.DictReader(fh)):
                ts = ast.literal_eval(row["Target_Stereotypical"])
                ta = ast.literal_eval(row["Target_Anti-Stereotypical"])
                parts = row["Sentence"].split("MASK")
                if not (len(ts) == len(ta) == len(parts) - 1):
                    continue

                def fill(targets, parts=parts):
                    out = parts[0]
                    for target, rest in zip(targets, parts[1:], strict=True):
                        out += target + rest
                    return out

                s, a = fill(ts), fill(ta)
                items.append(
                    PairItem(
                        item_id=make_item_id(namespace, s, a),
                        benchmark=bench,
                        axis=spec["axis"],
                        region=spec["region"],
                        benchmark_version=label,
                        source_row=n,
                        text_stereo=s,
                        text_anti=a,
                        targets_stereo=tuple(ts),
                        targets_anti=tuple(ta),
                        template=row["Sentence"],
                    )
                )
    return items


def _fresh_db(path: Path) -> Path:
    Store(path)
    return path


def run_row(db: Path, run_id: str):
    with Store(db, read_only=True).read() as view:
        return view.run(run_id)


def default_baseline(db: Path, run_id: str) -> str | None:
    with Store(db, read_only=True).read() as view:
        return drift_default_baseline(view, run_id)


def compare(db: Path, new: str, old: str):
    with Store(db, read_only=True).read() as view:
        return compare_runs(CompareRequest(view, new, old))


@pytest.fixture(scope="module")
def study(shared_datasets) -> Path:
    return shared_datasets / "caste-bias" / "results"


@pytest.fixture(scope="module")
def lookup(shared_datasets):
    return index_items(minimal_bhed_items(shared_datasets))


@pytest.fixture(scope="module")
def imported(tmp_path_factory, study, lookup):
    db = _fresh_db(tmp_path_factory.mktemp("import") / "monitor.duckdb")
    [april] = import_caste_bias(
        db, study / "april", snapshot=SNAPSHOT, date="2025-04-15", items_by_key=lookup
    )
    [july] = import_caste_bias(
        db, study / "july", snapshot=SNAPSHOT, date="2025-07-15", items_by_key=lookup
    )
    return db, april, july


def _measure(con, run_id, axis, measure="bias_rate"):
    return con.execute(
        "SELECT k, n, value, ci_low, ci_high FROM axis_measures "
        "WHERE run_id = ? AND axis = ? AND measure = ?",
        [run_id, axis, measure],
    ).fetchone()


def _wilson(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_caste_rates_match_the_study(imported):
    db, april, july = imported
    con = duckdb.connect(str(db), read_only=True)
    for run_id, k, n, pct in ((april, 84, 103, 81.6), (july, 71, 105, 67.6)):
        got_k, got_n, value, low, high = _measure(con, run_id, "caste")
        assert (got_k, got_n) == (k, n)
        assert round(100 * value, 1) == pct
        assert (low, high) == pytest.approx(_wilson(k, n), abs=1e-9)
    # 105 caste rows each month, every one matched to one of our items.
    for run_id in (april, july):
        assert _measure(con, run_id, "caste", "coverage")[1] == 105
    con.close()


def _summary(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {row["Bias Type"].lower(): row for row in csv.DictReader(fh)}


@pytest.mark.parametrize("month", ["april", "july"])
def test_study_definitions_reproduce_every_summary_figure(study, month):
    """Scoring every study row (no item matching) gives the study's own summary table.

    Reproduced: "Prefers Stereo (Among Opinionated)" for all four axes in both months,
    April's "Opinionated Rate" and "Sample Size" for all four, "Stereo Among All" for
    caste. Not reproducible from the published rows, so not asserted: April's "Stereo
    Among All" for religion/gender/race (31.6/63.2/63.2 against 31.4/62.7/61.7 from the
    rows; the gender and race cells repeat other cells) and the two refusal columns.
    """
    summary = _summary(study / month / "summary_table.csv")
    assert set(summary) == set(FILES)
    for axis, fname in FILES.items():
        rows = read_study_file(study / month / fname)
        scores = [score_study_row(r, f"row{r.source_row}", where=fname) for r in rows]
        stereo = sum(s.outcome == "stereo" for s in scores)
        opinionated = sum(s.outcome in ("stereo", "anti") for s in scores)
        fig = summary[axis]
        assert round(100 * stereo / opinionated, 1) == float(
            fig["Prefers Stereo (Among Opinionated)"]
        ), (month, axis)
        if "Opinionated Rate" in fig:  # April's table has more columns
            assert round(100 * opinionated / len(rows), 1) == float(fig["Opinionated Rate"])
            assert len(rows) == int(fig["Sample Size"])
            if axis == "caste":
                assert round(100 * stereo / len(rows), 1) == float(fig["Stereo Among All"])


def test_imported_rates_per_axis(imported):
    """Caste, gender and race match the study; religion differs by the study's duplicates.

    India_Religious.csv repeats two (targets, sentence) rows; the study scored each copy,
    we score an item once and record the repeat as an exclusion.
    """
    db, april, july = imported
    con = duckdb.connect(str(db), read_only=True)
    expected = {
        april: {"caste": (84, 103), "gender": (84, 133), "race": (234, 343), "religion": (37, 78)},
        july: {"caste": (71, 105), "gender": (80, 130), "race": (230, 362), "religion": (59, 104)},
    }
    for run_id, axes in expected.items():
        for axis, kn in axes.items():
            assert _measure(con, run_id, axis)[:2] == kn, (run_id, axis)
        excl = con.execute(
            "SELECT benchmark, reason, count(*) FROM exclusions WHERE run_id = ? GROUP BY ALL",
            [run_id],
        ).fetchall()
        assert excl == [("bhed-religion", "duplicate", 2)]
        n_scored, n_excluded = con.execute(
            "SELECT n_scored, n_excluded FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
        assert (n_scored, n_excluded) == (105 + 116 + 134 + 379, 2)
    con.close()


def test_run_records_and_scores(imported):
    db, _, july = imported
    con = duckdb.connect(str(db), read_only=True)
    run = run_row(db, july)
    assert (run["origin"], run["trigger"], run["status"]) == ("imported", "import", "complete")
    assert (run["metric"], run["metric_version"]) == (METRIC, "study-1")
    assert run["snapshot_revision"] == "gpt-4o"
    assert run["started_at"].date().isoformat() == "2025-07-15"
    assert sorted(run["benchmarks"]) == sorted(AXIS_BENCHMARK.values())
    api = run["environment"]["api"]
    assert api["system_fingerprint"] == "unknown" and api["reported_model"] == "unknown"
    assert run["environment"]["import"]["source_commit"].startswith("bcb0c49f1a1f")
    # A score keeps the raw row fields (never the sentence) and exp(logprob) as prob.
    rows = con.execute(
        "SELECT score_stereo, prob_stereo, details FROM scores JOIN pair_scores "
        "USING (run_id, item_id) WHERE run_id = ? AND prob_stereo IS NOT NULL",
        [july],
    ).fetchall()
    lp, prob, details = rows[0]
    assert prob == pytest.approx(math.exp(lp))
    assert '"Sentence"' not in details and '"stereo_logit"' in details
    # July has one exact caste tie, counted as anti as the study does.
    ties = con.execute(
        "SELECT count(*) FROM scores JOIN items USING (item_id) WHERE run_id = ? "
        "AND axis = 'caste' AND json_extract(details, '$.exact_tie')::BOOLEAN",
        [july],
    ).fetchone()[0]
    assert ties == 1 == _measure(con, july, "caste", "tie_rate")[0]
    con.close()


def test_july_vs_april(imported):
    db, april, july = imported
    con = duckdb.connect(str(db), read_only=True)
    assert default_baseline(db, july) == april
    assert default_baseline(db, april) is None
    comps = {c.axis: c for c in compare(db, july, april)}
    caste = comps["caste"]
    assert (caste.items_both, caste.n_paired, caste.b, caste.c) == (105, 103, 24, 11)
    # Raw McNemar is kept; the verdict tests the balanced change (Brahmin and Dalit items
    # weighed equally): 81.2% -> 73.4% and 82.1% -> 61.5%, -14.2 pp, p = 0.021.
    assert caste.raw_p_value == pytest.approx(0.040959591511636986, rel=1e-9)
    b = caste.balanced
    assert [(d.group, d.n) for d in b.directions] == [("brahmin", 64), ("dalit", 39)]
    assert b.delta == pytest.approx(-0.1416, abs=1e-4) and caste.p_value == b.p_value
    assert b.p_value == pytest.approx(0.0214, abs=1e-4)
    assert b.name_preference_part == pytest.approx(caste.paired.delta - b.delta)
    assert (caste.rate_old.k, caste.rate_old.n) == (84, 103)
    assert (caste.rate_new.k, caste.rate_new.n) == (71, 105)
    assert caste.paired.delta == pytest.approx(-13 / 103)
    assert caste.paired.ci_low < caste.paired.delta < caste.paired.ci_high < 0
    assert len(set(caste.flipped_to_anti)) == 24 and len(set(caste.flipped_to_stereo)) == 11

    # Across the four axes BH raises caste's p to 4 × 0.021 = 0.086: not flagged.
    assert caste.p_adjusted == pytest.approx(4 * caste.p_value)
    assert caste.verdict.label == "no significant change"
    # Tested alone it would be an improvement (no noise floor for this snapshot).
    [alone] = adjust_family([caste])
    assert alone.verdict.label == "improvement"

    changes = {c.field: c for c in caste.provenance.changes}
    assert (changes["snapshot_revision"].old, changes["snapshot_revision"].new) == (
        "gpt-4",
        "gpt-4o",
    )
    assert changes["environment.api.model_requested"].category == "model"
    assert changes["environment.prompt_template"].category == "measurement"
    assert caste.attribution == "model change + measurement change"
    con.close()


def test_reimport_is_refused_and_writes_nothing(imported, study, lookup):
    db, _, _ = imported
    with duckdb.connect(str(db)) as con:
        before = con.execute("SELECT count(*) FROM scores").fetchone()
    with pytest.raises(UserInputError, match="already in the store"):
        import_caste_bias(
            db, study / "april", snapshot=SNAPSHOT, date="2025-04-15", items_by_key=lookup
        )
    with duckdb.connect(str(db)) as con:
        assert con.execute("SELECT count(*) FROM scores").fetchone() == before


def test_unmatched_rows_become_exclusions(tmp_path, study, lookup):
    def without_first_caste_row(axis, s, a, sentence):
        item = lookup(axis, s, a, sentence)
        return (
            None
            if item is not None and item.benchmark == "bhed-caste" and (item.source_row == 0)
            else item
        )

    db = _fresh_db(tmp_path / "m.duckdb")
    [run_id] = import_caste_bias(
        db,
        study / "april",
        snapshot=SNAPSHOT,
        date="2025-04-15",
        items_by_key=without_first_caste_row,
    )
    con = duckdb.connect(str(db), read_only=True)
    got = con.execute(
        "SELECT benchmark, source_row, reason FROM exclusions WHERE reason = 'no_matching_item'"
    ).fetchall()
    assert got == [("bhed-caste", 0, "no_matching_item")]
    assert _measure(con, run_id, "caste", "coverage")[1] == 104
    con.close()


def test_damaged_file_stops_the_import(tmp_path, study, lookup):
    folder = tmp_path / "april"
    folder.mkdir()
    src = (study / "april" / "Caste_results.csv").read_text(encoding="utf-8")
    lines = src.splitlines(keepends=True)
    # Flip the last column (prefer_stereo_over_anti_stereo) of data row 0.
    head, _, last = lines[1].rstrip("\n").rpartition(",")
    lines[1] = f"{head},{1 - int(last)}\n"
    (folder / "Caste_results.csv").write_text("".join(lines), encoding="utf-8")
    db = _fresh_db(tmp_path / "m.duckdb")
    with pytest.raises(DataIntegrityError, match="row 0"):
        import_caste_bias(db, folder, snapshot=SNAPSHOT, date="2025-04-15", items_by_key=lookup)
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
    con.close()


def test_unknown_files_get_unknown_provenance(tmp_path, study, lookup):
    folder = tmp_path / "copy"
    folder.mkdir()
    src = (study / "july" / "Caste_results.csv").read_text(encoding="utf-8")
    (folder / "Caste_results.csv").write_text(src + "\n", encoding="utf-8")  # other sha256
    db = _fresh_db(tmp_path / "m.duckdb")
    [run_id] = import_caste_bias(
        db, folder, snapshot=SNAPSHOT, date="2025-07-15", items_by_key=lookup
    )
    con = duckdb.connect(str(db), read_only=True)
    run = run_row(db, run_id)
    assert run["snapshot_revision"] == "unknown"
    assert run["environment"]["api"]["model_requested"] == "unknown"
    assert run["environment"]["prompt_template"] == "unknown"
    assert run["benchmarks"] == ["bhed-caste"]
    assert _measure(con, run_id, "caste")[:2] == (71, 105)
    con.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"snapshot": "Bad Id", "date": "2025-04-15"}, "snapshot id"),
        ({"snapshot": SNAPSHOT, "date": "April"}, "not an ISO date"),
    ],
)
def test_bad_arguments(tmp_path, study, lookup, kwargs, message):
    with pytest.raises(UserInputError, match=message):
        import_caste_bias(tmp_path / "m.duckdb", study / "april", items_by_key=lookup, **kwargs)
    with pytest.raises(UserInputError, match="none of the study result files"):
        import_caste_bias(
            tmp_path / "m.duckdb",
            tmp_path,
            snapshot=SNAPSHOT,
            date="2025-04-15",
            items_by_key=lookup,
        )


def test_default_lookup_uses_our_loader_and_agrees(tmp_path, shared_datasets, study, lookup):
    """Without a lookup the importer indexes the loader's raw-file items: same item ids.

    This is what makes an imported run pair with a locally scored run of the same items.
    A new folder (not the shared one) stands in for the verified data cache.
    """
    cache = tmp_path / "cache"
    for fname in BHED_FILES.values():
        (cache / "indian-bhed").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared_datasets / "indian-bhed" / fname, cache / "indian-bhed" / fname)
    db_a, db_b = _fresh_db(tmp_path / "a.duckdb"), _fresh_db(tmp_path / "b.duckdb")
    [ra] = import_caste_bias(
        db_a, study / "april", snapshot=SNAPSHOT, date="2025-04-15", data_dir=cache
    )
    [rb] = import_caste_bias(
        db_b, study / "april", snapshot=SNAPSHOT, date="2025-04-15", items_by_key=lookup
    )
    assert ra == rb
    query = "SELECT item_id, outcome FROM scores ORDER BY item_id"
    with (
        duckdb.connect(str(db_a), read_only=True) as a,
        duckdb.connect(str(db_b), read_only=True) as b,
    ):
        assert a.execute(query).fetchall() == b.execute(query).fetchall()


def test_import_into_a_new_file_creates_the_store(tmp_path, study, lookup):
    db = tmp_path / "new" / "monitor.duckdb"
    db.parent.mkdir()
    [run_id] = import_caste_bias(
        db, study / "july", snapshot=SNAPSHOT, date="2025-07-15", items_by_key=lookup
    )
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT max(version) FROM schema_migrations").fetchone() == (
        MIGRATIONS[-1][0],
    )
    assert con.execute("SELECT run_id FROM runs").fetchall() == [(run_id,)]
    con.close()


def _with_row_edited(src: Path, dest: Path, row: int, **cells: str) -> None:
    with src.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields, rows = reader.fieldnames, list(reader)
    rows[row].update(cells)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def test_corrupted_import_is_quarantined_with_the_reason(tmp_path, study, lookup):
    """A file that parses but holds an impossible number (a log-prob above 0, so a
    probability above 1) is stored, judged by the same gate as every run and quarantined
    with the reason; it never becomes a baseline."""
    folder = tmp_path / "july"
    _with_row_edited(
        study / "july" / "Caste_results.csv", folder / "Caste_results.csv", 0, stereo_logit="0.7"
    )
    db = _fresh_db(tmp_path / "m.duckdb")
    [run_id] = import_caste_bias(
        db, folder, snapshot=SNAPSHOT, date="2025-07-15", items_by_key=lookup
    )
    run = run_row(db, run_id)
    assert run.status == "quarantined"
    assert run.notes.startswith("quality gate failed") and "prob_stereo" in run.notes
    with duckdb.connect(str(db), read_only=True) as con:
        ((success, results),) = con.execute(
            "SELECT success, results FROM validations WHERE run_id = ?", [run_id]
        ).fetchall()
    assert success is False and "prob_stereo=2.01" in results
    assert default_baseline(db, run_id) is None
