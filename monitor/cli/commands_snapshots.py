"""`snapshots add`, and the `--snapshots-dir` option every command that names snapshots
takes."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Annotated

import typer

from monitor.terminal.output import err, out

SnapshotsDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--snapshots-dir",
        help="Your folder of snapshot files, searched before the shipped snapshots/ "
        "(default: $MONITOR_SNAPSHOTS_DIR).",
    ),
]


def use_snapshots_dir(folder: Path | None) -> None:
    """Make ``--snapshots-dir`` the user's snapshot folder for this process (the same
    setting as ``$MONITOR_SNAPSHOTS_DIR``, which it overrides)."""
    if folder is not None:
        os.environ["MONITOR_SNAPSHOTS_DIR"] = str(folder)


TargetArg = Annotated[
    str,
    typer.Argument(
        metavar="PATH|FILE.gguf|URL|HUB_ID",
        help="A model folder saved with save_pretrained (safetensors), a GGUF file, an "
        "http(s) address of a GGUF (with --sha256), or a hub repo id ORG/NAME.",
    ),
]
IdOpt = Annotated[
    str | None,
    typer.Option("--id", help="Snapshot id (default: from the folder or repo name)."),
]
KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind",
        help="hf-causal, hf-mlm, sentence-transformers or causal-lm-embeddings "
        "(default: read from the folder's config).",
    ),
]
RevisionOpt = Annotated[
    str | None,
    typer.Option(
        "--revision",
        help="Hub repo only: the 40-hex commit id to pin (default: the one the local "
        "Hugging Face cache holds for main).",
    ),
]
Sha256Opt = Annotated[
    str | None,
    typer.Option(
        "--sha256",
        help="Address only (required): the file's sha256; the download must have it.",
    ),
]
GatedOpt = Annotated[
    bool,
    typer.Option(
        "--gated",
        help="Hub repo only: private or gated; a download then needs HF_TOKEN (the run "
        "says so instead of trying without it).",
    ),
]


def add(
    target: TargetArg,
    snapshot_id: IdOpt = None,
    kind: KindOpt = None,
    revision: RevisionOpt = None,
    sha256: Sha256Opt = None,
    gated: GatedOpt = False,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing file.")] = False,
    snapshots_dir: SnapshotsDirOpt = None,
) -> None:
    """Pin a model folder or hub repo as a snapshot: write ID.toml into your snapshot
    folder and print the command that scores it.

    A folder is pinned by its content digest (checked before every run) and its kind is
    read from its config.json or sentence-transformers files. A GGUF file or address is
    converted once and pinned by its sha256 and its conversion's digest. The file goes to
    --snapshots-dir, else $MONITOR_SNAPSHOTS_DIR, else ./snapshots.
    """
    from monitor import paths
    from monitor.snapshots.pin import pin

    use_snapshots_dir(snapshots_dir)
    folder = paths.user_snapshots_dir() or Path("snapshots")
    pinned = pin(
        target,
        folder,
        snapshot_id=snapshot_id,
        kind=kind,
        revision=revision,
        sha256=sha256,
        gated=gated,
        force=force,
        convert=_convert_gguf,
        on_event=lambda m: err.print(m),
    )
    if pinned.warning:
        err.print(f"warning: {pinned.warning}", highlight=False)
    searched = {p.resolve() for p in paths.snapshot_search_path()}
    flag = "" if folder.resolve() in searched else f" --snapshots-dir {shlex.quote(str(folder))}"
    sid = pinned.snapshot.id
    out.print(f"wrote {pinned.path} ({pinned.snapshot.kind}, {pinned.snapshot.revision_label})")
    out.print(f"score it with: bias-monitor run{flag} -s {sid}{_first_defaults()}")


def _convert_gguf(gguf: Path, sha256: str) -> tuple[Path, str]:
    """The project's one GGUF conversion (cached by the file's sha256, the same the runs
    load), and the name of its record file, which the converted digest leaves out."""
    from monitor import paths
    from monitor.backends import gguf_cache

    folder = gguf_cache.ensure_converted(
        gguf, sha256, paths.cache_root() / "models", on_event=lambda m: err.print(m)
    )
    return folder, gguf_cache.MARKER


def _first_defaults(n: int = 2) -> str:
    """``-b`` for the first ``n`` benchmarks the manifest marks default: a first score
    of a new snapshot that takes minutes, not the whole default set ("" where the
    manifest cannot be read; the snapshot is pinned either way)."""
    from monitor.app.defaults import manifest_defaults
    from monitor.errors import MonitorError

    try:
        ids = manifest_defaults().benchmarks[:n]
    except MonitorError:
        return ""
    return "".join(f" -b {shlex.quote(i)}" for i in ids)
