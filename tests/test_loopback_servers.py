"""The test servers themselves must not inject failures the tests did not ask for.

A burst of connections that arrives before the server accepts any used to overflow
``http.server``'s accept queue (backlog 5); the kernel then reset connections whose
request was already sent, and the monitor's client recorded a ``ReadError`` retry that a
fault-injection test counted as unexpected (a CI flake in ``test_api_vllm.py``).
"""

from __future__ import annotations

import threading
import time

import httpx
from servers.echo import EchoServer
from servers.fault_proxy import FaultProxy
from servers.loopback import LISTEN_BACKLOG

BURST = 120  # over seven times the largest max_concurrency a committed snapshot sets


def test_a_burst_of_connections_before_the_proxy_accepts_gets_every_answer() -> None:
    assert BURST <= LISTEN_BACKLOG
    with EchoServer() as upstream:
        proxy = FaultProxy(f"http://127.0.0.1:{upstream.port}")  # listening, not accepting
        statuses: list[int] = []
        failures: list[str] = []

        def ask() -> None:
            try:
                statuses.append(
                    httpx.post(f"{proxy.url}/v1/x", content=b"{}", timeout=30).status_code
                )
            except httpx.HTTPError as exc:
                failures.append(type(exc).__name__)

        threads = [threading.Thread(target=ask) for _ in range(BURST)]
        for t in threads:
            t.start()
        time.sleep(1.0)  # every connection is queued (or refused) before the first accept
        with proxy:
            for t in threads:
                t.join(timeout=60)
    assert failures == []
    assert statuses == [401] * BURST  # the echo server's answer, passed through
    assert len(proxy.log) == BURST
