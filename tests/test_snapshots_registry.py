"""The shipped snapshot manifest: valid, consistently named, and pinned to real commits."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from monitor.errors import UserInputError
from monitor.snapshots.model import HubSource, PypiSource
from monitor.snapshots.registry import default_snapshots, get_snapshot, load_snapshots

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "snapshots"
PINS = Path(os.environ.get("MONITOR_TEST_PINS", REPO.parent / "shared" / "PINS.md"))
HEX40 = re.compile(r"^[0-9a-f]{40}$")


def _pins() -> dict[str, str]:
    """repo id -> revision from the PINS.md table (rows whose revision is 40-hex)."""
    if not PINS.is_file():
        pytest.fail(f"PINS.md not found at {PINS}; set MONITOR_TEST_PINS")
    pins: dict[str, str] = {}
    for line in PINS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and "/" in cells[0] and HEX40.match(cells[1]):
            pins[cells[0].split()[0]] = cells[1]
    return pins


def test_shipped_snapshots_validate_and_ids_match_file_stems():
    snaps = load_snapshots(SHIPPED)
    files = sorted(p.stem for p in SHIPPED.glob("*.toml"))
    assert sorted(snaps) == files
    assert len(set(files)) == len(files) and len(files) >= 2
    for snap_id, snap in snaps.items():
        assert snap.id == snap_id


def test_default_snapshot_is_the_offline_smollm2():
    defaults = default_snapshots(load_snapshots(SHIPPED))
    assert [s.id for s in defaults] == ["smollm2-135m-instruct-q4"]
    assert isinstance(defaults[0].source, PypiSource)


def test_pins_table_parses():
    pins = _pins()
    # A parser broken by a format change would otherwise let every revision pass.
    assert len(pins) >= 10
    assert pins["openai-community/gpt2"] == "607a30d783dfa663caf39e06633721c8d4cfcd7e"
    assert "google-bert/bert-base-multilingual-uncased" not in pins  # unresolved row


def test_hub_revisions_equal_the_shared_pins():
    """Catches an invented or mistyped commit: every hub revision must be a verified pin."""
    pins = _pins()
    snaps = load_snapshots(SHIPPED)
    hub = [s for s in snaps.values() if isinstance(s.source, HubSource)]
    assert hub, "expected hub snapshots in the manifest"
    for snap in hub:
        assert HEX40.match(snap.source.revision), snap.id
        assert snap.source.repo in pins, f"{snap.id}: {snap.source.repo} has no verified pin"
        assert snap.source.revision == pins[snap.source.repo], snap.id


def test_pypi_upstream_revisions_equal_the_shared_pins():
    pins = _pins()
    for snap in load_snapshots(SHIPPED).values():
        src = snap.source
        if isinstance(src, PypiSource) and src.upstream_revision:
            assert src.upstream_repo in pins, snap.id
            assert src.upstream_revision == pins[src.upstream_repo], snap.id


@pytest.fixture
def snap_dir(tmp_path) -> Path:
    """A copy of the shipped manifest to break in controlled ways."""
    target = tmp_path / "snapshots"
    shutil.copytree(SHIPPED, target)
    return target


def test_truncated_toml_names_the_file(snap_dir):
    victim = snap_dir / "gpt2.toml"
    text = victim.read_text(encoding="utf-8")
    victim.write_text(text[: text.index("revision") + 14], encoding="utf-8")
    with pytest.raises(UserInputError, match=r"gpt2\.toml is not valid TOML") as err:
        load_snapshots(snap_dir)
    assert "\n" not in str(err.value)


def test_unknown_field_is_rejected(snap_dir):
    victim = snap_dir / "gpt2.toml"
    victim.write_text(
        victim.read_text(encoding="utf-8").replace("[source]", 'colour = "red"\n\n[source]'),
        encoding="utf-8",
    )
    with pytest.raises(UserInputError, match=r"gpt2\.toml is invalid: colour: Extra inputs"):
        load_snapshots(snap_dir)


def test_branch_name_instead_of_commit_is_rejected(snap_dir):
    victim = snap_dir / "gpt2.toml"
    text = victim.read_text(encoding="utf-8")
    victim.write_text(
        text.replace("607a30d783dfa663caf39e06633721c8d4cfcd7e", "main"), encoding="utf-8"
    )
    with pytest.raises(UserInputError, match=r"gpt2\.toml is invalid: source\..*revision"):
        load_snapshots(snap_dir)


def test_bad_sha256_is_rejected(snap_dir):
    victim = snap_dir / "smollm2-135m-instruct-q4.toml"
    text = victim.read_text(encoding="utf-8")
    victim.write_text(re.sub(r'sha256 = "([0-9a-f]{64})"', r'sha256 = "\1"[:63]', text))
    with pytest.raises(UserInputError, match=r"smollm2-135m-instruct-q4\.toml is not valid TOML"):
        load_snapshots(snap_dir)
    victim.write_text(re.sub(r'sha256 = "[0-9a-f]{64}"', 'sha256 = "ABC"', text))
    with pytest.raises(UserInputError, match=r"q4\.toml is invalid: source\..*sha256"):
        load_snapshots(snap_dir)


def test_id_must_equal_file_stem(snap_dir):
    (snap_dir / "gpt2.toml").rename(snap_dir / "gpt-2.toml")
    with pytest.raises(UserInputError, match=r"gpt-2\.toml declares id 'gpt2'"):
        load_snapshots(snap_dir)


def test_empty_or_missing_folder(tmp_path):
    with pytest.raises(UserInputError, match="does not exist"):
        load_snapshots(tmp_path / "nope")
    with pytest.raises(UserInputError, match=r"no \*\.toml"):
        load_snapshots(tmp_path)


def test_user_folder_comes_before_the_shipped_one(tmp_path, monkeypatch):
    """$MONITOR_SNAPSHOTS_DIR is searched first; the shipped snapshots stay available
    (as baselines) and are never default there; a user file may not reuse a shipped id
    (issue 44: it could redefine a pull request's baseline), named with both files."""
    mine = tmp_path / "mine"
    mine.mkdir()
    gpt2 = (SHIPPED / "gpt2.toml").read_text()
    (mine / "my-gpt2.toml").write_text(
        gpt2.replace('id = "gpt2"', 'id = "my-gpt2"').replace("default = false", "default = true")
    )
    monkeypatch.setenv("MONITOR_SNAPSHOTS_DIR", str(mine))
    snaps = load_snapshots()
    assert snaps["falcon-7b"].file.parent == SHIPPED  # still found, in the shipped folder
    assert snaps["my-gpt2"].file == mine / "my-gpt2.toml"
    assert {s.id for s in default_snapshots(snaps)} == {"my-gpt2"}

    (mine / "gpt2.toml").write_text(gpt2.replace('display_name = "', 'display_name = "mine ', 1))
    with pytest.raises(UserInputError) as err:
        load_snapshots()
    assert str(err.value) == (
        f"snapshot file {mine / 'gpt2.toml'} reuses the id 'gpt2' of the shipped snapshot "
        f"{SHIPPED / 'gpt2.toml'}; a snapshot folder may not replace a shipped snapshot (it "
        "could redefine a baseline): rename the file and its id"
    )
    # The shipped folder named as the user's is one folder, not a clash with itself.
    monkeypatch.setenv("MONITOR_SNAPSHOTS_DIR", str(SHIPPED))
    assert load_snapshots() == load_snapshots(SHIPPED)


def test_unknown_snapshot_lists_known_ids():
    snaps = load_snapshots(SHIPPED)
    assert get_snapshot("gpt2", snaps).source.repo == "openai-community/gpt2"
    with pytest.raises(UserInputError, match="unknown snapshot 'gpt-5'") as err:
        get_snapshot("gpt-5", snaps)
    assert "(did you mean gpt2?)" in str(err.value)
    assert "add one with bias-monitor snapshots add PATH" in str(err.value)
