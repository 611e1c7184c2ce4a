"""The threading HTTP server every test server here listens with.

``http.server.ThreadingHTTPServer`` listens with a backlog of 5. A run with
``max_concurrency = 16`` opens up to 16 connections at once; while the accept thread is
starved of CPU (vLLM shares the 2 cores), the kernel's accept queue overflows and a client
that has already sent its request reads a reset (``httpx.ReadError``). The monitor then
retries, as it should, and records an attempt the test never injected. Reproduced with a
burst of 120 connections made before the proxy accepts: resets in 5 runs of 5 at a backlog
of 5, none in 5 at 128 (``tests/test_loopback_servers.py``). A test server must not add
failures of its own, so the backlog here is well above any snapshot's concurrency.
"""

from __future__ import annotations

from http.server import ThreadingHTTPServer

LISTEN_BACKLOG = 128


class LoopbackServer(ThreadingHTTPServer):
    """A threading HTTP server with daemon handler threads and a deep accept queue."""

    request_queue_size = LISTEN_BACKLOG
    daemon_threads = True
