"""Read ``snapshots/*.toml`` into validated :class:`Snapshot` objects.

A snapshot id is what a user types and what provenance records; the file name is how a
reviewer finds it. Requiring the two to match keeps one name per model, and failing on
the first bad file (rather than skipping it) keeps a typo from silently dropping a model
out of the nightly run.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import ValidationError

from monitor import paths
from monitor.errors import UserInputError, closest
from monitor.snapshots.model import Snapshot


def _first_problem(err: ValidationError) -> str:
    """One readable line for the first pydantic error (field path + message)."""
    first = err.errors()[0]
    loc = ".".join(str(part) for part in first["loc"]) or "(top level)"
    msg = first["msg"].removeprefix("Value error, ")
    value = first.get("input")
    if first["type"] != "extra_forbidden" and isinstance(value, str | int | float | bool):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        msg = f"{msg} (got {shown})"
    more = len(err.errors()) - 1
    suffix = f" [+{more} more problem{'s' if more > 1 else ''}]" if more else ""
    return f"{loc}: {msg}{suffix}"


def load_snapshot_file(path: Path) -> Snapshot:
    """Parse and validate one snapshot file; every failure names the file."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserInputError(f"cannot read snapshot file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise UserInputError(f"snapshot file {path} is not UTF-8 text: {exc.reason}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"snapshot file {path} is not valid TOML: {exc}") from exc
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise UserInputError(
            f"snapshot file {path} is nested too deeply to be a snapshot"
        ) from None
    try:
        snapshot = Snapshot.model_validate(raw)
    except ValidationError as exc:
        raise UserInputError(f"snapshot file {path} is invalid: {_first_problem(exc)}") from exc
    if snapshot.id != path.stem:
        raise UserInputError(
            f"snapshot file {path} declares id {snapshot.id!r}; "
            f"the file must be named {snapshot.id}.toml (or the id changed to {path.stem!r})"
        )
    return snapshot.with_file(path)


def _load_folder(folder: Path) -> dict[str, Snapshot]:
    return {snap.id: snap for snap in map(load_snapshot_file, sorted(folder.glob("*.toml")))}


def load_snapshots(directory: Path | None = None) -> dict[str, Snapshot]:
    """All snapshots, by id, ordered by id so listings and default runs are stable.

    With ``directory``: the files of that folder only. Without: the user's folder
    (``$MONITOR_SNAPSHOTS_DIR`` / ``--snapshots-dir``) first, then the shipped
    ``snapshots/`` (:func:`monitor.paths.snapshot_search_path`). A user file may not
    reuse a shipped id (:func:`_refuse_shadowed`): the shipped snapshots are the
    baselines a pull request is compared with, and a folder that could replace one could
    redefine the yardstick it is measured against. When a user folder is set, only its
    snapshots can be ``default`` (what ``run`` scores with no ``-s``): the shipped ones
    are there to be named, e.g. as baselines. Each snapshot's ``file`` says where it came
    from.
    """
    folders = [Path(directory)] if directory is not None else paths.snapshot_search_path()
    user = folders[0]
    if not user.is_dir():
        raise UserInputError(
            f"snapshot folder {user} does not exist (set MONITOR_SNAPSHOTS_DIR or "
            "--snapshots-dir to a folder of snapshot files, or MONITOR_HOME)"
        )
    found = [_load_folder(f) for f in folders if f.is_dir()]
    if not any(found):
        raise UserInputError(f"snapshot folder {user} holds no *.toml files")
    snapshots = dict(found[0])
    for later in found[1:]:
        _refuse_shadowed(snapshots, later)
        for sid, snap in later.items():
            snapshots[sid] = snap.model_copy(update={"default": False}).with_file(snap.file)
    return dict(sorted(snapshots.items()))


def _refuse_shadowed(user: Mapping[str, Snapshot], shipped: Mapping[str, Snapshot]) -> None:
    """Refuse a user snapshot whose id is a shipped one, naming both files.

    Letting the first folder win made a pull request's snapshot folder able to replace
    the shipped baseline it is compared with (``drift --baseline-snapshot``), so that a
    regression compared with itself and passed. Refused even when the two files are the
    same: one id, one file, wherever it is looked up.
    """
    clashes = sorted(user.keys() & shipped.keys())
    if clashes:
        sid = clashes[0]
        raise UserInputError(_shadowing(user[sid].file, sid, shipped[sid].file))


def refuse_shipped_id(path: Path) -> None:
    """Refuse to write the snapshot file ``path`` (``snapshots add``) when its id is a
    shipped one and it is not the shipped folder itself: every later command would refuse
    the folder (:func:`load_snapshots`), so say so before writing it."""
    shipped = paths.shipped_snapshots_dir()
    theirs = shipped / path.name
    if path.parent.resolve() != shipped.resolve() and theirs.is_file():
        raise UserInputError(_shadowing(path, path.stem, theirs))


def _shadowing(mine: Path | None, sid: str, theirs: Path | None) -> str:
    return (
        f"snapshot file {mine} reuses the id {sid!r} of the shipped snapshot {theirs}; a "
        "snapshot folder may not replace a shipped snapshot (it could redefine a "
        "baseline): rename the file and its id"
    )


def get_snapshot(snapshot_id: str, snapshots: Mapping[str, Snapshot]) -> Snapshot:
    """The snapshot called ``snapshot_id``; an unknown id lists the known ones."""
    try:
        return snapshots[snapshot_id]
    except KeyError:
        raise UserInputError(unknown_snapshot(snapshot_id, snapshots)) from None


def unknown_snapshot(snapshot_id: str, known: Iterable[str]) -> str:
    """The one-line message for an id no snapshot file has: what to do, and the closest
    known id when there is one (a typo is the usual cause)."""
    close = closest(snapshot_id, known)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (
        f"unknown snapshot {snapshot_id!r}{hint}; add one with bias-monitor snapshots add "
        "PATH, or list them with bias-monitor snapshots list"
    )


def default_snapshots(snapshots: Mapping[str, Snapshot]) -> list[Snapshot]:
    """Snapshots marked ``default = true``: what a run scores when none is named."""
    return [snap for snap in snapshots.values() if snap.default]
