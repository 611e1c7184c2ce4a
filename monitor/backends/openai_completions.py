"""Per-token log-probabilities from an OpenAI-compatible ``/v1/completions`` server (vLLM).

This is how models too large for one machine are scored with the *same* CLL code as local
ones: the metric builds token-id sequences, this backend sends them to the server as token
id lists (so the server never re-tokenises text, and BOS is exactly where the metric put
it) and reads back the prompt log-probabilities. Why it looks the way it does:

* Tokenisation goes through the server (vLLM's ``/tokenize`` and ``/detokenize``), so
  the ids the metric builds are the served model's own; results are cached because the
  metrics ask for the same target words again and again.
* vLLM answers ``prompt_logprobs`` keyed by token id, which lets every returned position
  be checked against the id that was sent: a response that belongs to another prompt, or
  was cut short, can never be scored. Other servers get the portable ``echo`` +
  ``logprobs`` + ``max_tokens=0`` form, checked by length.
* Several prompts go in one request and a few requests run at once (bounded by
  ``ApiSettings.max_concurrency``); results are put back in input order, so they do not
  depend on which request finished first.
* Every response's reported model name, ``system_fingerprint`` and usage is kept in
  :attr:`OpenAICompletionsLM.requests`: the same requested name can be served by other
  weights over time, and the run stores what really answered (``monitor.jobs.local``).
* All HTTP goes through :meth:`OpenAICompletionsLM._call`, one small seam, with the
  ``openai`` SDK's retries (429 honouring ``Retry-After``, 5xx, timeouts, resets). A body
  that is not valid JSON is retried here, a fixed number of times, then reported.
* The API key is read from the environment and never logged or put into an error.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, Unpack

import numpy as np

from monitor import redaction
from monitor.backends.api_client import (
    DEFAULT_OPENAI_BASE_URL,
    ApiModelChanged,
    checked_url,
    public_url,
    server_message,
    split_query,
)
from monitor.backends.base import DedupedCausalLM, SequenceCounts, UniqueSequences
from monitor.errors import SnapshotUnavailable, UserInputError
from monitor.snapshots.model import ApiSettings, ApiSource, Snapshot

Progress = Callable[[int], None]
EventSink = Callable[[str], None]
Mode = Literal["prompt_logprobs", "echo"]

DEFAULT_BATCH_SIZE = 32  # prompts per request; short sentences, so requests stay small
_ENDPOINT = "/completions"

if TYPE_CHECKING:
    from monitor.backends.loading import LoadOptions


class ApiUnavailable(SnapshotUnavailable):
    """The server could not give a usable answer, even after retries."""


@dataclass(frozen=True)
class RequestRecord:
    """What one completions request asked and what came back (never prompt text)."""

    index: int
    n_prompts: int
    n_prompt_tokens: int
    model: str | None  # the name the server reported
    system_fingerprint: str | None
    usage: dict[str, Any] | None
    response_id: str | None
    request_id: str | None  # the server's x-request-id header, when given
    elapsed_s: float


@dataclass
class CompletionsStats(SequenceCounts):
    """What was really sent, for tests and throughput measurements: the shared counts,
    and the server's requests."""

    requests: int = 0
    tokenize_requests: int = 0
    malformed_responses: int = 0


def resolve_base_url(source: ApiSource) -> str:
    """The variable named by ``base_url_env`` when set, else ``base_url``, else the SDK's
    own default (``$OPENAI_BASE_URL`` or OpenAI)."""
    if source.base_url_env and os.environ.get(source.base_url_env):
        return checked_url(os.environ[source.base_url_env], f"${source.base_url_env}")
    if source.base_url:
        return checked_url(source.base_url, "source.base_url")
    return os.environ.get("OPENAI_BASE_URL", DEFAULT_OPENAI_BASE_URL).rstrip("/")


def resolve_api_key(snapshot_id: str, source: ApiSource) -> str:
    """The key from ``api_key_env``; a local vLLM accepts any value, so it gets "EMPTY"."""
    key = os.environ.get(source.api_key_env, "")
    if key:
        return key
    if source.provider == "vllm":
        return "EMPTY"
    raise SnapshotUnavailable(
        f"snapshot {snapshot_id}: set the environment variable {source.api_key_env} "
        "to the API key for this endpoint"
    )


class _Cancelled(Exception):
    """A chunk not started because another one already failed for good."""


class _Malformed(Exception):
    """A response body that cannot be scored (bad JSON, wrong shape). Retried."""


class OpenAICompletionsLM(DedupedCausalLM):
    """``monitor.backends.base.CausalLM`` over an OpenAI-compatible completions server."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        name: str,
        settings: ApiSettings | None = None,
        provider: str = "openai-compatible",
        mode: Mode | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        bos_token_id: int | None = None,
        on_event: EventSink | None = None,
    ) -> None:
        import openai

        self.settings = settings or ApiSettings(method="completions-cll")
        redaction.register_url(base_url)  # with its query: the secrets to redact
        self.base_url, query = split_query(base_url.rstrip("/"))
        self.model = model
        self.name = name
        self.provider = provider
        self.device = "api"
        self.dtype = "server"  # the server decides; its own record is in server_info
        self.mode: Mode = mode or ("prompt_logprobs" if provider == "vllm" else "echo")
        self.batch_size = batch_size
        self.stats = CompletionsStats()
        self.requests: list[RequestRecord] = []
        self.server_info: dict[str, Any] | None = None
        self.bos_source: str | None = "given" if bos_token_id is not None else None
        self._bos = bos_token_id
        self._bos_known = bos_token_id is not None
        self._key = api_key
        redaction.register(api_key)
        redaction.register_url(self.base_url)
        self._public = public_url(self.base_url)  # what messages name: no credentials
        self._emit = on_event or (lambda _msg: None)
        self._lock = threading.Lock()
        self._encode_cache: dict[tuple[str, bool], tuple[int, ...]] = {}
        self._decode_cache: dict[int, str] = {}
        # Server-side tokenizer routes sit at the root, beside /v1.
        self._root = self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url
        self._client = openai.OpenAI(
            api_key=api_key,
            base_url=self.base_url,
            timeout=self.settings.timeout_s,
            max_retries=self.settings.max_retries,
            default_query=query or None,
        )

    @classmethod
    def from_snapshot(
        cls, snapshot: Snapshot, *, on_event: EventSink | None = None, **kwargs: Any
    ) -> OpenAICompletionsLM:
        """Build from a validated ``openai-completions`` snapshot (key from the environment)."""
        src = snapshot.source
        if not isinstance(src, ApiSource):
            raise UserInputError(f"snapshot {snapshot.id} has no openai-api source")
        if src.provider == "azure":
            raise UserInputError(
                f"snapshot {snapshot.id}: provider azure is not supported for "
                "openai-completions; serve the model with vLLM or another OpenAI-compatible host"
            )
        settings = snapshot.api or ApiSettings(method="completions-cll")
        if settings.method != "completions-cll":
            raise UserInputError(
                f"snapshot {snapshot.id}: kind openai-completions needs "
                f'api.method = "completions-cll", not {settings.method!r}'
            )
        return cls(
            base_url=resolve_base_url(src),
            model=src.model,
            api_key=resolve_api_key(snapshot.id, src),
            name=snapshot.id,
            settings=settings,
            provider=src.provider,
            on_event=on_event,
            **kwargs,
        )

    def close(self) -> None:
        """Close the HTTP connection pool (the backend is unusable afterwards)."""
        self._client.close()

    def __repr__(self) -> str:  # no key, and no credentials of the URL
        return (
            f"OpenAICompletionsLM(name={self.name!r}, model={self.model!r}, "
            f"url={public_url(self.base_url)})"
        )

    # --- the CausalLM protocol -------------------------------------------------------

    @property
    def bos_token_id(self) -> int | None:
        """The tokenizer's BOS (else EOS) id, as ``HFCausalLM`` reports it.

        Read from vLLM's ``/tokenizer_info`` (needs ``--enable-tokenizer-info-endpoint``;
        ``scripts/vllm-serve`` sets it). Without it, a BOS the tokenizer *adds* is found
        by tokenising with and without special tokens; if neither works the id is
        unknowable here, and guessing would silently change what CLL measures.
        """
        if not self._bos_known:
            self._bos, self.bos_source = self._find_bos()
            self._bos_known = True
        return self._bos

    def encode(self, text: str, *, add_special_tokens: bool) -> list[int]:
        key = (text, bool(add_special_tokens))
        cached = self._encode_cache.get(key)
        if cached is None:
            body = {"model": self.model, "prompt": text, "add_special_tokens": key[1]}
            data = self._call_json("POST", "/tokenize", body)
            tokens = data.get("tokens") if isinstance(data, dict) else None
            if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
                raise ApiUnavailable(
                    f"snapshot {self.name}: {self._public} /tokenize answered without a token list"
                )
            cached = tuple(tokens)
            with self._lock:
                self._encode_cache[key] = cached
                self.stats.tokenize_requests += 1
        return list(cached)

    def decode_token(self, token_id: int) -> str:
        tid = int(token_id)
        if tid not in self._decode_cache:
            data = self._call_json("POST", "/detokenize", {"model": self.model, "tokens": [tid]})
            text = data.get("prompt") if isinstance(data, dict) else None
            if not isinstance(text, str):
                raise ApiUnavailable(
                    f"snapshot {self.name}: {self._public} /detokenize answered without text"
                )
            self._decode_cache[tid] = text
        return self._decode_cache[tid]

    def _answer(
        self, req: UniqueSequences, batch_size: int | None, progress: Progress | None
    ) -> None:
        """``token_logprobs``' unique sequences in chunks of ``batch_size`` prompts, a few
        requests at once; a chunk that fails for good stops the others and raises."""
        unique, results, todo = req.unique, req.results, req.todo
        size = max(1, batch_size or self.batch_size)
        chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
        self._check_budget(len(chunks))
        if self.server_info is None and chunks:
            self.server_info = self._fetch_server_info()

        stop = threading.Event()  # after one chunk fails for good, start no others
        with ThreadPoolExecutor(max_workers=max(1, self.settings.max_concurrency)) as pool:
            futures = {
                pool.submit(self._score_chunk, [unique[u] for u in c], stop): c for c in chunks
            }
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                if any(f.exception() is not None for f in done):
                    stop.set()
                    for f in pending:
                        f.cancel()
                    wait(pending)  # requests already on the wire finish (or fail) first
                    raise _first_failure(futures)
                for future in done:
                    members = futures[future]
                    for u, values in zip(members, future.result(), strict=True):
                        results[u] = values
                    if progress is not None:
                        progress(int(req.copies[members].sum()))

    # --- provenance --------------------------------------------------------------------

    def provenance(self) -> dict[str, Any]:
        """What answered this backend's requests, for the run record (no key, no text)."""
        with self._lock:
            records = list(self.requests)
        usage: dict[str, int] = {}
        for r in records:
            for k, v in (r.usage or {}).items():
                if isinstance(v, int):
                    usage[k] = usage.get(k, 0) + v
        return {
            "endpoint": public_url(f"{self.base_url}{_ENDPOINT}"),
            "provider": self.provider,
            "requested_model": self.model,
            "reported_models": sorted({r.model for r in records if r.model}),
            "system_fingerprints": sorted(
                {r.system_fingerprint for r in records if r.system_fingerprint}
            ),
            "mode": self.mode,
            "bos_token_id": self._bos,
            "bos_source": self.bos_source,
            "server_info": self.server_info,
            "requests": len(records),
            "usage": usage,
        }

    def request_log(self) -> list[dict[str, Any]]:
        """Every completions request as plain dicts, in the order they were answered."""
        with self._lock:
            return [asdict(r) for r in self.requests]

    # --- internals -----------------------------------------------------------------------

    def _check_budget(self, needed: int) -> None:
        budget = self.settings.request_budget
        if budget is not None and self.stats.requests + needed > budget:
            raise UserInputError(
                f"snapshot {self.name}: scoring needs {needed} more completions requests, "
                f"{self.stats.requests} were already made, and api.request_budget is {budget}"
            )

    def _request_body(self, prompts: list[tuple[int, ...]]) -> dict[str, Any]:
        body: dict[str, Any] = {"prompt": [list(p) for p in prompts], "temperature": 0.0}
        if self.mode == "prompt_logprobs":
            # vLLM: log-probs keyed by token id, so each position can be checked.
            body.update(max_tokens=1, extra_body={"prompt_logprobs": 0})
        else:
            body.update(echo=True, logprobs=0, max_tokens=0)
        return body

    def _score_chunk(
        self, prompts: list[tuple[int, ...]], stop: threading.Event
    ) -> list[np.ndarray]:
        if stop.is_set():
            raise _Cancelled
        try:
            return self._score_chunk_once(prompts)
        except BaseException:
            stop.set()
            raise

    def _score_chunk_once(self, prompts: list[tuple[int, ...]]) -> list[np.ndarray]:
        """One completions request for several prompts, retried while the body is bad."""
        attempts = max(1, self.settings.max_retries + 1)
        for attempt in range(attempts):
            started = time.perf_counter()
            data, headers = self._call_completions(self._request_body(prompts))
            try:
                values = self._parse_chunk(data, prompts)
            except _Malformed as exc:
                self._malformed(
                    attempt,
                    attempts,
                    f"{self._public}{_ENDPOINT} gave an unusable answer {attempts} times in a "
                    f"row ({exc})",
                    retrying=f"{self.name}: unusable completions answer ({exc}); retrying",
                )
                continue
            self._record(data, headers, prompts, time.perf_counter() - started)
            return values
        raise AssertionError("unreachable")

    def _parse_chunk(self, data: Any, prompts: list[tuple[int, ...]]) -> list[np.ndarray]:
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            raise _Malformed("no choices list")
        choices = sorted(data["choices"], key=lambda c: c.get("index", -1))
        if [c.get("index") for c in choices] != list(range(len(prompts))):
            raise _Malformed(f"{len(choices)} choices for {len(prompts)} prompts")
        parse = self._parse_prompt_logprobs if self.mode == "prompt_logprobs" else self._parse_echo
        return [parse(c, p) for c, p in zip(choices, prompts, strict=True)]

    @staticmethod
    def _parse_prompt_logprobs(choice: dict, prompt: tuple[int, ...]) -> np.ndarray:
        entries = choice.get("prompt_logprobs")
        if not isinstance(entries, list) or len(entries) != len(prompt):
            raise _Malformed("prompt_logprobs missing or of the wrong length")
        out = np.empty(len(prompt) - 1, dtype=np.float64)
        for i in range(1, len(prompt)):
            entry = entries[i]
            hit = entry.get(str(prompt[i])) if isinstance(entry, dict) else None
            if not isinstance(hit, dict) or not isinstance(hit.get("logprob"), int | float):
                raise _Malformed(f"position {i} carries no log-prob for the token sent")
            out[i - 1] = float(hit["logprob"])
        return out

    @staticmethod
    def _parse_echo(choice: dict, prompt: tuple[int, ...]) -> np.ndarray:
        lp = choice.get("logprobs")
        values = lp.get("token_logprobs") if isinstance(lp, dict) else None
        # A server that ignores max_tokens=0 appends generated tokens: keep the prompt's.
        if not isinstance(values, list) or len(values) < len(prompt):
            raise _Malformed("echoed token_logprobs missing or shorter than the prompt")
        scored = values[1 : len(prompt)]
        if not all(isinstance(v, int | float) for v in scored):
            raise _Malformed("a prompt position has no log-prob")
        return np.asarray(scored, dtype=np.float64)

    def _record(self, data: dict, headers: Any, prompts: list[tuple[int, ...]], elapsed: float):
        reported = data.get("model") if isinstance(data.get("model"), str) else None
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else None
        with self._lock:
            record = RequestRecord(
                index=len(self.requests),
                n_prompts=len(prompts),
                n_prompt_tokens=sum(len(p) for p in prompts),
                model=reported,
                system_fingerprint=data.get("system_fingerprint"),
                usage=usage,
                response_id=data.get("id"),
                request_id=headers.get("x-request-id") if headers is not None else None,
                elapsed_s=round(elapsed, 4),
            )
            first = next((r.model for r in self.requests if r.model), None)
            self.requests.append(record)
            self.stats.requests += 1
            self.stats.sequences_computed += len(prompts)
            self.stats.tokens_computed += record.n_prompt_tokens
        if first is not None and reported is not None and reported != first:
            raise ApiModelChanged(
                f"snapshot {self.name}: the server reported model {reported!r} after "
                f"{first!r} earlier in this run (requested {self.model!r}); refusing to "
                "mix scores from two models"
            )

    def _find_bos(self) -> tuple[int | None, str]:
        info = self._call_json("GET", "/tokenizer_info", None, missing_ok=True)
        if isinstance(info, dict):
            for field_name in ("bos_token", "eos_token"):
                token = info.get(field_name)
                if isinstance(token, dict):
                    token = token.get("content")
                if isinstance(token, str) and token:
                    ids = self.encode(token, add_special_tokens=False)
                    if len(ids) == 1:
                        return ids[0], f"tokenizer_info.{field_name}"
        with_special = self.encode("a", add_special_tokens=True)
        without = self.encode("a", add_special_tokens=False)
        if len(with_special) > len(without) and with_special[1:] == without:
            return with_special[0], "added by the tokenizer"
        raise ApiUnavailable(
            f"snapshot {self.name}: cannot tell the served model's BOS token; start vLLM "
            "with --enable-tokenizer-info-endpoint (scripts/vllm-serve does)"
        )

    def _fetch_server_info(self) -> dict[str, Any]:
        """The served model's entry in ``/v1/models`` (vLLM adds ``root``, the folder it
        serves, and ``max_model_len``); empty when the server does not list it."""
        data = self._call_json("GET", f"{self.base_url}/models", None, missing_ok=True)
        for entry in (data or {}).get("data", []) if isinstance(data, dict) else []:
            if isinstance(entry, dict) and entry.get("id") == self.model:
                keep = ("id", "owned_by", "root", "max_model_len")
                return {k: entry[k] for k in keep if k in entry}
        return {}

    # --- the HTTP seam: everything that talks to the server goes through here ----------

    def _call_completions(self, body: dict[str, Any]) -> tuple[Any, Any]:
        """POST /v1/completions with the SDK's retries; returns (parsed JSON or the raw
        text when it does not parse, response headers)."""
        extra = body.pop("extra_body", None)
        raw = self._guard(
            lambda: self._client.completions.with_raw_response.create(
                model=self.model, extra_body=extra, **body
            ),
            _ENDPOINT,
        )
        try:
            return json.loads(raw.text), raw.headers
        except ValueError:
            return raw.text, raw.headers  # _parse_chunk calls it malformed and retries

    def _call_json(
        self, method: str, path: str, body: dict | None, *, missing_ok: bool = False
    ) -> Any:
        """A JSON call outside the typed SDK (tokenizer routes, model list); relative
        paths are taken from the server root. Returns None for a 404 when ``missing_ok``."""
        import openai

        url = path if path.startswith("http") else f"{self._root}{path}"
        attempts = max(1, self.settings.max_retries + 1)
        for attempt in range(attempts):
            try:
                if method == "GET":
                    text = self._guard(lambda: self._client.get(url, cast_to=str), path)
                else:
                    text = self._guard(lambda: self._client.post(url, cast_to=str, body=body), path)
            except ApiUnavailable as exc:
                if missing_ok and isinstance(exc.__cause__, openai.NotFoundError):
                    return None
                raise
            try:
                return json.loads(text)
            except ValueError:
                self._malformed(
                    attempt,
                    attempts,
                    f"{public_url(url)} answered with malformed JSON {attempts} times in a row",
                )
        raise AssertionError("unreachable")

    def _malformed(
        self, attempt: int, attempts: int, given_up: str, *, retrying: str | None = None
    ) -> None:
        """A malformed answer, counted: after the last of ``attempts`` the snapshot is
        unavailable (``given_up`` says why); before it, ``retrying`` is said and the next
        attempt waits (0.5 s doubling, at most 8 s)."""
        with self._lock:
            self.stats.malformed_responses += 1
        if attempt + 1 >= attempts:
            raise ApiUnavailable(f"snapshot {self.name}: {given_up}") from None
        if retrying is not None:
            self._emit(retrying)
        time.sleep(min(8.0, 0.5 * 2**attempt))

    def _guard(self, call: Callable[[], Any], what: str) -> Any:
        """Run an SDK call; turn its exceptions into one-line errors without the key."""
        import openai

        try:
            return call()
        except openai.APIStatusError as exc:
            code = exc.status_code
            retried = code in (408, 409, 429) or code >= 500
            after = f" after {self.settings.max_retries} retries" if retried else ""
            raise ApiUnavailable(
                self._scrub(
                    f"snapshot {self.name}: {what} failed with HTTP {code}{after}: "
                    f"{server_message(exc, sdk_text=False)}"
                )
            ) from exc
        except openai.APIConnectionError as exc:  # includes timeouts
            kind = "timed out" if isinstance(exc, openai.APITimeoutError) else "could not connect"
            raise ApiUnavailable(
                self._scrub(
                    f"snapshot {self.name}: {what} at {self._public} {kind} "
                    f"after {self.settings.max_retries} retries"
                )
            ) from exc

    @staticmethod
    def _scrub(text: str) -> str:
        return redaction.redact(text)


def load_completions_lm(snapshot: Snapshot, **options: Unpack[LoadOptions]) -> OpenAICompletionsLM:
    """The backend of kind ``openai-completions``. The server decides device and dtype and
    holds the weights, so those options are accepted (one loader signature for every
    log-prob kind) and ignored; an explicit device other than ``auto`` is refused."""
    device = options.get("device", "auto")
    if device not in ("auto", "api"):
        raise UserInputError(
            f"snapshot {snapshot.id} is scored by a server; --device {device} does not apply"
        )
    return OpenAICompletionsLM.from_snapshot(snapshot, on_event=options.get("on_event"))


def _first_failure(futures: dict) -> BaseException:
    """The first real error among finished chunks (not a sibling's cancellation)."""
    errors = [f.exception() for f in futures if f.done() and not f.cancelled() and f.exception()]
    real = [e for e in errors if not isinstance(e, _Cancelled)]
    return (real or errors)[0]


__all__ = [
    "ApiUnavailable",
    "CompletionsStats",
    "OpenAICompletionsLM",
    "RequestRecord",
    "load_completions_lm",
    "resolve_api_key",
    "resolve_base_url",
]
