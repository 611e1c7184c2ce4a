"""Fetching pinned files into the cache: import, reuse, real HTTP, mirror fallback, integrity.

HTTP is real: a local http.server for downloads, and a closed local port for an
unreachable URL (a genuine connection error, no mocking).
"""

from __future__ import annotations

import functools
import http.server
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from monitor.benchmarks.fetch import fetch, sha256_file
from monitor.benchmarks.manifest import BenchmarkManifest, load_manifest
from monitor.errors import DataIntegrityError

# The default benchmarks, bhed-caste followed by its neutral control.
BHED = ["bhed-caste", "bhed-neutral", "bhed-religion", "bhed-gender", "bhed-race"]


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def with_urls(manifest: BenchmarkManifest, base: str) -> BenchmarkManifest:
    raw = manifest.model_dump()
    for spec in raw["benchmarks"].values():
        spec["url"] = f"{base}/{quote(spec['path'])}"  # SeeGULL's file names have spaces
    return BenchmarkManifest.model_validate(raw)


@pytest.fixture
def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def http_base(shared_datasets) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(shared_datasets))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_import_into_empty_cache_then_reuse(tmp_path, shared_datasets):
    data_dir = tmp_path / "cache"
    events: list[str] = []
    manifest = load_manifest()
    first = fetch(manifest, from_dir=shared_datasets, data_dir=data_dir, on_event=events.append)
    assert [r.benchmark for r in first] == BHED
    assert {r.origin for r in first} == {"import"}
    for r in first:
        assert r.path == data_dir / manifest.benchmarks[r.benchmark].path
        assert sha256_file(r.path) == r.sha256 == manifest.benchmarks[r.benchmark].sha256
    assert len(events) == len(BHED)
    assert not [p for p in files_under(data_dir) if p.name.endswith(".part")]

    again = fetch(manifest, from_dir=tmp_path / "nonexistent", data_dir=data_dir)
    assert {r.origin for r in again} == {"cache"}


def test_checksum_mismatch_leaves_nothing(tmp_path, shared_datasets):
    manifest = load_manifest()
    spec = manifest.benchmarks["bhed-caste"]
    mirror = tmp_path / "mirror"
    (mirror / spec.path).parent.mkdir(parents=True)
    data = bytearray((shared_datasets / spec.path).read_bytes())
    data[100] ^= 0x01
    (mirror / spec.path).write_bytes(bytes(data))
    data_dir = tmp_path / "cache"
    with pytest.raises(DataIntegrityError) as err:
        fetch(manifest, ["bhed-caste"], from_dir=mirror, data_dir=data_dir)
    msg = str(err.value)
    assert str(mirror / spec.path) in msg and spec.sha256 in msg
    assert sha256_file(mirror / spec.path) in msg
    assert files_under(data_dir) == [] and not data_dir.exists()


def test_corrupt_cached_copy_is_replaced(tmp_path, shared_datasets):
    manifest = load_manifest()
    spec = manifest.benchmarks["bhed-race"]
    target = tmp_path / spec.path
    target.parent.mkdir(parents=True)
    target.write_bytes(b"not the file")
    (r,) = fetch(manifest, ["bhed-race"], from_dir=shared_datasets, data_dir=tmp_path)
    assert r.origin == "import" and sha256_file(target) == spec.sha256


def test_missing_source_file(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataIntegrityError) as err:
        fetch(
            load_manifest(), ["bhed-gender"], from_dir=tmp_path / "empty", data_dir=tmp_path / "c"
        )
    assert "indian-bhed/Gender.csv" in str(err.value) and "not found" in str(err.value)
    assert not (tmp_path / "c").exists()


def test_download_from_url(tmp_path, http_base):
    manifest = with_urls(load_manifest(), http_base)
    results = fetch(manifest, ["bhed-caste", "crows-pairs"], data_dir=tmp_path)
    # bhed-caste brings its neutral control along
    assert [r.benchmark for r in results] == ["bhed-caste", "bhed-neutral", "crows-pairs"]
    assert [r.origin for r in results] == ["url", "url", "url"]
    assert all(sha256_file(r.path) == r.sha256 for r in results)


def test_http_error_falls_back_to_mirror(tmp_path, http_base, shared_datasets, monkeypatch):
    raw = load_manifest().model_dump()
    raw["benchmarks"]["bhed-caste"]["url"] = f"{http_base}/no/such/file.csv"
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(shared_datasets))
    r = fetch(BenchmarkManifest.model_validate(raw), ["bhed-caste"], data_dir=tmp_path)[0]
    assert r.origin == "mirror" and "returned HTTP 404" in r.note


def test_unreachable_url_with_mirror(tmp_path, closed_port_url, shared_datasets, monkeypatch):
    mirror = tmp_path / "mirror"
    shutil.copytree(shared_datasets / "indian-bhed", mirror / "indian-bhed")
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(mirror))
    events: list[str] = []
    manifest = with_urls(load_manifest(), closed_port_url)
    r = fetch(manifest, ["bhed-caste"], data_dir=tmp_path / "cache", on_event=events.append)[0]
    expected = (
        f"pinned URL unreachable; imported indian-bhed/Caste.csv from $MONITOR_DATA_MIRROR={mirror}"
    )
    assert r.origin == "mirror" and r.note == expected
    assert events[0] == f"bhed-caste: {expected}" and events[1].startswith("bhed-neutral: ")
    assert sha256_file(tmp_path / "cache" / "indian-bhed" / "Caste.csv") == r.sha256


def test_unreachable_url_without_mirror(tmp_path, closed_port_url, monkeypatch):
    monkeypatch.delenv("MONITOR_DATA_MIRROR", raising=False)
    manifest = with_urls(load_manifest(), closed_port_url)
    with pytest.raises(DataIntegrityError) as err:
        fetch(manifest, ["bhed-religion"], data_dir=tmp_path / "cache")
    msg = str(err.value)
    assert "bhed-religion" in msg and closed_port_url in msg and "unreachable" in msg
    assert "MONITOR_DATA_MIRROR" in msg and "--from" in msg
    assert files_under(tmp_path / "cache") == []


def test_mirror_missing_the_file(tmp_path, closed_port_url, monkeypatch):
    (tmp_path / "mirror").mkdir()
    monkeypatch.setenv("MONITOR_DATA_MIRROR", str(tmp_path / "mirror"))
    manifest = with_urls(load_manifest(), closed_port_url)
    with pytest.raises(DataIntegrityError, match="MONITOR_DATA_MIRROR"):
        fetch(manifest, ["bhed-race"], data_dir=tmp_path / "cache")
    assert files_under(tmp_path / "cache") == []
