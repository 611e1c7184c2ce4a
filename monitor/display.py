"""Text that reaches a person is shown, never executed.

Stored strings come from many hands: snapshot files, API servers (model names, error
messages, fingerprints), run triggers and notes, report titles. An ESC or BEL in one of
them would drive a terminal (move the cursor, rewrite a line, set a window title), a C1
control or a bidi override would make text read differently from what it is, and a
credential a server echoed must not be shown at all. :func:`safe_text` is applied
wherever text is output: the CLI's consoles, JSON printed to stdout, and every string of
a report (Markdown, HTML, JSON) as the report model is built.

Control characters become visible escapes (``\\x1b``), so nothing is silently lost and a
reader can see that something odd was there. Newlines and tabs stay; the zero-width
joiners Devanagari needs stay too.
"""

from __future__ import annotations

import re

from monitor.redaction import redact

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional-text controls
# (LRM/RLM, ALM, embeddings/overrides, isolates) that can make text display reordered.
_INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character replaced by a visible escape."""
    return _INVISIBLE.sub(_escape, text)


def safe_text(value: object) -> str:
    """What may be shown of ``value``: credentials redacted, controls made visible."""
    return visible(redact(str(value)))


def json_visible(text: str) -> str:
    """A JSON document with C1 and bidi controls written as ``\\uXXXX`` escapes.

    ``json.dumps`` already escapes C0 controls; with ``ensure_ascii=False`` (kept so Hindi
    stays readable) it would write C1 and bidi characters raw.
    """
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)
