"""A real HTTP proxy on 127.0.0.1 that injects faults between a client and a real server.

Retry code is only believable when it has met the failures it claims to survive, on a
real socket: a 429 with ``Retry-After``, a 500, an answer slower than the client's
timeout, a JSON body cut short, a reported model name or ``system_fingerprint`` that
changes mid-run. The test decides which request gets which fault by appending
:class:`Rule` objects; :attr:`FaultProxy.log` then shows exactly what passed through, so
a test can prove that nothing was sent twice where it must not be.

Bounded on purpose: loopback only (both ends), request bodies capped, delays capped,
daemon threads, and the server shuts down with the test's context manager.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from servers.loopback import LoopbackServer

Action = Literal["status", "slow", "truncate", "rewrite", "drop"]

MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_DELAY_S = 30.0
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "content-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-authenticate",
}


@dataclass
class Rule:
    """One fault, applied to requests whose path starts with ``path``.

    ``nth`` names the 1-based numbers, counted per exact path, of the requests it hits
    (``None``: every matching request from ``from_nth`` on). Actions:

    * ``status``: answer ``status`` (with ``Retry-After: retry_after`` when given, and
      ``message`` as the error's message) without forwarding, as a rate limiter, a
      crashed worker or a model refusing a parameter would;
    * ``slow``: forward, then hold the answer ``delay_s`` seconds before sending it;
    * ``truncate``: forward, then send only the first ``keep_fraction`` of the body,
      correctly framed (the client reads a complete but invalid JSON document);
    * ``drop``: forward, then close the connection without answering;
    * ``rewrite``: forward, then set top-level JSON fields (``set_fields``), e.g. a
      different ``model`` or ``system_fingerprint``.
    """

    action: Action
    path: str = "/v1/"
    nth: frozenset[int] | None = None
    from_nth: int = 1
    status: int = 500
    retry_after: str | None = None
    delay_s: float = 0.0
    keep_fraction: float = 0.5
    set_fields: dict[str, Any] = field(default_factory=dict)
    message: str | None = None

    def __post_init__(self) -> None:
        if self.nth is not None:
            self.nth = frozenset(self.nth)
        if not 0 <= self.delay_s <= MAX_DELAY_S:
            raise ValueError(f"delay_s must be within 0..{MAX_DELAY_S}")

    def hits(self, path: str, number: int) -> bool:
        if not path.startswith(self.path):
            return False
        return number in self.nth if self.nth is not None else number >= self.from_nth


@dataclass
class Exchange:
    """One request that reached the proxy and what was done with it.

    Logged as soon as the proxy has decided (before a slow answer's wait), so a test sees
    every request at once; ``client_status`` is filled in once the answer was written.
    """

    number: int  # 1-based, per exact path
    method: str
    path: str
    action: str  # "forward" or the rule's action
    request_sha: str  # identifies the request body without storing it
    upstream_status: int | None = None  # None when it was not forwarded
    client_status: int | None = None  # None until written, or when the client had gone


class FaultProxy:
    """``with FaultProxy(upstream) as proxy:`` serves on ``proxy.url`` until the block ends."""

    def __init__(self, upstream: str, *, upstream_timeout_s: float = 300.0) -> None:
        parts = urlsplit(upstream)
        if not parts.hostname or not _is_loopback(parts.hostname):
            raise ValueError(f"the fault proxy only forwards to loopback hosts, not {upstream}")
        self.upstream = f"{parts.scheme}://{parts.netloc}"
        self.rules: list[Rule] = []
        self.log: list[Exchange] = []
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._http = httpx.Client(timeout=upstream_timeout_s)
        self._server = LoopbackServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._http.close()

    def add(self, *rules: Rule) -> FaultProxy:
        with self._lock:
            self.rules.extend(rules)
        return self

    def clear(self) -> None:
        """Drop all rules and restart the request numbering (the log is kept)."""
        with self._lock:
            self.rules.clear()
            self._counts.clear()

    def exchanges(self, path: str) -> list[Exchange]:
        """The requests for ``path`` in arrival order (copies: later updates not shown)."""
        with self._lock:
            return sorted((replace(e) for e in self.log if e.path == path), key=_number)

    # Called from handler threads.
    def _next(self, path: str) -> tuple[int, Rule | None]:
        with self._lock:
            number = self._counts.get(path, 0) + 1
            self._counts[path] = number
            rule = next((r for r in self.rules if r.hits(path, number)), None)
            return number, rule

    def _remember(self, exchange: Exchange) -> None:
        with self._lock:
            self.log.append(exchange)

    def _update(self, exchange: Exchange, **changes: object) -> None:
        with self._lock:
            for k, v in changes.items():
                setattr(exchange, k, v)


def _number(exchange: Exchange) -> int:
    return exchange.number


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's connection pool expects

        def log_message(self, *args: object) -> None:  # quiet: tests read proxy.log
            pass

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True  # the unread body would poison a kept-alive link
                self._send(413, b'{"error": {"message": "request too large for the proxy"}}')
                return
            body = self.rfile.read(length) if length else b""
            path = self.path
            number, rule = proxy._next(path)
            action = rule.action if rule is not None else "forward"
            entry = Exchange(number, self.command, path, action, hashlib.sha256(body).hexdigest())

            if rule is not None and rule.action == "status":
                proxy._remember(entry)
                payload = json.dumps(
                    {
                        "error": {
                            "message": rule.message or f"injected {rule.status}",
                            "code": rule.status,
                        }
                    }
                ).encode()
                extra = {"Retry-After": rule.retry_after} if rule.retry_after else {}
                if self._send(rule.status, payload, extra):
                    proxy._update(entry, client_status=rule.status)
                return

            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() not in _HOP_BY_HOP and k.lower() != "host"
            }
            try:
                upstream = proxy._http.request(
                    self.command, proxy.upstream + path, content=body, headers=headers
                )
            except httpx.HTTPError:
                proxy._remember(entry)
                if self._send(502, b'{"error": {"message": "upstream unreachable"}}'):
                    proxy._update(entry, client_status=502)
                return
            entry.upstream_status = upstream.status_code
            proxy._remember(entry)
            content = upstream.content
            out_headers = {
                k: v
                for k, v in upstream.headers.items()
                if k.lower() not in _HOP_BY_HOP and k.lower() not in ("date", "server")
            }
            if rule is not None and rule.action == "rewrite":
                try:
                    data = json.loads(content)
                except ValueError:
                    data = None  # not JSON (an upstream error page): pass it through
                if isinstance(data, dict):
                    data.update(rule.set_fields)
                    content = json.dumps(data).encode()
            elif rule is not None and rule.action == "truncate":
                content = content[: max(1, int(len(content) * rule.keep_fraction))]
            elif rule is not None and rule.action == "slow":
                time.sleep(rule.delay_s)
            elif rule is not None and rule.action == "drop":
                self.close_connection = True
                self.connection.close()
                return
            if self._send(upstream.status_code, content, out_headers):
                proxy._update(entry, client_status=upstream.status_code)

        def _send(self, status: int, content: bytes, headers: dict[str, str] | None = None) -> bool:
            """Write a framed answer; False when the client had already gone (timeout)."""
            try:
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if not any(k.lower() == "content-type" for k in headers or {}):
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
                self.wfile.flush()
                return True
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return False

    return Handler
