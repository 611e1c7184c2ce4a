"""Which benchmarks are controls, and which benchmark each one controls.

A control (a neutral set scored beside an axis's benchmark: ``controls`` in the
manifest) is there to read its axis's number: the model's preference on content-free
sentences says how far from 50% "no bias" lies for this model. It is never a bias
axis of its own, so drift never gives it a verdict, a flag, a place in the
Benjamini–Hochberg family or a reason for ``--fail-on`` to fail; it travels with the
comparison of the axis it controls. The
benchmark manifest declares controls (``controls = [...]`` on the controlled benchmark).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from monitor.benchmarks.manifest import default_manifest_path, load_manifest
from monitor.errors import UserInputError

Controls = Mapping[str, Sequence[str]]  # benchmark id → its control benchmark ids


@lru_cache(maxsize=4)
def _declared(path: Path) -> dict[str, tuple[str, ...]]:
    try:
        manifest = load_manifest(path)
    except UserInputError:
        return {}  # a store read without its manifest still compares; no controls known
    return {b: s.controls for b, s in manifest.benchmarks.items() if s.controls}


def manifest_controls() -> dict[str, tuple[str, ...]]:
    """Benchmark → its controls as the manifest declares them (read once per manifest
    path); empty when the manifest cannot be read, so an old store still compares."""
    return dict(_declared(default_manifest_path()))


def controlled_by(controls: Controls) -> dict[str, str]:
    """Control benchmark → the benchmark it controls (the first that names it)."""
    out: dict[str, str] = {}
    for bench, cs in controls.items():
        for c in cs:
            out.setdefault(c, bench)
    return out
