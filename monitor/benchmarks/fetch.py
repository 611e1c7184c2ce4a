"""Get pinned benchmark files into the local data cache, verified by sha256.

Benchmark files are third-party and never committed, so every run starts from a
cache that holds byte-exact copies of the pinned files. Whatever the origin (the
pinned URL, an explicit ``--from`` folder, or the ``MONITOR_DATA_MIRROR`` fallback),
a file is written to a temporary name beside its final place, checked against the
manifest's sha256 and only then renamed into place: the cache never holds a file
that has not passed its checksum, not even for a moment.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

from monitor import paths
from monitor.benchmarks.manifest import BenchmarkManifest, BenchmarkSpec
from monitor.errors import DataIntegrityError

Origin = Literal["cache", "url", "import", "mirror"]

# Short: an unreachable host must fail over to the mirror quickly in CI.
HTTP_TIMEOUT = httpx.Timeout(20.0, connect=5.0)
_CHUNK = 1 << 16


@dataclass(frozen=True)
class FetchResult:
    benchmark: str
    path: Path
    sha256: str
    origin: Origin
    note: str | None = None


def sha256_file(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def read_verified(spec: BenchmarkSpec, data_dir: Path | None = None) -> bytes:
    """The cached file's bytes, read once and checked, so what is parsed is what was verified."""
    path = _cache_path(spec, data_dir)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DataIntegrityError(
            f"benchmark file for {spec.id} is missing at {path}; run `bias-monitor data fetch` "
            f"(or `bias-monitor data fetch --from DIR` with a folder holding {spec.path})"
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != spec.sha256:
        raise DataIntegrityError(
            f"cached benchmark file {path} ({spec.id}) has sha256 {digest}, expected pinned "
            f"{spec.sha256}; run `bias-monitor data fetch` to replace it"
        )
    return data


def verify_cached(spec: BenchmarkSpec, data_dir: Path | None = None) -> Path:
    """Check the cached copy of ``spec`` exists and matches its pin; return its path."""
    read_verified(spec, data_dir)
    return _cache_path(spec, data_dir)


def fetch(
    manifest: BenchmarkManifest,
    ids: list[str] | None = None,
    *,
    from_dir: Path | None = None,
    data_dir: Path | None = None,
    on_event: Callable[[str], None] | None = None,
) -> list[FetchResult]:
    """Make sure each selected benchmark file is in the cache with its pinned sha256.

    A verified cached copy is reused; otherwise the file is imported from ``from_dir``
    when given, else downloaded from its pinned URL, falling back to
    ``$MONITOR_DATA_MIRROR`` (announced through ``on_event``) when the URL cannot be
    reached. A benchmark's companion files (``BenchmarkSpec.companions``) follow it, each
    reported as ``<id>:<name>``. Stops at the first file that cannot be obtained or fails
    its checksum.
    """
    say = on_event or (lambda _msg: None)
    data_dir = Path(data_dir) if data_dir is not None else paths.data_dir()
    results: list[FetchResult] = []
    with httpx.Client(timeout=HTTP_TIMEOUT, follow_redirects=True) as client:
        for spec in manifest.select(ids):
            for one in (spec, *(spec.companion_spec(n) for n in spec.companions)):
                results.append(
                    _fetch_one(one, client, from_dir=from_dir, data_dir=data_dir, say=say)
                )
    return results


def _fetch_one(
    spec: BenchmarkSpec,
    client: httpx.Client,
    *,
    from_dir: Path | None,
    data_dir: Path,
    say: Callable[[str], None],
) -> FetchResult:
    target = _cache_path(spec, data_dir)
    if target.is_file() and sha256_file(target) == spec.sha256:
        say(f"{spec.id}: cached copy at {target} matches its pin; reused")
        return FetchResult(spec.id, target, spec.sha256, "cache")

    if spec.shipped is not None:
        # Nothing to download: the file is the family package's, and it does not match.
        raise DataIntegrityError(
            f"{spec.id}: the file its family's package ships, {target}, is missing or does "
            f"not match its pinned sha256 {spec.sha256}; reinstall the family's package"
        )
    if from_dir is not None:
        source = Path(from_dir) / spec.path
        _install(_read_chunks(source, spec, f"--from folder {from_dir}"), target, spec, source)
        say(f"{spec.id}: imported {source} (sha256 verified)")
        return FetchResult(spec.id, target, spec.sha256, "import")

    try:
        _install(_download_chunks(client, spec.url), target, spec, spec.url)
    except (httpx.TransportError, httpx.HTTPStatusError) as exc:
        problem = _describe(exc)
        mirror = paths.data_mirror()
        if mirror is None:
            raise DataIntegrityError(
                f"cannot download {spec.id}: {spec.url} {problem} ({type(exc).__name__}); "
                f"set MONITOR_DATA_MIRROR "
                f"to a folder holding {spec.path}, or run `bias-monitor data fetch --from DIR`"
            ) from None
        source = mirror / spec.path
        _install(_read_chunks(source, spec, f"$MONITOR_DATA_MIRROR={mirror}"), target, spec, source)
        note = f"pinned URL {problem}; imported {spec.path} from $MONITOR_DATA_MIRROR={mirror}"
        say(f"{spec.id}: {note}")
        return FetchResult(spec.id, target, spec.sha256, "mirror", note)
    say(f"{spec.id}: downloaded {spec.url} (sha256 verified)")
    return FetchResult(spec.id, target, spec.sha256, "url")


def _cache_path(spec: BenchmarkSpec, data_dir: Path | None) -> Path:
    if spec.shipped is not None:  # a family ships the file in its package: read it there
        return spec.shipped
    return (Path(data_dir) if data_dir is not None else paths.data_dir()) / spec.path


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.HTTPStatusError):
        return f"returned HTTP {exc.response.status_code}"
    return "unreachable"


def _download_chunks(client: httpx.Client, url: str) -> Iterator[bytes]:
    with client.stream("GET", url) as response:
        response.raise_for_status()
        yield from response.iter_bytes(_CHUNK)


def _read_chunks(source: Path, spec: BenchmarkSpec, where: str) -> Iterator[bytes]:
    # Checked here, before _install creates anything, so a missing file leaves no trace.
    if not source.is_file():
        raise DataIntegrityError(
            f"benchmark file for {spec.id} not found at {source} (expected {spec.path} in {where})"
        )

    def chunks() -> Iterator[bytes]:
        with source.open("rb") as fh:
            while block := fh.read(_CHUNK):
                yield block

    return chunks()


def _install(chunks: Iterable[bytes], target: Path, spec: BenchmarkSpec, origin: object) -> None:
    """Write to a temp file beside ``target``, verify, then rename: all or nothing."""
    created = _make_parents(target.parent)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as fh:
            for block in chunks:
                fh.write(block)
                digest.update(block)
            fh.flush()
            os.fsync(fh.fileno())
        got = digest.hexdigest()
        if got != spec.sha256:
            raise DataIntegrityError(
                f"{origin} ({spec.id}, {spec.path}) has sha256 {got}, but the manifest pins "
                f"{spec.sha256}; nothing was written to the cache"
            )
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        for folder in reversed(created):
            _rmdir_if_empty(folder)
        raise


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; return the ones created, outermost first."""
    missing = [p for p in [folder, *folder.parents] if not p.exists()]
    missing.reverse()
    folder.mkdir(parents=True, exist_ok=True)
    return missing


def _rmdir_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
