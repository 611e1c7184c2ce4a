"""What a DuckDB file's header says about the DuckDB that wrote it, and the one-line refusal
of a store written by a newer DuckDB than this one.

DuckDB cannot read a file whose storage format is newer than its own (1.5.5 reads storage
versions 64 to 68; 2.0.0 writes 999 by default) and says so in a paragraph with a link.
A user needs three facts instead: which DuckDB wrote the file, which one this
bias-monitor runs, and the command that converts it (``bias-monitor db convert``). The
header carries the first: DuckDB's main header holds, after its checksum and ``DUCK``
magic, the storage version number, four flag words and the writing library's version
string (``v2.0.0``), which this module reads without DuckDB.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import duckdb

from monitor.errors import UserInputError

# DuckDB's MainHeader (storage/storage_info.hpp): checksum u64, magic "DUCK", version u64,
# flags u64 x 4, library_git_desc char[32], library_git_hash char[32].
_MAGIC_AT, _MAGIC = 8, b"DUCK"
_VERSION_AT = 12
_DESC_AT, _DESC_LEN = 52, 32
_HEADER_LEN = _DESC_AT + _DESC_LEN
_TOO_NEW = re.compile(
    r"version number (\d+), but we can only read versions? (?:between )?(\d+)(?: and (\d+))?"
)
_RELEASE = re.compile(r"v\d+\.\d+\.\d+")


@dataclass(frozen=True)
class FileHeader:
    """The facts a DuckDB file's main header records about its writer."""

    storage_version: int  # DuckDB's storage format number (999: written by 2.x by default)
    written_by: str | None  # the writing library's version, e.g. "v2.0.0", when recorded


def read_header(path: Path) -> FileHeader | None:
    """The header of the DuckDB file at ``path``; None when it is not one (or unreadable)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEADER_LEN)
    except OSError:
        return None
    if len(head) < _HEADER_LEN or head[_MAGIC_AT : _MAGIC_AT + 4] != _MAGIC:
        return None
    version = int.from_bytes(head[_VERSION_AT : _VERSION_AT + 8], "little")
    desc = head[_DESC_AT : _DESC_AT + _DESC_LEN].split(b"\0", 1)[0].decode("ascii", "replace")
    match = _RELEASE.fullmatch(desc.strip())
    return FileHeader(version, match.group(0) if match else None)


class NewerDuckDBFile(UserInputError):
    """A store (or shard) written by a newer DuckDB than the installed one (exit 2, as any
    store that cannot be opened: nothing is written, and ``db convert`` is the way on)."""


def convert_command(path: Path) -> str:
    """The command a user types to convert ``path`` for this DuckDB."""
    return f"bias-monitor db convert {shlex.quote(str(path))}"


def newer_file_error(path: Path, exc: BaseException, label: str) -> NewerDuckDBFile | None:
    """The one-line refusal when ``exc`` (from opening ``path``) says the file is newer than
    this DuckDB reads; None for any other error."""
    found = _TOO_NEW.search(str(exc))
    if not isinstance(exc, duckdb.Error) or found is None:
        return None
    low, high = found.group(2), found.group(3) or found.group(2)
    header = read_header(path)
    writer = header.written_by if header is not None and header.written_by else None
    by = f"DuckDB {writer}" if writer else "a newer DuckDB"
    reads = f"{low} to {high}" if low != high else low
    return NewerDuckDBFile(
        f"{label} was written by {by} (storage version {found.group(1)}); this bias-monitor "
        f"runs DuckDB v{duckdb.__version__}, which reads storage versions {reads}; "
        f"convert it with: {convert_command(path)}"
    )


def open_read_only(path: Path, label: str) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the DuckDB file at ``path`` (``label`` names it in
    messages, e.g. ``shard PATH``), with timestamps read in UTC as the store writes them:
    for commands that copy out of a file they must never write (``db merge``'s shards,
    ``db migrate-to``'s source). A file written by a newer DuckDB is refused with
    ``newer_file_error``'s one line; any other failure to open it with DuckDB's first
    line."""
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        newer = newer_file_error(path, exc, label)
        if newer is not None:
            raise newer from exc
        raise UserInputError(f"cannot open {label}: {str(exc).splitlines()[0]}") from exc
    con.execute("SET TimeZone = 'UTC'")
    return con
