"""What the benchmark manifest selects when a user names no benchmark, and the controls it
declares: read from the manifest when a help text or a hint needs them (``run --help``,
the line after ``snapshots add``), so no benchmark id is written into the core's code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ManifestDefaults:
    """``benchmarks``: the ids marked ``default``, in the manifest's order (what ``run``
    scores without ``-b``); ``controls``: (benchmark, control, the control's rows) for
    every declared control, in the same order."""

    benchmarks: tuple[str, ...]
    controls: tuple[tuple[str, str, int], ...]


def manifest_defaults() -> ManifestDefaults:
    """The manifest's default selection and controls (a ``UserInputError`` where the
    manifest cannot be read)."""
    from monitor.benchmarks.manifest import load_manifest

    manifest = load_manifest()
    specs = manifest.benchmarks
    return ManifestDefaults(
        benchmarks=tuple(s.id for s in manifest.select(None, controls=False)),
        controls=tuple((s.id, c, specs[c].rows) for s in specs.values() for c in s.controls),
    )
