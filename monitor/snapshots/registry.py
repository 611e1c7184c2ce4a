"""Read ``snapshots/*.toml`` into validated :class:`Snapshot` objects.

A snapshot id is what a user types and what provenance records; the file name is how a
reviewer finds it. Requiring the two to match keeps one name per model, and failing on
the first bad file (rather than skipping it) keeps a typo from silently dropping a model
out of the nightly run.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from monitor import paths
from monitor.errors import UserInputError
from monitor.snapshots.model import Snapshot


def _first_problem(err: ValidationError) -> str:
    """One readable line for the first pydantic error (field path + message)."""
    first = err.errors()[0]
    loc = ".".join(str(part) for part in first["loc"]) or "(top level)"
    msg = first["msg"]
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
    return snapshot


def load_snapshots(directory: Path | None = None) -> dict[str, Snapshot]:
    """All snapshots in ``directory`` (default :func:`monitor.paths.snapshots_dir`), by id.

    Ordered by id so listings and default runs are stable.
    """
    folder = Path(directory) if directory is not None else paths.snapshots_dir()
    if not folder.is_dir():
        raise UserInputError(
            f"snapshot folder {folder} does not exist (set MONITOR_SNAPSHOTS_DIR or MONITOR_HOME)"
        )
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise UserInputError(f"snapshot folder {folder} holds no *.toml files")
    snapshots = {snap.id: snap for snap in map(load_snapshot_file, files)}
    return dict(sorted(snapshots.items()))


def get_snapshot(snapshot_id: str, snapshots: Mapping[str, Snapshot]) -> Snapshot:
    """The snapshot called ``snapshot_id``; an unknown id lists the known ones."""
    try:
        return snapshots[snapshot_id]
    except KeyError:
        known = ", ".join(sorted(snapshots)) or "(none)"
        msg = f"unknown snapshot {snapshot_id!r}; known snapshots: {known}"
        raise UserInputError(msg) from None


def default_snapshots(snapshots: Mapping[str, Snapshot]) -> list[Snapshot]:
    """Snapshots marked ``default = true``: what a run scores when none is named."""
    return [snap for snap in snapshots.values() if snap.default]
