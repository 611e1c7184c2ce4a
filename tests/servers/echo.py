"""A loopback HTTP server that refuses every request and echoes what it was sent.

Real servers put odd things in their error messages; a hostile or misconfigured one can
quote the request back, credentials included. This one always does: status 401 with
``{"error": {"message": ...}}`` quoting the request target (path and query) and every
header (``Authorization`` with its Bearer or Basic value, ``api-key``), so a test can
check that none of it reaches the store, the logs or the reports. It listens on
127.0.0.1 only and serves until closed.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

from servers.loopback import LoopbackServer

_CREDENTIALS = {"authorization", "api-key", "x-api-key"}


class _Handler(BaseHTTPRequestHandler):
    status = 401

    def _echo(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(min(length, 1_000_000))
        # Credentials first: clients shorten long error messages.
        sent = [f"{k}: {v}" for k, v in self.headers.items() if k.lower() in _CREDENTIALS]
        rest = [f"{k}: {v}" for k, v in self.headers.items() if k.lower() not in _CREDENTIALS]
        body = json.dumps(
            {
                "error": {
                    "message": f"Incorrect API key provided: {'; '.join(sent)}. You sent "
                    f"{self.command} {self.path} with headers {'; '.join(rest)}",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
        ).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _echo

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass


class EchoServer:
    """``with EchoServer() as srv: srv.port``"""

    def __init__(self) -> None:
        self._server = LoopbackServer(("127.0.0.1", 0), _Handler)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> EchoServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
