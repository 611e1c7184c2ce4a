"""What the choice-question family adds to ``run`` (its ``Run`` capability): ``--size``
and ``--translations``/``--language`` as its loaders' options, and the rule that a
translation applies to BharatBBQ files only (the one loader that pairs a translation
with the pinned English rows).

The application layer calls these through the registry; it knows neither the flags nor
the formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from monitor.families.choice_qa.run_options import ChoiceRunOptions

if TYPE_CHECKING:
    from monitor.benchmarks.manifest import BenchmarkSpec

# The manifest format whose loader reads a translation row by row.
TRANSLATABLE = "bharatbbq-csv"


def loader_options(options: ChoiceRunOptions) -> dict[str, str]:
    """``size``, and ``translations`` with ``language``, checked before anything is read."""
    return options.loader_options()


def check(options: ChoiceRunOptions, specs: Sequence[BenchmarkSpec]) -> None:
    """Only BharatBBQ files have translations the loader can pair row by row."""
    if options.translations is None:
        return
    from monitor.errors import UserInputError

    others = [s.id for s in specs if s.format != TRANSLATABLE]
    if not specs:
        raise UserInputError("--translations needs a BharatBBQ benchmark (-b bharatbbq-caste)")
    if others:
        raise UserInputError(
            "--translations applies to BharatBBQ benchmarks (bharatbbq-*) only, not to "
            + ", ".join(others)
        )
