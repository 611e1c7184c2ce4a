"""Reading a file a user named on the command line: a regular file of bounded size.

A prediction file given to ``bias-monitor import`` or a translation given with
``run --translations`` is read whole (it is parsed as one table), so its size is its
memory. A path that is not a regular file (``/dev/zero``, a FIFO, a folder, a link to
one of them) never ends or never answers, and a huge file fills the memory before any
parser can object; both are refused here, in one line, before a byte is read. The check
is made on the open file (``fstat`` of the descriptor that is then read), so a file
swapped after a check on its name cannot slip past it, and at most ``limit + 1`` bytes
are ever read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from monitor.errors import UserInputError

# The largest published file these commands read is 3.6 MB (BharatBBQ's Age predictions);
# BBQ's largest category files are under 25 MB. 64 MiB leaves room for every published
# file and bounds what one input can cost (peak memory is a small multiple of it).
MAX_INPUT_BYTES = 64 * 1024 * 1024


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB"


def read_input_file(path: Path, *, what: str = "", limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes; a one-line
    ``UserInputError`` naming the path (prefixed by ``what``, e.g. ``--translations``)
    otherwise: not a file, unreadable, or too large."""
    label = f"{what} {path}" if what else str(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not hang before the check.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise UserInputError(f"{label}: not a file (a folder)") from None
    except OSError as exc:
        raise UserInputError(f"{label}: cannot read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserInputError(f"{label}: not a file (a device, pipe, socket or folder)")
        if info.st_size > limit:
            raise UserInputError(
                f"{label}: {_mib(info.st_size)}, larger than the {_mib(limit)} an input file may be"
            )
        try:
            data = fh.read(limit + 1)  # a file that grows while read stops here
        except OSError as exc:
            raise UserInputError(f"{label}: cannot read ({exc.strerror})") from None
    if len(data) > limit:
        raise UserInputError(f"{label}: larger than the {_mib(limit)} an input file may be")
    return data
