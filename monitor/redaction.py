"""Credentials never leave the process: one redactor for everything that could carry one.

An API key, a password in a base URL (``http://user:pass@host``, which the HTTP client
turns into ``Authorization: Basic base64(user:pass)``), an ``api-key`` header or query
parameter — a server can echo any of them back in an error, and an exception can quote
a URL. Every such text passes through :func:`redact` before it reaches the store
(``monitor.store`` applies it to every free-text and JSON value it writes), a log line or
the terminal (``monitor.terminal.output``), or a report.

Two kinds of protection:

* the **known secrets** of this process — each API client registers its key and the
  credentials in its base URL when it is built (:func:`register`, :func:`register_url`),
  a lake its catalog password and S3 secret key, together with their base64 and
  percent-encoded forms — replaced wherever they occur;
* **shapes** of credentials whatever their value: ``Bearer …``, ``Basic …``,
  ``api-key: …``/``api_key=…``/``x-api-key``, ``token``/``password``/``secret`` fields,
  URL userinfo, ``sk-…`` keys.

A known secret shorter than ``MIN_SECRET_LEN`` (12) characters is not registered. Such
a value is a default or a word — moto's ``test``, MinIO's ``minioadmin``, ``postgres`` —
that ordinary text holds too: replacing it wherever it occurred turned ``latest`` into
``la[REDACTED]``, drift's "6 paired tests" into "6 paired [REDACTED]s" and a lake's
label ``ducklake:postgres:...`` into ``ducklake:[REDACTED]:...``, in the terminal and in
stored text. Matching it only as a whole word would still hide "test" in "a paired
test", so the line is drawn at the value's length: no credential that protects anything
is that short (an AWS secret key has 40 characters, an API key 32 and more), and one
that is can be guessed faster than it could be read from a log. Where a short value
stands as a credential (``password=test``, ``Bearer test``, ``https://u:test@host``) the
shapes still replace it, whatever its length; and a value that is only ever handed to a
connection (a lake's ``PGPASSWORD`` and S3 keys: ``monitor.store.lake``) is kept out of
errors there, so none reaches the store or a log by that road either.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlsplit

MARK = "[REDACTED]"
# Known secrets shorter than this are not registered: they are words ordinary text holds
# too (``test``, ``minioadmin``, ``postgres``), and no secret worth hiding (module doc).
MIN_SECRET_LEN = 12
# Texts up to this long are remembered with their redacted form, up to this many
# (``Redactor``): ids, keys and labels, not documents.
MEMO_MAX_CHARS = 256
MEMO_MAX_ENTRIES = 100_000
_SECRET_PARAMS = re.compile(
    r"(?i)^(?:x-)?(?:api[-_]?key|key|token|access[-_]?token|secret|password|sig|signature|"
    r"code|auth|authorization|subscription[-_]?key)$"
)
_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"(?i)\b(bearer\s+)[^\s'\"]+"),
    re.compile(r"(?i)\b(basic\s+)[A-Za-z0-9+/=_\-]{4,}"),
    re.compile(r"(?i)([a-z][a-z0-9+.\-]*://)[^/@\s'\"]+@"),
    re.compile(
        r"(?i)((?:x-)?(?:api[-_]?key|authorization|access[-_]?token|password|secret|"
        r"subscription[-_]?key)[\"']?\s*[=:]\s*[\"']?)[^\s'\"&,}]+"
    ),
    # A credential-like query value of a URL (``?token=…``, ``&sig=…``): the names of
    # ``_SECRET_PARAMS``, only after ``?``/``&``/``;`` so that prose ("the code=3 case")
    # stays as it is.
    re.compile(
        r"(?i)([?&;](?:x-)?(?:api[-_]?key|key|token|access[-_]?token|secret|password|sig|"
        r"signature|code|auth|authorization|subscription[-_]?key)=)[^&#;\s'\"<>]+"
    ),
)
# For each pattern, literals one of which every match of it contains. Looking for a
# literal is cheap where the patterns are not: on a report's 11 MB of JSON the five
# patterns took ~2.3 s (and a case-insensitive alternation of the literals as a regex
# still 1.8 s), on a short label 4.5 µs, for texts that almost never hold a credential.
# A pattern none of whose literals is in the text cannot match it, so skipping it
# changes nothing (the tests compare with running every pattern on every text).
_TRIGGERS: tuple[tuple[str, ...], ...] = (
    ("sk-",),  # a case-sensitive pattern: looked for in the text as it is
    ("bearer",),  # the (?i) patterns: looked for in the case-folded text
    ("basic",),
    ("://",),
    (
        "api-key", "api_key", "apikey", "authorization", "access-token", "access_token",
        "accesstoken", "password", "secret", "subscription-key", "subscription_key",
        "subscriptionkey",
    ),
    ("key=", "token=", "secret=", "password=", "sig=", "signature=", "code=", "auth=",
     "authorization="),
)  # fmt: skip
# Case folding as the regex engine's (?i) does it for ASCII letters: str.lower() plus the
# four non-ASCII characters (?i) also matches to one (found by trying every code point).
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_FOLDED_AWAY = re.compile("[\u0130\u0131\u017f\u212a]")


# Any literal of the (?i) patterns, one search: most texts (labels, figures) hold none,
# and one compiled search is cheaper than five loops of substring tests.
_ANY_FOLDED_TRIGGER = re.compile("|".join(re.escape(t) for ts in _TRIGGERS[1:] for t in ts))


def _case_folded(text: str) -> str:
    return (text.translate(_FOLD) if _FOLDED_AWAY.search(text) else text).lower()


def _may_match(index: int, text: str, folded: str) -> bool:
    """Whether ``_PATTERNS[index]`` can match ``text`` (``folded``: its case-folded form)."""
    return any(t in (text if index == 0 else folded) for t in _TRIGGERS[index])


def url_credentials(url: str | None) -> list[str]:
    """What in ``url`` is a credential, by name (``userinfo``, ``query token``): what a
    snapshot file should not hold (the warning of ``bias-monitor run``)."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = ["userinfo"] if "@" in parts.netloc else []
    found += [
        f"query {name}"
        for name, _ in parse_qsl(parts.query, keep_blank_values=True)
        if _SECRET_PARAMS.match(name)
    ]
    return found


def encoded_forms(secret: str) -> set[str]:
    """A secret as it may travel: itself, base64 (standard and URL-safe, padded or not)
    and percent-encoded."""
    raw = secret.encode()
    forms = {secret, quote(secret, safe=""), unquote(secret)}
    for b64 in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        forms |= {b64, b64.rstrip("=")}
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


class Redactor:
    """Replaces known secrets (in every encoded form) and credential shapes with MARK."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: list[str] = []
        # Results for short texts, valid for the current secrets only: ``add`` starts a
        # new memo. A report repeats the same run ids, keys and labels tens of thousands
        # of times (a year's trends: ~130k texts, most of them repeats).
        self._memo: dict[str, str] = {}
        for s in secrets:
            self.add(s)

    def add(self, secret: str | None) -> None:
        """Replace ``secret`` (and its encoded forms) from now on; a value shorter than
        ``MIN_SECRET_LEN`` is left alone (see the module docstring)."""
        if not secret or len(secret) < MIN_SECRET_LEN:
            return
        with self._lock:
            known = set(self._secrets) | encoded_forms(secret)
            self._secrets = sorted(known, key=len, reverse=True)
            self._memo = {}

    def add_url(self, url: str | None) -> None:
        """The credentials a URL carries: user:password, the password, secret-looking
        query values."""
        if not url:
            return
        parts = urlsplit(url)
        if parts.password:
            self.add(f"{unquote(parts.username or '')}:{unquote(parts.password)}")
            self.add(unquote(parts.password))
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if _SECRET_PARAMS.match(name):
                self.add(value)

    def __call__(self, text: object) -> str:
        original = str(text)
        with self._lock:
            secrets, memo = self._secrets, self._memo
        remember = len(original) <= MEMO_MAX_CHARS
        if remember and (hit := memo.get(original)) is not None:
            return hit
        out = self._redacted(original, secrets)
        if remember and len(memo) < MEMO_MAX_ENTRIES:
            memo[original] = out  # a memo replaced meanwhile by ``add`` is dropped with it
        return out

    @staticmethod
    def _redacted(out: str, secrets: list[str]) -> str:
        for secret in secrets:
            out = out.replace(secret, MARK)
        folded = _case_folded(out)
        if _TRIGGERS[0][0] not in out and _ANY_FOLDED_TRIGGER.search(folded) is None:
            return out  # the common case: no pattern can match
        for index, pattern in enumerate(_PATTERNS):
            if _may_match(index, out, folded):
                redacted = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + MARK, out)
                if redacted != out:
                    out, folded = redacted, _case_folded(redacted)
        return out


# The process's own secrets: API clients register theirs when they are built.
_PROCESS = Redactor()


def register(*secrets: str | None) -> None:
    for s in secrets:
        _PROCESS.add(s)


def register_url(url: str | None) -> None:
    _PROCESS.add_url(url)


def redact(text: object) -> str:
    """``text`` with every known secret of this process and every credential shape
    replaced by ``[REDACTED]``."""
    return _PROCESS(text)


def redact_json(value: object) -> object:
    """:func:`redact` applied to every string in a JSON-like value (keys included)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact(k): redact_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_json(v) for v in value]
    return value
