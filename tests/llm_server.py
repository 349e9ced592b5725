"""A scripted OpenAI-compatible server on 127.0.0.1 for tests: real HTTP for the real ``openai`` client.

``ScriptedLLMServer`` answers ``POST /v1/chat/completions`` with valid verdicts for the indices on
the last user message's ``INDICES: [...]`` line (labels from a pluggable ``labeler``), and
``POST /v1/embeddings`` with deterministic vectors. ``enqueue`` scripts the next replies with
faults: ``"429"``, ``"500"``, ``"slow"``, ``"invalid_json"``, ``"fenced"``, ``"wrong_count"``,
``"truncated"``, ``"reject_response_format"``, ``"broken_body"``, or the objects below for custom
settings.

    with ScriptedLLMServer(latency_s=0.01) as server:
        server.enqueue("429", Slow(seconds=0.5))
        client = JudgeClient(base_url=server.base_url, api_key="test", model="m")

Each fault is consumed by the next request to either endpoint. On embeddings, the status faults,
``slow`` and ``broken_body`` apply, ``invalid_json`` and ``truncated`` give a broken body, the
others a normal one.

Like a provider, the server may also check who asks and for what, before any fault: with
``api_key`` set, a request without ``Authorization: Bearer <api_key>`` gets OpenAI's 401
(``invalid_api_key``); with ``models`` set, a request for another model gets OpenAI's 404
(``model_not_found``), and ``GET /v1/models`` lists them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

# The line a judge prompt ends with (evaluation.judge.prompts.indices_line), as a server reads it.
INDICES_PATTERN = re.compile(r"^INDICES: (\[[0-9, ]*\])[ \t]*$", re.MULTILINE)
EMBEDDING_DIMENSIONS = 16


@dataclass(frozen=True)
class RateLimited:
    """429 with ``Retry-After: retry_after_s`` seconds (the server's default when None), or no header."""

    retry_after_s: float | None = None
    with_header: bool = True
    name = "429"


@dataclass(frozen=True)
class ServerError:
    status: int = 500
    name = "500"


@dataclass(frozen=True)
class Slow:
    """Wait ``seconds`` (the server's ``slow_s`` when None) before a normal reply."""

    seconds: float | None = None
    name = "slow"


@dataclass(frozen=True)
class InvalidJSON:
    name = "invalid_json"


@dataclass(frozen=True)
class Fenced:
    name = "fenced"


@dataclass(frozen=True)
class WrongCount:
    name = "wrong_count"


@dataclass(frozen=True)
class Truncated:
    name = "truncated"


@dataclass(frozen=True)
class BrokenBody:
    """A 200 whose body is not JSON (a proxy's error page, a body cut in transit)."""

    name = "broken_body"


@dataclass(frozen=True)
class RejectResponseFormat:
    """400 when the request carries ``response_format``; a normal reply otherwise."""

    name = "reject_response_format"


@dataclass(frozen=True)
class Reply:
    """A 200 with this exact assistant content."""

    content: str
    finish_reason: str = "stop"
    name = "reply"


@dataclass(frozen=True)
class Status:
    """Any HTTP error status with an OpenAI-shaped error body."""

    status: int
    message: str = "scripted error"
    code: str | None = None
    name = "status"


Fault = (
    RateLimited
    | ServerError
    | Slow
    | InvalidJSON
    | Fenced
    | WrongCount
    | Truncated
    | BrokenBody
    | RejectResponseFormat
    | Reply
    | Status
)

_BY_NAME: dict[str, Callable[[], object]] = {
    "429": RateLimited,
    "500": ServerError,
    "slow": Slow,
    "invalid_json": InvalidJSON,
    "fenced": Fenced,
    "wrong_count": WrongCount,
    "truncated": Truncated,
    "reject_response_format": RejectResponseFormat,
    "broken_body": BrokenBody,
}


@dataclass(frozen=True)
class RecordedCall:
    path: str
    body: dict
    headers: dict[str, str]
    received_at: float  # time.monotonic()
    fault: str | None


def fake_embedding(text: str) -> list[float]:
    """The server's deterministic unit vector for ``text`` (16 floats from its SHA-256)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    values = [(digest[2 * i] * 256 + digest[2 * i + 1]) / 32767.5 - 1.0 for i in range(EMBEDDING_DIMENSIONS)]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def default_labeler(index: int, request: dict) -> int:
    """Every verdict is 1."""
    return 1


def default_confidence(index: int, request: dict) -> float:
    """The probability the scripted model gives each label it writes."""
    return 0.9


_TOKEN = re.compile(r"\d|\w+|\s+|.", re.DOTALL)


def token_logprobs(
    content: str, *, labels: list[tuple[int, float]], values: tuple[int, ...] = (0, 1)
) -> dict:
    """The ``logprobs`` of a choice whose reply is ``content``, as OpenAI-compatible servers give
    them: one entry per token (digits are tokens of their own), each with its alternatives. The
    token after each ``"label":`` (in order) is ``labels[n]``'s value with its probability, the
    rest of the probability spread over the other values; every other token is certain."""
    tokens = _TOKEN.findall(content)
    entries, text, labelled = [], "", 0
    for token in tokens:
        if token.isdigit() and re.search(r'"label"\s*:\s*"?$', text) and labelled < len(labels):
            value, probability = labels[labelled]
            labelled += 1
            others = [v for v in values if v != value]
            alternatives = [{"token": token, "logprob": math.log(probability)}] + [
                {"token": str(v), "logprob": math.log((1 - probability) / len(others))}
                for v in others
                if probability < 1
            ]
            entries.append({"token": token, "logprob": math.log(probability), "top_logprobs": alternatives})
        else:
            entries.append(
                {"token": token, "logprob": 0.0, "top_logprobs": [{"token": token, "logprob": 0.0}]}
            )
        text += token
    return {"content": entries}


def expected_indices(request: dict) -> list[int]:
    """Indices on the ``INDICES: [...]`` line of the request's last user message ([0] without one)."""
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    if not isinstance(content, str):
        content = json.dumps(content)
    return find_indices(content) or [0]


def find_indices(text: str) -> list[int] | None:
    """The indices of the last ``INDICES: [...]`` line in ``text``, or None when there is none."""
    matches = INDICES_PATTERN.findall(text)
    return [int(i) for i in json.loads(matches[-1])] if matches else None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Joining handler threads on close would wait for every "slow" reply.
    block_on_close = False
    request_queue_size = 1024
    allow_reuse_address = True
    script: ScriptedLLMServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the client's delayed ACK adds ~40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer
    timeout = 30

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            script = self.server.script
            if script._refuses_key(self):
                return
            names = script.models if script.models is not None else (script.model,)
            self.send_json(
                200,
                {
                    "object": "list",
                    "data": [{"id": name, "object": "model", "owned_by": "test"} for name in names],
                },
            )
        else:
            self.send_json(404, _error("not found", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self.send_json(400, _error("body is not JSON", "invalid_request_error"))
            return
        self.server.script._serve(self, body)

    def send_json(self, status: int, payload: object, *, headers: dict[str, str] | None = None) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            # The client gave up (a timeout): nothing to answer to.
            self.close_connection = True


def _error(message: str, kind: str, *, param: str | None = None, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class ScriptedLLMServer:
    """An OpenAI-compatible server in a background thread, scripted by ``enqueue``; a context manager."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        labeler: Callable[[int, dict], int] = default_labeler,
        confidence: Callable[[int, dict], float] = default_confidence,
        sample_labeler: Callable[[int, dict, int], int] | None = None,
        retry_after_s: float = 0.05,
        slow_s: float = 1.0,
        reject_response_format: bool = False,
        model: str = "scripted-judge",
        api_key: str | None = None,
        models: tuple[str, ...] | None = None,
    ) -> None:
        """``api_key``: the only key the server accepts (any, when None); ``models``: the only
        models it serves (any, when None)."""
        self.latency_s = latency_s
        self.labeler = labeler
        self.confidence = confidence
        self.sample_labeler = sample_labeler or (lambda index, body, choice: labeler(index, body))
        self.retry_after_s = retry_after_s
        self.slow_s = slow_s
        self.reject_response_format = reject_response_format
        self.model = model
        self.api_key = api_key
        self.models = models
        self._lock = threading.Lock()
        self._faults: deque[object] = deque()
        self._calls: list[RecordedCall] = []
        self._in_flight = 0
        self._max_in_flight = 0
        self._served_prompt_tokens = 0
        self._served_completion_tokens = 0
        self._serial = 0
        self._closing = threading.Event()
        # Set: replies go out. Cleared by hold(): requests from the serial _held_from on then wait
        # (in flight) until release().
        self._gate = threading.Event()
        self._gate.set()
        self._held_from = 1
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ScriptedLLMServer:
        """Listen on 127.0.0.1 on a free port and serve in a daemon thread."""
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.script = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; replies still waiting (latency, ``slow``, held) are released at once."""
        self._closing.set()
        self._gate.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def hold(self, *, from_request: int | None = None) -> None:
        """Hold replies back: from now on, or from the ``from_request``-th request (1-based) on.
        Held requests arrive and count as in flight; none returns until :meth:`release`. A test
        can then act while calls are certainly mid-flight."""
        with self._lock:
            self._held_from = self._serial + 1 if from_request is None else from_request
        self._gate.clear()

    def release(self) -> None:
        """Let the held replies (and all later ones) go out."""
        self._gate.set()

    # -- script and records ------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def enqueue(self, *faults: str | Fault) -> None:
        """Script the next replies, one fault per request, in order; then the default replies."""
        resolved = []
        for fault in faults:
            if isinstance(fault, str):
                if fault not in _BY_NAME:
                    raise ValueError(f"unknown fault {fault!r}; known: {', '.join(_BY_NAME)}")
                fault = _BY_NAME[fault]()
            resolved.append(fault)
        with self._lock:
            self._faults.extend(resolved)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    @property
    def calls(self) -> list[RecordedCall]:
        """Every request received, in arrival order."""
        with self._lock:
            return list(self._calls)

    @property
    def requests(self) -> list[dict]:
        """The JSON bodies of every request received, in arrival order."""
        return [call.body for call in self.calls]

    @property
    def served_tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens of every chat completion the server generated, counted when
        the reply is written, whether or not the client is still there to read it (a provider
        bills a reply its client gave up on)."""
        with self._lock:
            return self._served_prompt_tokens, self._served_completion_tokens

    @property
    def in_flight(self) -> int:
        """Requests being answered now."""
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        """The most requests ever being answered at the same time."""
        with self._lock:
            return self._max_in_flight

    # -- serving -----------------------------------------------------------------------------

    def _serve(self, handler: _Handler, body: dict) -> None:
        path = handler.path.split("?")[0].rstrip("/")
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
            self._calls.append(
                RecordedCall(
                    path=path,
                    body=body,
                    headers={k.lower(): v for k, v in handler.headers.items()},
                    received_at=time.monotonic(),
                    fault=getattr(fault, "name", None),
                )
            )
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            self._serial += 1
            serial = self._serial
        try:
            if self.latency_s:
                self._closing.wait(self.latency_s)
            if serial >= self._held_from:
                self._gate.wait()
            if self._refuses_key(handler) or self._refuses_model(handler, body):
                return
            if path == "/v1/chat/completions":
                self._chat(handler, body, fault, serial)
            elif path == "/v1/embeddings":
                self._embeddings(handler, body, fault)
            else:
                handler.send_json(404, _error(f"no route {path}", "not_found"))
        finally:
            with self._lock:
                self._in_flight -= 1

    def _refuses_key(self, handler: _Handler) -> bool:
        """Answer OpenAI's 401 when the request does not carry the one key accepted."""
        if self.api_key is None or handler.headers.get("Authorization") == f"Bearer {self.api_key}":
            return False
        sent = (handler.headers.get("Authorization") or "").removeprefix("Bearer ")
        handler.send_json(
            401,
            _error(
                f"Incorrect API key provided: {sent[:3]}***. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                code="invalid_api_key",
            ),
        )
        return True

    def _refuses_model(self, handler: _Handler, body: dict) -> bool:
        """Answer OpenAI's 404 when the request asks for a model the server does not serve."""
        model = body.get("model")
        if self.models is None or model in self.models:
            return False
        handler.send_json(
            404,
            _error(
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                code="model_not_found",
            ),
        )
        return True

    def _status_fault(self, handler: _Handler, fault: object) -> bool:
        if isinstance(fault, RateLimited):
            seconds = self.retry_after_s if fault.retry_after_s is None else fault.retry_after_s
            headers = {"Retry-After": f"{seconds:g}"} if fault.with_header else {}
            handler.send_json(
                429, _error("Rate limit reached", "requests", code="rate_limit_exceeded"), headers=headers
            )
            return True
        if isinstance(fault, ServerError):
            handler.send_json(fault.status, _error("The server had an error", "server_error"))
            return True
        if isinstance(fault, Status):
            handler.send_json(fault.status, _error(fault.message, "invalid_request_error", code=fault.code))
            return True
        if isinstance(fault, BrokenBody):
            handler.send_json(200, b"<html><body>502 Bad Gateway</body></html>")
            return True
        if isinstance(fault, Slow):
            self._closing.wait(self.slow_s if fault.seconds is None else fault.seconds)
        return False

    def _chat(self, handler: _Handler, body: dict, fault: object, serial: int) -> None:
        if self._status_fault(handler, fault):
            return
        if "response_format" in body and (
            self.reject_response_format or isinstance(fault, RejectResponseFormat)
        ):
            handler.send_json(
                400,
                _error(
                    "Invalid parameter: 'response_format' is not supported with this model.",
                    "invalid_request_error",
                    param="response_format",
                ),
            )
            return
        indices = expected_indices(body)
        system = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "system"), "")
        verbal = '"confidence"' in str(system)  # a judge asked for its confidence in words

        def verdicts_of(choice: int) -> list[dict]:
            found = []
            for i in indices:
                value = self.labeler(i, body) if choice == 0 else self.sample_labeler(i, body, choice)
                verdict = {
                    "index": i,
                    "reasoning": f"Phrase {i} : informations vérifiées dans les sources citées.",
                    "label": int(value),
                }
                if verbal:
                    verdict["confidence"] = round(self.confidence(i, body), 4)
                found.append(verdict)
            return found

        # ``n`` choices (sampled verdicts): the first from ``labeler``, the others from
        # ``sample_labeler``; faults shape the first only.
        samples = [verdicts_of(choice) for choice in range(max(1, int(body.get("n") or 1)))]
        verdicts = samples[0]
        document = json.dumps({"verdicts": verdicts}, ensure_ascii=False)
        finish_reason = "stop"
        if isinstance(fault, InvalidJSON):
            content = "Toutes les phrases me semblent exactes, label 1 partout."
        elif isinstance(fault, Fenced):
            content = f"Voici mes verdicts :\n```json\n{document}\n```\nJ'espère que cela aide."
        elif isinstance(fault, WrongCount):
            content = json.dumps({"verdicts": verdicts[:-1]}, ensure_ascii=False)
        elif isinstance(fault, Truncated):
            content, finish_reason = document[: max(1, len(document) // 2)], "length"
        elif isinstance(fault, Reply):
            content, finish_reason = fault.content, fault.finish_reason
        else:
            content = document
        contents = [content] + [json.dumps({"verdicts": v}, ensure_ascii=False) for v in samples[1:]]
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        prompt_tokens = max(1, prompt_chars // 4)
        completion_tokens = sum(max(1, len(text) // 4) for text in contents)
        with self._lock:
            self._served_prompt_tokens += prompt_tokens
            self._served_completion_tokens += completion_tokens
        handler.send_json(
            200,
            {
                "id": f"chatcmpl-scripted-{serial}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", self.model),
                "choices": [
                    {
                        "index": number,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": finish_reason if number == 0 else "stop",
                        "logprobs": token_logprobs(
                            text,
                            labels=[(v["label"], self.confidence(v["index"], body)) for v in samples[number]],
                        )
                        if body.get("logprobs")
                        else None,
                    }
                    for number, text in enumerate(contents)
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            },
        )

    def _embeddings(self, handler: _Handler, body: dict, fault: object) -> None:
        if self._status_fault(handler, fault):
            return
        inputs = body.get("input", [])
        texts = (
            [inputs]
            if isinstance(inputs, str)
            else [i if isinstance(i, str) else json.dumps(i) for i in inputs]
        )
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text)
            if as_base64:
                encoded: object = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = max(1, sum(len(t) for t in texts) // 4)
        payload = json.dumps(
            {
                "object": "list",
                "data": data,
                "model": body.get("model", self.model),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        ).encode("utf-8")
        if isinstance(fault, InvalidJSON):
            payload = b"<html>upstream error</html>"
        elif isinstance(fault, Truncated):
            payload = payload[: len(payload) // 2]
        handler.send_json(200, payload)


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    """A started ``ScriptedLLMServer`` with default settings, stopped after the test."""
    with ScriptedLLMServer() as server:
        yield server
