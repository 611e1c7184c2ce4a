"""A command's flag declared as a field of a typed option model, in one place.

Every option model (``run``'s, the families' ``Run.options``, ``drift``'s selection)
declares its flags the way ``monitor.cli.model_options`` reads them:
``json_schema_extra["flag"]`` the flag (``"--x"``, ``"--x/--no-x"``, or ``["--x", "-x"]``
with a short form), ``description`` its help, ``ge``/``le`` its bounds, the field's
default the option's. ``flag_field`` writes that shape, so the reader and every writer
agree on it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field


def flag_field(flag: str | list[str], default: Any, description: str, **bounds: float) -> Any:
    """A pydantic field that is the command-line option ``flag``; ``bounds``: ``ge``/``le``."""
    return Field(default, description=description, json_schema_extra={"flag": flag}, **bounds)
