"""Number formatting shared by the report renderers and drift's verdict sentences.

The terminal tables use the same functions, so a number reads the same in a report and on
screen. Rates are percentages with one decimal, differences are percentage points, and a missing
number is an em dash, never "nan".
"""

from __future__ import annotations

from datetime import UTC, datetime

MISSING = "—"
MINUS = "−"  # U+2212: a real minus sign lines up with "+" in tables


def _missing(x: float | None) -> bool:
    """No number to show: absent, or NaN (``x != x``), which must never print as "nan"."""
    return x is None or x != x


def pct(x: float | None) -> str:
    return MISSING if _missing(x) else f"{100 * x:.1f}%"


def interval(ci: tuple[float | None, float | None] | None) -> str:
    """A rate's interval in percent, "[30.0, 48.2]"; a dash when either end is missing."""
    if ci is None or _missing(ci[0]) or _missing(ci[1]):
        return MISSING
    return f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def rate_with_ci(x: float | None, ci: tuple[float, float] | None) -> str:
    return pct(x) if ci is None else f"{pct(x)} {interval(ci)}"


def _signed(v: float) -> str:
    s = f"{abs(v):.1f}"
    if s == "0.0":
        return s
    return f"{MINUS if v < 0 else '+'}{s}"


def pp(x: float | None) -> str:
    """A difference of rates in percentage points, signed."""
    return MISSING if x is None else f"{_signed(100 * x)} pp"


def pp_interval(ci: tuple[float, float] | None) -> str:
    return MISSING if ci is None else f"[{_signed(100 * ci[0])}, {_signed(100 * ci[1])}]"


def pvalue(p: float | None) -> str:
    """The one rule for a p-value in every output (terminal, Markdown, HTML, verdict
    sentences): "<0.001", three decimals below 0.1 (where 0.041 and 0.049 must stay apart),
    two above it."""
    if _missing(p):
        return MISSING
    if p < 0.001:
        return "<0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def flips(b: int | None, c: int | None) -> str:
    return MISSING if b is None or c is None else f"{b} / {c}"


def when(t: datetime | None) -> str:
    """Minutes are enough to tell nightly runs apart; seconds are noise in a table."""
    if t is None:
        return MISSING
    if t.utcoffset() is None:
        return t.strftime("%Y-%m-%d %H:%M")
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def day(t: datetime) -> str:
    return t.strftime("%Y-%m-%d")


def short_id(run_id: str | None, width: int = 12) -> str:
    if run_id is None:
        return MISSING
    return run_id if len(run_id) <= width else run_id[:width] + "…"


def clip(text: str, limit: int = 160) -> str:
    """Values come from files and APIs: a megabyte-long model name must not flood a comment."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def mde(x: float | None) -> str:
    """A minimum detectable change: "±16.6 pp"; a dash when no change could be detected."""
    return MISSING if x is None else f"±{100 * x:.1f} pp"


def pct_list(values: tuple[float, ...] | list[float]) -> str:
    """Rates in the order given: "71.8, 74.5, 77.5%"."""
    if not values:
        return MISSING
    return ", ".join(f"{100 * v:.1f}" for v in values) + "%"


def distribution(values: tuple[float, ...] | list[float]) -> str:
    """A handful of rates as a distribution: range, median and how many."""
    if not values:
        return MISSING
    ordered = sorted(values)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    if len(ordered) == 1:
        return f"{pct(ordered[0])} (1 pair)"
    return (
        f"{pct(ordered[0])}–{pct(ordered[-1])}, median {pct(median)} ({len(ordered)} pairs): "
        + pct_list(ordered)
    )
