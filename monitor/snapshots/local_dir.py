"""What a ``local-dir`` digest covers, and the private copy a run loads from.

A model folder the user brings is pinned by a content digest (``folder_digest``). For the
pin to mean anything, the digest must cover every byte the loader reads and the loader
must read no byte the digest did not cover. So:

* the files are listed by one walk (``folder_files``) that follows symbolic links to
  files *and* folders (a hub cache links to ``../../blobs``), reads each target's bytes
  and leaves out only hidden parts and ``__pycache__`` (tools write those);
* the folder's layout is checked (``layout_problem``): a ``*.safetensors.index.json``
  entry must name a file the walk covers (no ``..``, absolute or hidden path), and a
  folder (the root or a sentence-transformers module such as ``2_Dense/``) with pickle
  weights and no safetensors beside them is refused: the loader would unpickle them;
* a run never loads the user's folder itself: ``private_copy`` copies the covered files
  into ``<cache>/local-dir/<digest hex>/``, hashing the very bytes it writes, and only a
  copy whose digest is the pinned one is used. Changing, swapping or relinking a file in
  the user's folder after the check cannot change what is scored. Pickle files are not
  copied at all, so nothing can unpickle them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from filelock import FileLock

EventSink = Callable[[str], None]

COPY_MANIFEST = ".bias-monitor-copy.json"
"""Written last into a private copy: every covered file's line, so a copy can be checked
again without the user's folder (hidden, so it is never part of a digest)."""

PAUSE_ENV = "MONITOR_TEST_PAUSE_BEFORE_LOAD"
"""Test-only: a path prefix. When set, a run that has checked its private copy writes
``<prefix>.paused`` and waits for ``<prefix>.resume`` before loading, so a test can
change the user's folder exactly between the check and the load (tests/test_local_dir_digest.py)."""

_CHUNK = 8 << 20
_PICKLE_NAME = re.compile(r"\.(bin|pt|pth|pkl|pickle|ckpt|joblib)$", re.IGNORECASE)
_PICKLE_WEIGHTS = re.compile(r"^pytorch_model[^/]*\.bin$")


@dataclass(frozen=True)
class FolderFile:
    """One covered file: its path inside the folder, where its bytes live, its size and
    sha256 (what the digest line says)."""

    rel: str
    path: Path
    size: int
    sha256: str

    @property
    def line(self) -> str:
        return f"{self.rel}\t{self.size}\t{self.sha256}\n"


def _hidden(rel: PurePosixPath) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in rel.parts)


def folder_files(folder: Path) -> list[tuple[str, Path]]:
    """``(relative POSIX path, path)`` of every covered file, sorted by relative path.

    Symbolic links to files and to folders are followed (a linked folder's files are
    covered under the link's name); a link that loops back into a folder already being
    walked is not walked twice. Hidden parts and ``__pycache__`` are left out.
    """
    found: list[tuple[str, Path]] = []

    def walk(here: Path, rel: PurePosixPath, ancestors: frozenset[str]) -> None:
        try:
            entries = sorted(os.scandir(here), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            sub = rel / entry.name
            if _hidden(sub):
                continue
            path = here / entry.name
            if entry.is_dir():  # follows links
                real = os.path.realpath(path)
                if real not in ancestors:
                    walk(path, sub, ancestors | {real})
            elif entry.is_file():
                found.append((sub.as_posix(), path))

    walk(folder, PurePosixPath(), frozenset({os.path.realpath(folder)}))
    return sorted(found, key=lambda f: f[0].encode("utf-8"))


def digest_of(files: Iterable[FolderFile]) -> str:
    """``sha256:<hex>`` over the files' digest lines (the ``local-dir`` rule)."""
    text = "".join(f.line for f in sorted(files, key=lambda f: f.rel.encode("utf-8")))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_pickle(rel: str) -> bool:
    """Whether a file's name says it is (or may be) a pickle: never copied, never read."""
    return bool(_PICKLE_NAME.search(rel))


def index_entry_problem(entry: str) -> str | None:
    """Why a safetensors index entry may name a file the digest does not cover."""
    path = PurePosixPath(entry)
    if not entry or path.is_absolute() or "\\" in entry or ":" in entry or ".." in path.parts:
        return "leads outside the folder"
    if _hidden(path):
        return "is hidden or in a hidden folder, which the digest does not cover"
    return None


def layout_problem(folder: Path, rels: Iterable[str]) -> str | None:
    """Why the loader would read something the digest does not cover, or unpickle
    something; None when the folder is fine. ``rels`` are the covered files."""
    covered = set(rels)
    for rel in sorted(covered):
        if not rel.endswith(".safetensors.index.json"):
            continue
        try:
            data = json.loads((folder / rel).read_text(encoding="utf-8"))
            entries = set(data["weight_map"].values())
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return f"index {rel} is not a readable safetensors index (weight_map)"
        base = PurePosixPath(rel).parent
        for entry in sorted(map(str, entries)):
            problem = index_entry_problem(entry)
            if problem is not None:
                return f"index {rel} entry {entry!r} {problem}"
            if (base / entry).as_posix() not in covered:
                return f"index {rel} entry {entry!r} is not a file in the folder"
    by_dir: dict[str, list[str]] = {}
    for rel in covered:
        by_dir.setdefault(PurePosixPath(rel).parent.as_posix(), []).append(rel)
    for _, names in sorted(by_dir.items()):
        pickles = sorted(r for r in names if _PICKLE_WEIGHTS.match(PurePosixPath(r).name))
        if pickles and not any(r.endswith(".safetensors") for r in names):
            return (
                f"{pickles[0]} is pickle weights with no safetensors beside it; the monitor "
                "loads safetensors or GGUF only (unpickling can run code)"
            )
    return None


def hash_file(path: Path) -> tuple[int, str]:
    """(size, sha256) of the bytes read from ``path``, from one open file."""
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
            size += len(block)
    return size, h.hexdigest()


def _copy_hashing(src: Path, dst: Path) -> tuple[int, str]:
    """Copy ``src`` to ``dst`` and hash the bytes written (one read of the source)."""
    h = hashlib.sha256()
    size = 0
    with src.open("rb") as fin, dst.open("xb") as fout:
        while block := fin.read(_CHUNK):
            h.update(block)
            fout.write(block)
            size += len(block)
    return size, h.hexdigest()


class CopyMismatch(Exception):
    """The bytes copied (or a cached copy's bytes) do not have the pinned digest."""

    def __init__(self, found: str) -> None:
        super().__init__(found)
        self.found = found


def private_copy(
    folder: Path, digest: str, cache: Path, emit: EventSink
) -> tuple[Path, list[FolderFile]]:
    """The pinned folder's private copy and its covered files; raises ``CopyMismatch``.

    The copy lives in ``<cache>/local-dir/<digest hex>/``. An existing copy is hashed
    again (its manifest holds the lines of the pickle files it leaves out); a new one is
    built in a temporary folder, hashing each file's bytes as they are written, and
    renamed into place only when the digest over what was written is the pinned one.
    """
    root = cache / "local-dir"
    root.mkdir(parents=True, exist_ok=True)
    hexd = digest.removeprefix("sha256:")
    target = root / hexd
    with FileLock(str(root / f"{hexd}.lock")):
        if target.is_dir():
            files = _check_copy(target)
            if files is not None and digest_of(files) == digest:
                emit(f"checked the private copy {target}")
                return target, files
            shutil.rmtree(target, ignore_errors=True)  # damaged: build it again
        emit(f"copying {folder} to the private copy {target}")
        staging = Path(tempfile.mkdtemp(prefix=f".{hexd[:12]}-", dir=root))
        try:
            files = []
            for rel, path in folder_files(folder):
                out = staging / rel
                if is_pickle(rel):  # covered by the digest, never copied
                    size, sha = hash_file(path)
                else:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    size, sha = _copy_hashing(path, out)
                files.append(FolderFile(rel, out, size, sha))
            found = digest_of(files)
            if found != digest:
                raise CopyMismatch(found)
            manifest = {"digest": digest, "source": str(folder), "files": [f.line for f in files]}
            (staging / COPY_MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return target, [FolderFile(f.rel, target / f.rel, f.size, f.sha256) for f in files]


def _check_copy(target: Path) -> list[FolderFile] | None:
    """The files of an existing private copy, each hashed again; None when damaged."""
    try:
        manifest = json.loads((target / COPY_MANIFEST).read_text(encoding="utf-8"))
        lines = [str(x).removesuffix("\n").rsplit("\t", 2) for x in manifest["files"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if any(len(parts) != 3 or not parts[1].isdigit() for parts in lines):
        return None
    files = []
    for rel, size, sha in lines:
        path = target / rel
        if not is_pickle(rel):
            try:
                if hash_file(path) != (int(size), sha):
                    return None
            except OSError:
                return None
        files.append(FolderFile(rel, path, int(size), sha))
    copied = {rel for rel, _ in folder_files(target)}
    if copied != {f.rel for f in files if not is_pickle(f.rel)}:
        return None  # a file added to the copy would be read by the loader
    return files


def pause_for_tests() -> None:
    """Test-only (``MONITOR_TEST_PAUSE_BEFORE_LOAD``): hold here, between the check and
    the load, until the test has changed the user's folder. Unset: does nothing."""
    prefix = os.environ.get(PAUSE_ENV)
    if not prefix:
        return
    Path(f"{prefix}.paused").write_text(str(os.getpid()), encoding="utf-8")
    resume = Path(f"{prefix}.resume")
    deadline = time.monotonic() + 600
    while not resume.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
