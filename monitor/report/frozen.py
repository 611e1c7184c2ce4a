"""The base of every report model: frozen, strict, and safe to show.

Every string a report model holds goes through ``display.safe_text`` on validation, so
the three renderers (and a family's section, which subclasses this too) never show a
terminal control character or a credential. Its own module so that the report frame
(``model``) and the families' sections (``section``) share it without importing each
other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

from monitor.display import safe_text

# Values that hold no text: passed through without a call. A year's report validates
# ~60k models of mostly numbers, dates and ids (see ``bench/store_scale.py``).
_NO_TEXT = frozenset({int, float, bool, type(None), datetime})


def _shown_safely(value: Any) -> Any:
    """Every string a report shows, made safe once, here, for all three renderers: no
    terminal or bidi control characters (made visible), no credentials (redacted)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {k: v if type(v) in _NO_TEXT else _shown_safely(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(v if type(v) in _NO_TEXT else _shown_safely(v) for v in value)
    return value


# Validation context of a caller whose every string already went through
# ``display.safe_text``: ``report.history`` makes a series' texts safe once per
# distinct value, then validates the ~24k trend points a year's report keeps with it
# instead of walking each point's fields again. Nothing else is skipped.
SHOWN_SAFELY: dict[str, bool] = {"shown_safely": True}


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="null")

    @model_validator(mode="before")
    @classmethod
    def _safe_text(cls, data: Any, info: ValidationInfo) -> Any:
        if info.context is SHOWN_SAFELY or not isinstance(data, dict):
            return data
        return _shown_safely(data)

    @classmethod
    def from_record(cls, source: object, **given: Any) -> Self:
        """This model with ``given`` and, for each of its other fields, ``source``'s
        attribute of the same name (which must exist). A report model mirrors a record of
        drift or of the store field by field; copying by name says so once, where listing
        ``name=source.name`` at every copy restates each field and lets one be dropped
        from one output without a sign. What differs (a renamed field, an interval made
        of ``ci_low``/``ci_high``, a fact from elsewhere) is what the caller gives."""
        taken = {name: getattr(source, name) for name in cls.model_fields if name not in given}
        return cls(**taken, **given)
