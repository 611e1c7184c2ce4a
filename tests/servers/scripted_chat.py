"""A real HTTP server on 127.0.0.1 that speaks OpenAI's Chat Completions and Responses
protocol and answers as a test's policy says.

The vLLM server (``servers.vllm``) answers with a real model, which is what parity and
reference tests need, at the price of a vLLM install and a minute of warm-up; and a real
small model answers a lettered question however it likes, so a test cannot say in
advance which letter it will read. This server is the wire without the model: the
``openai`` SDK, the retry layer, the start-of-run probe, the stored requests and the run
lifecycle all run for real against it, and the test decides each answer from the
prompt it receives (``Policy``), so the letter a test expects is known.

What it serves: ``POST /v1/chat/completions`` and ``POST /v1/responses``, with
``logprobs``/``top_logprobs`` (Chat) or ``include: message.output_text.logprobs``
(Responses) giving each generated token's top alternatives. ``logprobs=False`` makes it
behave like OpenAI's reasoning models: any request asking for log-probabilities is
refused with HTTP 400 "Unsupported parameter: 'logprobs' ...". ``outage_after = n``
answers every question after the first n with HTTP 503, as a server going down mid-run
would (set it back to None to recover). Every request body with its path and the status
it got (``_path``, ``_status``), and its ``Authorization`` header, are kept
(``requests``, ``authorization``) for the test to check; nothing is echoed back.
Loopback only, bounded bodies, daemon threads.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from servers.loopback import LoopbackServer

MAX_BODY_BYTES = 1024 * 1024
MODEL = "scripted-chat-1"


@dataclass(frozen=True)
class Reply:
    """One answer: its text, split into tokens, and the top alternatives (token,
    probability) at each token position (``top[i]`` for token i; missing positions list
    only the token itself with probability 1)."""

    tokens: tuple[str, ...]
    top: tuple[tuple[tuple[str, float], ...], ...] = ()

    @property
    def text(self) -> str:
        return "".join(self.tokens)


# prompt, the request body -> the answer
Policy = Callable[[str, dict[str, Any]], Reply]

# The start-of-run probe's question (``monitor.backends.openai_chat.PROBE_PROMPT``) is
# answered here, so a policy only answers the benchmark's prompts.
PROBE_PROMPT = "Reply with one word: what colour is a clear daytime sky?"
PROBE_REPLY = Reply(("Blue",), ((("Blue", 0.9), ("blue", 0.05), ("Light", 0.05)),))


@dataclass
class ScriptedChat:
    """``with ScriptedChat(policy) as srv: srv.base_url``."""

    policy: Policy
    logprobs: bool = True
    model: str = MODEL
    outage_after: int | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorization: list[str] = field(default_factory=list)
    answered: int = 0  # questions answered with 200, the probe not counted
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._server = LoopbackServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_port
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedChat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def prompts(self, path: str = "/v1/chat/completions", status: int = 200) -> list[str]:
        """The user prompts answered with ``status`` on ``path``, in answer order."""
        out = []
        for body in self.requests:
            if body["_path"] != path or body["_status"] != status:
                continue
            if "messages" in body:
                out.append(body["messages"][-1]["content"])
            else:
                out.append(body["input"])
        return out

    # -- answers --------------------------------------------------------------------

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        chat = path.endswith("/chat/completions")
        wants = bool(body.get("logprobs")) if chat else bool(body.get("top_logprobs"))
        if wants and not self.logprobs:
            message = (
                "Unsupported parameter: 'logprobs' is not supported with this model."
                if chat
                else "Unsupported parameter: 'top_logprobs' is not supported with this model."
            )
            return 400, {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": "logprobs",
                    "code": "unsupported_parameter",
                }
            }
        prompt = body["messages"][-1]["content"] if chat else body["input"]
        if prompt != PROBE_PROMPT:
            with self._lock:
                if self.outage_after is not None and self.answered >= self.outage_after:
                    return 503, {"error": {"message": "The server is overloaded."}}
                self.answered += 1
        reply = PROBE_REPLY if prompt == PROBE_PROMPT else self.policy(prompt, body)
        k = int(body.get("top_logprobs") or 0)
        entries = []
        for i, token in enumerate(reply.tokens):
            top = reply.top[i] if i < len(reply.top) else ((token, 1.0),)
            alts = [
                {"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
                for t, p in sorted(top, key=lambda tp: -tp[1])[:k]
            ]
            chosen = dict(top).get(token, 1.0)
            entries.append(
                {
                    "token": token,
                    "logprob": math.log(chosen),
                    "bytes": list(token.encode()),
                    "top_logprobs": alts,
                }
            )
        n_in, n_out = len(prompt.split()), len(reply.tokens)
        if chat:
            return 200, {
                "id": f"chatcmpl-{self.answered}",
                "object": "chat.completion",
                "created": 0,
                "model": self.model,
                "system_fingerprint": "fp_scripted",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.text},
                        "logprobs": {"content": entries} if wants else None,
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": n_in,
                    "completion_tokens": n_out,
                    "total_tokens": n_in + n_out,
                },
            }
        part: dict[str, Any] = {"type": "output_text", "text": reply.text, "annotations": []}
        if wants:
            part["logprobs"] = entries
        return 200, {
            "id": f"resp_{self.answered}",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": self.model,
            "output": [
                {
                    "type": "message",
                    "id": f"msg_{self.answered}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [part],
                }
            ],
            "usage": {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: object) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, {"object": "list", "data": [{"id": server.model}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length > MAX_BODY_BYTES:
                    self._send(413, {"error": {"message": "body too large"}})
                    return
                path = self.path.split("?", 1)[0]
                if path not in ("/v1/chat/completions", "/v1/responses"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = server._answer(path, body)
                with server._lock:
                    server.requests.append({**body, "_path": path, "_status": status})
                    server.authorization.append(self.headers.get("authorization", ""))
                self._send(status, payload)

        return Handler
