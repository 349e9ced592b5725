"""The one module that talks to OpenAI-compatible servers (OpenAI, Azure OpenAI, vLLM, Ollama,
llama.cpp server), through the official ``openai`` SDK: chat completions for the LLM judge
(``evaluation.judge.client`` adds its prompts' JSON schema, token budget and prices) and
embeddings for the stratified sample (``annotation.sampling.embeddings`` turns them into unit vectors).

One retry policy for every request (``RetryPolicy``): up to ``max_attempts`` HTTP requests, with
exponential backoff and full jitter between them, or the server's ``Retry-After`` when it gives
one, both capped by ``backoff_max_s``. Retried, then raised as ``TransientError``: 408, 409, 429
(but not an exhausted quota), 5xx, timeouts, connection errors and a reply whose body is not JSON.
Anything else raises ``PermanentError`` at once.

The SDK's own retries are off (``max_retries=0``) and this loop replaces them: the SDK retries
inside one call, where nobody can record each request before it is sent (the judge's accounting
of every paid token) or check a token budget between attempts; it retries an exhausted quota's
429, gives up on a body that is not JSON, and its waits cannot be shortened for tests.

A ``Client`` is safe to share between threads.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

import openai

logger = logging.getLogger(__name__)

T = TypeVar("T")

# 408 and 409 (a lock timeout) are the server's own transient conditions; 429 too, unless the
# quota is exhausted; everything else below 500 is the request's fault.
_TRANSIENT_STATUSES = frozenset({408, 409, 429})
_MESSAGE_LIMIT = 500


# How a call failed, for a caller that tells its reader what to fix (``ServiceError.kind``).
REFUSED = "refused"  # the server answered with an error status (``ServiceError.status``)
TIMEOUT = "timeout"  # no reply within the timeout
UNREACHABLE = "unreachable"  # no connection (refused, no route, a name that does not resolve)
UNREADABLE = "unreadable"  # a reply that could not be read or used
SETUP = "setup"  # the client could not be configured; nothing was sent


class ServiceError(Exception):
    """Any failure to get a usable reply from the server.

    ``kind`` says how it failed (``REFUSED``, ``TIMEOUT``, ``UNREACHABLE``, ``UNREADABLE``,
    ``SETUP``); for a refusal, ``status`` is the HTTP status, ``code`` the server's error code
    (such as ``model_not_found``, ``invalid_api_key``) and ``detail`` its message, cut short.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = UNREADABLE,
        status: int | None = None,
        code: str | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.code = code
        self.detail = detail


class TransientError(ServiceError):
    """The server was overloaded or unreachable on every attempt (429, 5xx, timeouts, network)."""


class PermanentError(ServiceError):
    """The server refused the request (bad request, authentication, unknown model, no quota) or
    answered something unusable; trying again will not help."""


@dataclass(frozen=True)
class RetryPolicy:
    """How many HTTP requests one call may send, and how long to wait between them."""

    max_attempts: int = 5
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.backoff_base_s < 0 or self.backoff_max_s < 0:
            raise ValueError("backoff delays must be >= 0")

    def backoff_s(self, *, failures: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after ``failures`` consecutive transient failures.

        The server's ``Retry-After`` when it gave one, else full jitter: uniform between 0 and
        ``backoff_base_s * 2 ** (failures - 1)``; both capped by ``backoff_max_s``.
        """
        if retry_after_s is not None:
            return min(retry_after_s, self.backoff_max_s)
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** max(0, failures - 1))
        return random.uniform(0, ceiling)


class CallLog(Protocol):
    """Where a call records each HTTP request before sending it, and how it ended when no usable
    reply came back (the caller records the usage of the replies it gets)."""

    def sent(self) -> int:
        """Record a request about to be sent; its id."""
        ...

    def refused(self, call_id: int, *, error: str) -> None:
        """The server answered with an error status: nothing was generated, nothing billed."""
        ...

    def lost(self, call_id: int, *, error: str) -> None:
        """No reply came back (timeout, broken connection, unreadable body): the server may have
        generated and billed one."""
        ...


@dataclass(frozen=True)
class ChatReply:
    content: str
    # None when the server gave no usage.
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    # The server's response as JSON-able data, for audit.
    raw: dict
    # HTTP requests sent, the successful one included.
    attempts: int
    # The id the call log gave the request that got this reply (None without a log).
    call_id: int | None


def _short(text: object) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."


def _retry_after_s(exc: openai.APIStatusError) -> float | None:
    headers = exc.response.headers
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
        if seconds >= 0:
            return seconds
    return None


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict) and body.get("message"):
        return _short(body["message"])
    return _short(exc.message)


def _error_code(exc: openai.APIStatusError) -> str | None:
    code = exc.code
    return code if isinstance(code, str) and code else None


def _connection_cause(exc: openai.APIConnectionError) -> str:
    """What broke the connection, as the network said it (``Connection refused``, a name that
    does not resolve), rather than the SDK's "Connection error."."""
    cause: BaseException | None = exc.__cause__ or exc.__context__
    while cause is not None and (cause.__cause__ or cause.__context__) is not None:
        cause = cause.__cause__ or cause.__context__
    return _short(cause) if cause is not None and str(cause) else _short(exc)


def _is_transient(exc: openai.APIStatusError) -> bool:
    if exc.status_code == 429 and exc.code == "insufficient_quota":
        return False
    return exc.status_code in _TRANSIENT_STATUSES or exc.status_code >= 500


def _mentions(exc: openai.APIStatusError, parameter: str) -> bool:
    return exc.status_code in (400, 422) and parameter in f"{exc.message} {exc.body}"


_SHARED: dict[tuple, openai.OpenAI] = {}
_SHARED_LOCK = threading.Lock()


def _sdk_client(
    *, base_url: str | None, api_key: str | None, timeout_s: float, shared: bool
) -> openai.OpenAI:
    if not shared:
        return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
    # Building an SDK client loads the CA bundle (~0.2 s): once per process and server, not once
    # per task. The process id is in the key because a forked child must not reuse its parent's
    # connections.
    key = (os.getpid(), base_url, api_key, timeout_s)
    with _SHARED_LOCK:
        client = _SHARED.get(key)
        if client is None:
            client = _SHARED[key] = openai.OpenAI(
                base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0
            )
        return client


def _chat_reply(response: object, *, name: str, attempts: int, call_id: int | None) -> ChatReply:
    """The reply of a chat completion from its JSON body (as the SDK's ``ChatCompletion`` would
    read it: absent fields are None); ``PermanentError`` for a reply without a choice."""
    choices = response.get("choices") if isinstance(response, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(response, dict) or not isinstance(choice, dict):
        raise PermanentError(f"{name} server returned no choice: {_short(response)}")
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    usage = response.get("usage")
    if not isinstance(usage, dict):
        usage = None
    finish_reason = choice.get("finish_reason")
    return ChatReply(
        content=content if isinstance(content, str) else "",
        prompt_tokens=None if usage is None else _count(usage.get("prompt_tokens")),
        completion_tokens=None if usage is None else _count(usage.get("completion_tokens")),
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        raw=response,
        attempts=attempts,
        call_id=call_id,
    )


def _count(value: object) -> int:
    """A token count from a reply's usage: 0 when absent or not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class Client:
    """One OpenAI-compatible server: the SDK's client (its connection pool) and the retry policy.

    ``name`` says which server messages speak of ("LLM", "embedding"). ``shared``: use this
    process's connection pool to the server, kept open across clients. ``sleep`` waits between
    attempts (tests pass their own).
    """

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout_s: float = 60.0,
        policy: RetryPolicy | None = None,
        name: str = "LLM",
        shared: bool = False,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        self.name = name
        self.timeout_s = timeout_s
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._shared = shared
        self._lock = threading.Lock()
        # Optional parameters a server may refuse: sent until it does, then left out.
        self._refused: set[str] = set()
        try:
            self._openai = _sdk_client(base_url=base_url, api_key=api_key, timeout_s=timeout_s, shared=shared)
        except openai.OpenAIError as exc:
            raise PermanentError(
                f"cannot configure the {name} client: {_short(exc)}", kind=SETUP, detail=_short(exc)
            ) from exc

    @property
    def base_url(self) -> str:
        """The server's address as requests go to it (the SDK's default when none was given)."""
        return str(self._openai.base_url).rstrip("/")

    def close(self) -> None:
        """Close the client's connections (a shared pool stays open for the next client)."""
        if not self._shared:
            self._openai.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def sends_response_format(self) -> bool:
        """False once the server has rejected ``response_format`` (for the client's lifetime)."""
        return self.sends("response_format")

    def sends(self, parameter: str) -> bool:
        """False once the server has refused the optional ``parameter`` (for the client's lifetime)."""
        with self._lock:
            return parameter not in self._refused

    def send(
        self,
        request: Callable[[], T],
        *,
        log: CallLog | None = None,
        before_request: Callable[[], None] | None = None,
        resend_at_once: Callable[[openai.APIStatusError], bool] | None = None,
    ) -> tuple[T, int, int | None]:
        """``request()`` (one HTTP request through the SDK) under the retry policy: its result,
        the number of requests sent and the call log's id of the last one.

        ``before_request`` runs before every request and may raise to stop (a spent budget).
        With a ``log``, every request is recorded in it before it is sent, and one that got no
        usable reply says how it ended. ``resend_at_once`` may fix the request after an error
        status (returning True): it is then sent again at once, not counted as a failure.
        """
        attempts = failures = 0
        cause: Exception | None = None
        kind, status, code, detail = UNREADABLE, None, None, ""
        while True:
            if before_request is not None:
                before_request()
            attempts += 1
            retry_after: float | None = None
            call_id = log.sent() if log is not None else None
            try:
                return request(), attempts, call_id
            except openai.APIStatusError as exc:
                detail = f"HTTP {exc.status_code}: {_server_message(exc)}"
                if log is not None and call_id is not None:
                    log.refused(call_id, error=detail)
                if resend_at_once is not None and resend_at_once(exc):
                    continue
                kind, status, code, detail = REFUSED, exc.status_code, _error_code(exc), _server_message(exc)
                if not _is_transient(exc):
                    raise PermanentError(
                        f"{self.name} server refused the request (HTTP {status}: {detail})",
                        kind=kind,
                        status=status,
                        code=code,
                        detail=detail,
                    ) from exc
                retry_after = _retry_after_s(exc)
                last_error, cause = f"HTTP {status}: {detail}", exc
            except openai.APITimeoutError as exc:
                last_error, cause = f"no reply within {self.timeout_s:g} s", exc
                kind, status, code, detail = TIMEOUT, None, None, last_error
            except openai.APIConnectionError as exc:
                last_error, cause = f"connection failed: {_short(exc)}", exc
                kind, status, code, detail = UNREACHABLE, None, None, _connection_cause(exc)
            except openai.OpenAIError as exc:
                if log is not None and call_id is not None:
                    log.lost(call_id, error=_short(exc))
                raise PermanentError(
                    f"{self.name} request failed: {_short(exc)}", detail=_short(exc)
                ) from exc
            except json.JSONDecodeError as exc:
                # A 200 whose body is not JSON: a body cut in transit or a proxy's error page.
                last_error, cause = f"reply body is not JSON ({exc.msg})", exc
                kind, status, code, detail = UNREADABLE, None, None, last_error
            if log is not None and call_id is not None and not isinstance(cause, openai.APIStatusError):
                # The server may have generated (and billed) a reply nobody will read.
                log.lost(call_id, error=last_error)
            failures += 1
            if failures >= self.policy.max_attempts:
                attempts_text = f"{failures} attempt{'s' if failures > 1 else ''}"
                raise TransientError(
                    f"{self.name} server unavailable after {attempts_text}: {last_error}",
                    kind=kind,
                    status=status,
                    code=code,
                    detail=detail,
                ) from cause
            delay = self.policy.backoff_s(failures=failures, retry_after_s=retry_after)
            logger.info("%s request failed (%s); retry %d in %.2f s", self.name, last_error, failures, delay)
            self._sleep(delay)

    def chat(
        self,
        *,
        model: str,
        messages: list[dict],
        temperature: float,
        max_tokens: int | None = None,
        response_format: dict | None = None,
        top_logprobs: int | None = None,
        choices: int | None = None,
        log: CallLog | None = None,
        before_request: Callable[[], None] | None = None,
    ) -> ChatReply:
        """One chat completion for ``messages``, under the retry policy (see ``send``).

        Three optional parameters are sent until the server refuses them: ``response_format``,
        ``max_tokens``, and ``top_logprobs`` (with ``logprobs``: the log-probabilities of each
        token of the reply and of that many alternatives, which OpenAI-compatible servers such as
        vLLM return). A
        400/422 that names one is sent again at once without it, and this client stops sending
        it. ``choices`` asks for that many completions of the same messages (``n``; the reply's
        ``content`` is the first one's, ``raw`` holds them all). Raises ``PermanentError`` for a
        reply without a choice.
        """
        body: dict = {"model": model, "messages": messages, "temperature": temperature}
        if choices is not None and choices > 1:
            body["n"] = choices
        optional: dict[str, dict] = {}
        if max_tokens is not None:
            # Reasoning models refuse ``max_tokens`` (they take ``max_completion_tokens``).
            optional["max_tokens"] = {"max_tokens": max_tokens}
        if response_format is not None:
            optional["response_format"] = {"response_format": response_format}
        if top_logprobs is not None:
            optional["logprobs"] = {"logprobs": True, "top_logprobs": top_logprobs}
        carried: list[str] = []

        def request() -> object:
            carried[:] = [name for name in optional if self.sends(name)]
            sent = dict(body)
            for name in carried:
                sent.update(optional[name])
            # The SDK's typed path (``chat.completions.create``) walks every message through its
            # parameter transforms, about a third of the client's CPU per call, which change
            # nothing for plain-text messages; the SDK's documented generic ``post`` sends the same
            # POST with the same errors and timeouts. ``cast_to=object`` gives the reply's JSON as
            # parsed: building a ``ChatCompletion`` of it, then a dict again for the audit record,
            # cost the judging threads more interpreter time than the rest of the reply's handling.
            return self._openai.post("/chat/completions", body=sent, cast_to=object)

        def drop_refused(exc: openai.APIStatusError) -> bool:
            refused = [name for name in carried if _mentions(exc, name)]
            if not refused:
                return False
            # Servers without structured outputs or log-probabilities (older vLLM, llama.cpp,
            # proxies) say so with a 400; the prompt alone still asks for JSON.
            logger.warning(
                "%s server rejects %s; continuing without it: HTTP %s: %s",
                self.name,
                " and ".join(refused),
                exc.status_code,
                _server_message(exc),
            )
            with self._lock:
                self._refused.update(refused)
            return True

        response, attempts, call_id = self.send(
            request, log=log, before_request=before_request, resend_at_once=drop_refused
        )
        return _chat_reply(response, name=self.name, attempts=attempts, call_id=call_id)

    def embed(self, *, model: str, inputs: list[str]) -> list[list[float]]:
        """The embedding of each of ``inputs``, in their order, under the retry policy.

        Raises ``PermanentError`` when the reply does not hold one vector per input.
        """
        response, _, _ = self.send(
            lambda: self._openai.embeddings.create(model=model, input=inputs, encoding_format="float")
        )
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != len(inputs):
            got = len(data) if isinstance(data, list) else "no"
            raise PermanentError(f"{self.name} server: {got} vectors for {len(inputs)} texts")
        # The API returns an index per vector; servers are not obliged to keep the input order.
        try:
            ordered = sorted(data, key=lambda item: item.index)
            indices = [item.index for item in ordered]
            vectors = [item.embedding for item in ordered]
        except (AttributeError, TypeError) as exc:
            raise PermanentError(f"{self.name} server: malformed vectors ({exc})") from exc
        if indices != list(range(len(inputs))):
            raise PermanentError(f"{self.name} server: vector indices do not match the texts sent")
        return vectors
