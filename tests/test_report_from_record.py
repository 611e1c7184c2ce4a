"""``Frozen.from_record``: a report model built from the drift or read-model record it
mirrors, every field not given copied by name. Copying by name is only safe if it is
strict: a field the record lacks is an error, never silently the model's default, and
what is copied is shown as safely as anything else a report holds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from monitor.drift.robustness import MetricReading
from monitor.report.model import PanelReading, RunSummary


def test_fields_come_by_name_and_what_differs_is_given() -> None:
    m = MetricReading("ull", 0.04, 0.01, 0.07, 120, own=False, invalid_reason=None)
    made = PanelReading.from_record(m, ci=(m.ci_low, m.ci_high), n_paired=m.n)
    assert made == PanelReading(
        metric="ull",
        own=False,
        valid=True,  # a property of the reading, read like a field
        invalid_reason=None,
        delta=0.04,
        ci=(0.01, 0.07),
        n_paired=120,
    )


def test_given_values_win_over_the_records() -> None:
    m = MetricReading("cll", 0.04, None, None, 120, own=True)
    assert PanelReading.from_record(m, metric="other", ci=None, n_paired=3).metric == "other"


@dataclass(frozen=True)
class _Partial:
    """A record that lacks ``metric`` and ``status``, which RunSummary has defaults or
    requirements for."""

    run_id: str
    snapshot_id: str
    started_at: datetime


def test_a_field_the_record_lacks_is_an_error_not_a_default() -> None:
    r = _Partial("r1", "s1", datetime(2026, 1, 2, tzinfo=UTC))
    with pytest.raises(AttributeError, match="status"):
        RunSummary.from_record(r, reason=None)
    # Given, the same fields make the model.
    made = RunSummary.from_record(r, status="complete", metric=None, reason=None)
    assert (made.run_id, made.status, made.metric) == ("r1", "complete", None)


def test_copied_text_is_shown_safely() -> None:
    """A copied string goes through the same validation as a given one: a terminal
    escape in a record's text is made visible, not passed to the renderers."""
    m = MetricReading("cll", None, None, None, 0, invalid_reason="bad\x1b[31m")
    made = PanelReading.from_record(m, ci=None, n_paired=0)
    assert "\x1b" not in (made.invalid_reason or "")
