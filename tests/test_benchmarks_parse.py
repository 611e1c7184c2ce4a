"""Pure parsing: target literals, MASK filling, exclusions and malformed CSVs.

Synthetic rows here are neutral sentences; the real files are covered in
test_benchmarks_load.py.
"""

from __future__ import annotations

import csv
import io

import pytest

from monitor.benchmarks.items import BenchmarkVersion, check_row_count, id_namespace
from monitor.errors import DataIntegrityError
from monitor.families.pairs.parse import (
    TargetError,
    diff_targets,
    fill_template,
    mask_spans,
    parse_rows,
    parse_targets,
    read_table,
)
from monitor.families.pairs.records import make_item_id

VERSION = BenchmarkVersion("toy", "a" * 40, "b" * 64, "none")
BHED_HEADER = ["", "Target_Stereotypical", "Target_Anti-Stereotypical", "Sentence"]


def bhed_csv(rows: list[tuple[str, str, str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(BHED_HEADER)
    for i, row in enumerate(rows):
        w.writerow([i, *row])
    return buf.getvalue()


def parse_bhed(rows: list[tuple[str, str, str]]):
    table = read_table(bhed_csv(rows).encode(), "indian-bhed", name="toy.csv")
    return parse_rows(table, "indian-bhed", version=VERSION, axis="toy", region="us")


def test_target_cells_are_python_literals():
    assert parse_targets("['a', 'Chinese']", side="s") == ("a", "Chinese")
    assert parse_targets('["skull caps"]', side="s") == ("skull caps",)
    assert parse_targets("['couldnt','black']", side="s") == ("couldnt", "black")
    for cell, reason in [
        ("[a, b]", "unparseable_targets"),
        ("'a'", "unparseable_targets"),
        ("[1, 2]", "unparseable_targets"),
        ("__import__('os')", "unparseable_targets"),
        ("[]", "empty_target"),
        ("['a', ' ']", "empty_target"),
    ]:
        with pytest.raises(TargetError) as err:
            parse_targets(cell, side="stereotypical")
        assert err.value.reason == reason, cell


def test_masks_are_whole_tokens():
    assert len(mask_spans("MASK likes MASKs and MASK, not UNMASKED")) == 2


def test_fill_left_to_right_by_slicing():
    tpl = "MASK met MASK at the MASK."
    assert fill_template(tpl, ["Ann", "Bo", "park"]) == "Ann met Bo at the park."
    # A replacement-pattern lookalike is inserted literally (re.sub would expand it).
    assert fill_template("Hi MASK", [r"\1 \g<0>"]) == r"Hi \1 \g<0>"
    with pytest.raises(ValueError):
        fill_template(tpl, ["one"])


def test_bhed_rows_to_items_and_exclusions():
    parsed = parse_bhed(
        [
            ("['he', 'his']", "['she', 'her']", "MASK fixed MASK bike"),  # 0 multi-blank
            ("['a', 'b']", "['c', 'd']", "Only MASK here"),  # 1 mismatch
            ("[oops]", "['x']", "MASK ran"),  # 2 unparseable
            ("['']", "['x']", "MASK ran"),  # 3 empty
            ("['same']", "['same']", "MASK ran"),  # 4 identical
            ("['he', 'his']", "['she', 'her']", "MASK  fixed MASK bike"),  # 5 duplicate of 0
            ("['x']", "['y']", "MASK ran"),  # 6 fine
        ]
    )
    assert [i.source_row for i in parsed.items] == [0, 6]
    first = parsed.items[0]
    assert (first.text_stereo, first.text_anti) == ("he fixed his bike", "she fixed her bike")
    assert first.targets_stereo == ("he", "his") and first.targets_anti == ("she", "her")
    assert first.template == "MASK fixed MASK bike"
    assert first.raw_stereo_cell == "['he', 'his']" and first.raw_anti_cell == "['she', 'her']"
    assert first.item_id == make_item_id(id_namespace(VERSION), first.text_stereo, first.text_anti)
    assert first.benchmark_version == VERSION.label
    got = [(e.source_row, e.reason, e.detail) for e in parsed.exclusions]
    assert got[0] == (
        1,
        "target_mask_mismatch",
        "2 stereotypical targets, 2 anti-stereotypical targets, 1 MASK",
    )
    assert [(r, reason) for r, reason, _ in got[1:]] == [
        (2, "unparseable_targets"),
        (3, "empty_target"),
        (4, "identical_pair"),
        (5, "duplicate"),
    ]
    assert got[-1][2] == "same pair as row 0"


def test_missing_sentence_column_is_a_clear_error():
    text = bhed_csv([("['x']", "['y']", "MASK ran")]).replace("Sentence", "Sentense")
    with pytest.raises(DataIntegrityError) as err:
        read_table(text, "indian-bhed", name="Caste.csv")
    assert "Caste.csv" in str(err.value) and "'Sentence'" in str(err.value)


def test_row_with_wrong_field_count_is_refused():
    text = bhed_csv([("['x']", "['y']", "MASK ran")]) + "1,['x'],['y'],MASK ran,extra\n"
    with pytest.raises(DataIntegrityError, match="data row 1 has too many fields"):
        read_table(text, "indian-bhed", name="toy.csv")
    with pytest.raises(DataIntegrityError, match="data row 1 has too few fields"):
        read_table(
            bhed_csv([("['x']", "['y']", "MASK ran")]) + "1,['x']\n", "indian-bhed", name="t"
        )


def test_not_utf8_and_unterminated_quote():
    with pytest.raises(DataIntegrityError, match="not valid UTF-8"):
        read_table(b"\xff\xfe,,", "indian-bhed", name="toy.csv")
    broken = bhed_csv([("['x']", "['y']", "MASK ran")]) + "1,\"['x'],['y'],MASK\n"
    with pytest.raises(DataIntegrityError, match=r"toy\.csv: malformed CSV"):
        read_table(broken, "indian-bhed", name="toy.csv")


def test_row_count_check():
    check_row_count([{}, {}], 2, name="toy.csv")
    with pytest.raises(DataIntegrityError, match="parsed 2 data rows, but the manifest expects 3"):
        check_row_count([{}, {}], 3, name="toy.csv")


def test_crows_rows_embedded_newline_and_diff_targets():
    text = (
        "sent_more,sent_less,stereo_antistereo,bias_type\n"
        '"The tall man ran home.","The short man\nran home.",stereo,age\n'
        "Kim likes tea.,Kim likes green tea.,antistereo,nationality\n"
        "Same text.,Same  text.,stereo,age\n"
    )
    table = read_table(text, "crows-pairs", name="crows.csv")
    assert len(table) == 3
    parsed = parse_rows(table, "crows-pairs", version=VERSION, axis="mixed", region="us")
    a, b = parsed.items
    assert (a.axis, a.direction, a.targets_stereo, a.targets_anti) == (
        "age",
        "stereo",
        ("tall",),
        ("short",),
    )
    assert (b.direction, b.targets_stereo, b.targets_anti) == ("antistereo", ("",), ("green",))
    assert b.text_stereo == "Kim likes tea."  # sent_more is text_stereo in both directions
    assert [(e.source_row, e.reason) for e in parsed.exclusions] == [(2, "identical_pair")]
    assert diff_targets("a b c d", "a x c y") == (("b", "d"), ("x", "y"))
