"""A real HTTP server on 127.0.0.1 that adds OpenAI's Files + Batches API to a server
that lacks it (vLLM), by running each batch line against that server.

Batch API mode is the nightly path for API snapshots, and vLLM has no ``/v1/batches``;
without this the mode could only be tested up to its file format. The shim speaks the
subset of the API the ``openai`` SDK uses for a batch: upload a JSONL file
(``POST /v1/files``, multipart), create a batch (``POST /v1/batches``), poll it
(``GET /v1/batches/{id}``) and download its output and error files
(``GET /v1/files/{id}/content``). Each line's ``body`` goes unchanged to the upstream
``url``; answers come back in OpenAI's output format (``custom_id``, ``response``
``{status_code, request_id, body}``, ``error``), non-200 answers in the error file. Every
other ``/v1/`` request (the run's start-up probe, ``/v1/models``) is passed to the
upstream as it is, and counted in ``direct_calls``.

Test controls: ``hold`` keeps new batches ``in_progress`` until :meth:`release`, as a
real batch would be while a nightly job exits; ``fail_once`` names custom ids whose first
attempt is answered with a 500 inside the batch. Loopback only, bounded bodies, daemon
threads.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from servers.loopback import LoopbackServer

MAX_BODY_BYTES = 32 * 1024 * 1024


class BatchShim:
    def __init__(self, upstream_root: str, *, hold: bool = False) -> None:
        self.upstream_root = upstream_root.rstrip("/")
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[str] = []  # batch ids, in creation order
        self.lines_seen: list[str] = []  # custom ids, every attempt
        self.fail_once: set[str] = set()
        self.direct_calls: list[str] = []  # paths passed straight to the upstream
        self._hold = threading.Event()
        if hold:
            self._hold.set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None

    # -- lifecycle ------------------------------------------------------------------

    def __enter__(self) -> BatchShim:
        shim = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                shim._get(self)

            def do_POST(self) -> None:
                shim._post(self)

        self._server = LoopbackServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc) -> None:
        self._hold.clear()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def release(self) -> None:
        """Let held batches run."""
        self._hold.clear()

    # -- HTTP -----------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}-{next(self._ids)}"

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        ctype = "application/octet-stream" if isinstance(payload, bytes) else "application/json"
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    @staticmethod
    def _body(handler: BaseHTTPRequestHandler) -> bytes:
        length = int(handler.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise ValueError("request body too large")
        return handler.rfile.read(length)

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        parts = h.path.split("?")[0].strip("/").split("/")
        if parts[:2] == ["v1", "batches"] and len(parts) == 3 and parts[2] in self.batches:
            return self._send(h, 200, self.batches[parts[2]])
        if (
            parts[:2] == ["v1", "files"]
            and len(parts) == 4
            and parts[3] == "content"
            and parts[2] in self.files
        ):
            return self._send(h, 200, self.files[parts[2]])
        self._forward(h, "GET", None)

    def _post(self, h: BaseHTTPRequestHandler) -> None:
        body = self._body(h)
        path = h.path.split("?")[0].rstrip("/")
        if path == "/v1/files":
            return self._upload(h, body)
        if path == "/v1/batches":
            return self._create(h, json.loads(body))
        self._forward(h, "POST", body)

    def _forward(self, h: BaseHTTPRequestHandler, method: str, body: bytes | None) -> None:
        self.direct_calls.append(h.path)
        headers = {
            k: v for k, v in h.headers.items() if k.lower() in ("authorization", "content-type")
        }
        r = httpx.request(
            method, self.upstream_root + h.path, content=body, headers=headers, timeout=120
        )
        h.send_response(r.status_code)
        h.send_header("Content-Type", r.headers.get("content-type", "application/json"))
        h.send_header("Content-Length", str(len(r.content)))
        h.end_headers()
        h.wfile.write(r.content)

    def _upload(self, h: BaseHTTPRequestHandler, body: bytes) -> None:
        head = f"Content-Type: {h.headers['Content-Type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        fields: dict[str, tuple[str | None, bytes]] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = (part.get_filename(), part.get_payload(decode=True) or b"")
        if "file" not in fields or fields.get("purpose", (None, b""))[1] != b"batch":
            return self._send(h, 400, {"error": {"message": "need file and purpose=batch"}})
        file_id = self._new_id("file")
        filename, data = fields["file"]
        self.files[file_id] = data
        self._send(
            h,
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": filename or "upload.jsonl",
                "purpose": "batch",
                "status": "processed",
            },
        )

    def _create(self, h: BaseHTTPRequestHandler, req: dict[str, Any]) -> None:
        file_id = req.get("input_file_id")
        if file_id not in self.files:
            return self._send(h, 400, {"error": {"message": f"unknown file {file_id}"}})
        batch_id = self._new_id("batch")
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": req.get("endpoint"),
            "input_file_id": file_id,
            "completion_window": req.get("completion_window", "24h"),
            "status": "in_progress",
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
        }
        self.batches[batch_id] = batch
        self.created.append(batch_id)
        auth = h.headers.get("Authorization")
        threading.Thread(target=self._work, args=(batch, auth), daemon=True).start()
        self._send(h, 200, batch)

    # -- the batch worker ---------------------------------------------------------------

    def _work(self, batch: dict[str, Any], auth: str | None) -> None:
        while self._hold.is_set():
            time.sleep(0.05)
        lines = self.files[batch["input_file_id"]].decode().splitlines()
        out, err = [], []
        headers = {"Authorization": auth} if auth else {}
        with httpx.Client(timeout=120) as client:
            for n, line in enumerate(x for x in lines if x.strip()):
                entry = json.loads(line)
                custom_id = entry["custom_id"]
                self.lines_seen.append(custom_id)
                if custom_id in self.fail_once:
                    self.fail_once.discard(custom_id)
                    status, body = 500, {"error": {"message": "injected failure in the batch"}}
                else:
                    r = client.post(
                        self.upstream_root + entry["url"], json=entry["body"], headers=headers
                    )
                    status, body = r.status_code, r.json()
                result = {
                    "id": f"batch_req_{n}",
                    "custom_id": custom_id,
                    "response": {"status_code": status, "request_id": f"req_{n}", "body": body},
                    "error": None,
                }
                (out if status == 200 else err).append(json.dumps(result))
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                file_id = self._new_id("file")
                self.files[file_id] = ("\n".join(rows) + "\n").encode()
                batch[name] = file_id
        batch["request_counts"] = {
            "total": len(out) + len(err),
            "completed": len(out),
            "failed": len(err),
        }
        batch["status"] = "completed"
