"""The one module that talks to the LLM server (any OpenAI-compatible base URL).

``JudgeClient.complete`` sends one chat completion with our own retry policy (the SDK's retries
are off): exponential backoff with full jitter on 429, 5xx, timeouts and connection errors,
honouring ``Retry-After``. Errors come out as two kinds the caller can act on: ``TransientError``
(try again later) and ``PermanentError`` (fix the configuration or the request). A
``TokenBudget`` shared by several clients or threads stops spending once it is used up.

One client is safe to share between threads; bounded concurrency is the caller's (or
``complete_many``'s) business.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import openai
from openai.types.chat import ChatCompletion

from evaluation.judge.prompts import VERDICT_JSON_SCHEMA

logger = logging.getLogger(__name__)

RESPONSE_FORMATS = ("json_object", "json_schema", "none")
# 408 is a timeout the server reports itself; everything else below 500 is the request's fault.
_TRANSIENT_STATUSES = frozenset({408, 429})
_MESSAGE_LIMIT = 500


class JudgeClientError(Exception):
    """Any failure to get a completion from the LLM server."""


class TransientError(JudgeClientError):
    """The server was overloaded or unreachable on every attempt (429, 5xx, timeouts, network)."""


class PermanentError(JudgeClientError):
    """The server refused the request (bad request, authentication, unknown model, no quota)."""


class BudgetExceeded(JudgeClientError):
    """The token budget is used up: no further request is sent."""


class TokenBudget:
    """A thread-safe count of tokens spent against a limit.

    Several threads may each start a request while the budget still has room, so the final
    spend can exceed the limit by at most one reply per concurrent caller.
    """

    def __init__(self, limit: int, *, spent: int = 0) -> None:
        if limit < 0 or spent < 0:
            raise ValueError("limit and spent must be >= 0")
        self.limit = int(limit)
        self._spent = int(spent)
        self._lock = threading.Lock()

    @property
    def spent(self) -> int:
        """Tokens counted so far."""
        with self._lock:
            return self._spent

    @property
    def remaining(self) -> int:
        """Tokens left before the limit (never negative)."""
        with self._lock:
            return max(0, self.limit - self._spent)

    def ensure_available(self) -> None:
        """Raise ``BudgetExceeded`` when nothing is left to spend."""
        with self._lock:
            if self._spent >= self.limit:
                raise BudgetExceeded(f"token budget used up: {self._spent} of {self.limit} tokens spent")

    def observe(self, total: int) -> int:
        """Raise the count to ``total`` when others spent more than we know (other processes
        of the same run); the new count, which never goes down."""
        with self._lock:
            self._spent = max(self._spent, int(total))
            return self._spent

    def record(self, tokens: int) -> int:
        """Count ``tokens`` already spent, whatever the limit; the new total."""
        with self._lock:
            self._spent += max(0, int(tokens))
            return self._spent

    def charge(self, tokens: int) -> int:
        """Count ``tokens``; the new total. Raises ``BudgetExceeded`` when it passes the limit.

        The tokens stay counted even when it raises: they describe spending that happened.
        """
        with self._lock:
            self._spent += max(0, int(tokens))
            if self._spent > self.limit:
                raise BudgetExceeded(f"token budget exceeded: {self._spent} of {self.limit} tokens spent")
            return self._spent


def estimate_tokens(messages: list[dict]) -> int:
    """Prompt tokens of ``messages`` when no server has counted them: about 4 characters a token."""
    return sum(len(str(m.get("content") or "")) for m in messages) // 4


class CallLog(Protocol):
    """Where ``complete`` records each HTTP request before sending it, and how it ended when no
    usable reply came back (the caller records the usage of the replies it gets)."""

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


@dataclass
class Completion:
    content: str
    prompt_tokens: int
    completion_tokens: int
    # Wall time of complete(), retries and waits included.
    latency_s: float
    # HTTP requests sent, the successful one included.
    attempts: int
    finish_reason: str | None
    # The server's response as JSON-able data, for audit.
    raw: dict
    # The id the call log gave the request that got this reply (None without a log).
    call_id: int | None = None


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


def _mentions_response_format(exc: openai.APIStatusError) -> bool:
    return "response_format" in f"{exc.message} {exc.body}"


_SHARED: dict[tuple, openai.OpenAI] = {}
_SHARED_LOCK = threading.Lock()


def _shared_openai(*, base_url: str | None, api_key: str, timeout_s: float) -> openai.OpenAI:
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


class JudgeClient:
    """Chat completions from one model on one OpenAI-compatible server, with retries and accounting."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str,
        model: str,
        temperature: float = 0.0,
        timeout_s: float = 60.0,
        max_attempts: int = 5,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_tokens: int | None = None,
        response_format: str = "json_object",
        price_per_1k_prompt: float = 0.0,
        price_per_1k_completion: float = 0.0,
        budget: TokenBudget | None = None,
        sleep: Callable[[float], None] = time.sleep,
        shared: bool = False,
    ) -> None:
        """``shared``: use this process's connection pool to the server, kept open across clients."""
        if response_format not in RESPONSE_FORMATS:
            raise ValueError(
                f"response_format: {response_format!r} is not one of {', '.join(RESPONSE_FORMATS)}"
            )
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if timeout_s <= 0 or backoff_base_s < 0 or backoff_max_s < 0:
            raise ValueError("timeout_s must be > 0 and backoff delays >= 0")
        if not model:
            raise PermanentError("no judge model configured")
        try:
            if shared:
                self._openai = _shared_openai(base_url=base_url, api_key=api_key, timeout_s=timeout_s)
            else:
                self._openai = openai.OpenAI(
                    base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0
                )
        except openai.OpenAIError as exc:
            raise PermanentError(f"cannot configure the LLM client: {_short(exc)}") from exc
        self.model = model
        self.temperature = temperature
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_tokens = max_tokens
        self.response_format = response_format
        self.price_per_1k_prompt = price_per_1k_prompt
        self.price_per_1k_completion = price_per_1k_completion
        self.budget = budget
        self._sleep = sleep
        self._lock = threading.Lock()
        self._random = random.Random()
        self._send_response_format = response_format != "none"
        self._shared = shared

    def close(self) -> None:
        """Close the client's connections (a shared pool stays open for the next client)."""
        if not self._shared:
            self._openai.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def sends_response_format(self) -> bool:
        """False once the server has rejected ``response_format`` (for the client's lifetime)."""
        with self._lock:
            return self._send_response_format

    def backoff_s(self, *, failures: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after ``failures`` consecutive transient failures.

        The server's ``Retry-After`` when it gave one, else full jitter: uniform between 0 and
        ``backoff_base_s * 2 ** (failures - 1)``; both capped by ``backoff_max_s``.
        """
        if retry_after_s is not None:
            return min(retry_after_s, self.backoff_max_s)
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** max(0, failures - 1))
        with self._lock:
            return self._random.uniform(0, ceiling)

    def _request(self, *, messages: list[dict], with_format: bool):
        kwargs: dict = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if with_format and self.response_format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        elif with_format and self.response_format == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdicts", "strict": True, "schema": VERDICT_JSON_SCHEMA},
            }
        # The SDK's own request path (``chat.completions.create``) walks every message through its
        # typed parameter transforms, about a third of the client's CPU per call, which change
        # nothing for plain-text messages; the same POST, parsed into the same ChatCompletion, with
        # the same errors and timeouts, goes through the client's generic ``post`` instead.
        return self._openai.post("/chat/completions", body=kwargs, cast_to=ChatCompletion)

    def complete(self, *, messages: list[dict], log: CallLog | None = None) -> Completion:
        """One chat completion for ``messages``, retried on transient failures.

        Retries 429 (after ``Retry-After`` when given, capped by ``backoff_max_s``), 408, 5xx,
        timeouts and connection errors up to ``max_attempts`` times, then raises
        ``TransientError``. A 400/422 that names ``response_format`` is retried once without it,
        and the client stops sending it. Any other refusal raises ``PermanentError`` at once.
        With a budget, raises ``BudgetExceeded`` before sending when it is used up; the tokens of
        every completion are counted in it. With a ``log``, every HTTP request is recorded in it
        before it is sent, and one that got no usable reply says how it ended.
        """
        started = time.monotonic()
        attempts = failures = 0
        last_error = ""
        while True:
            if self.budget is not None:
                self.budget.ensure_available()
            with_format = self.sends_response_format
            attempts += 1
            retry_after: float | None = None
            call_id = log.sent() if log is not None else None
            try:
                response = self._request(messages=messages, with_format=with_format)
                break
            except openai.APIStatusError as exc:
                status = exc.status_code
                detail = f"HTTP {status}: {_server_message(exc)}"
                if log is not None:
                    log.refused(call_id, error=detail)
                if with_format and status in (400, 422) and _mentions_response_format(exc):
                    # Servers without structured outputs (older vLLM, llama.cpp, proxies) say so
                    # with a 400; the prompt alone still asks for JSON.
                    logger.warning("LLM server rejects response_format; continuing without it: %s", detail)
                    with self._lock:
                        self._send_response_format = False
                    continue
                if status == 429 and exc.code == "insufficient_quota":
                    raise PermanentError(f"LLM server refused the request ({detail})") from exc
                if status not in _TRANSIENT_STATUSES and status < 500:
                    raise PermanentError(f"LLM server refused the request ({detail})") from exc
                if status == 429:
                    retry_after = _retry_after_s(exc)
                last_error, cause = detail, exc
            except openai.APITimeoutError as exc:
                last_error, cause = f"no reply within {self.timeout_s:g} s", exc
            except openai.APIConnectionError as exc:
                last_error, cause = f"connection failed: {_short(exc)}", exc
            except openai.OpenAIError as exc:
                if log is not None:
                    log.lost(call_id, error=_short(exc))
                raise PermanentError(f"LLM request failed: {_short(exc)}") from exc
            except json.JSONDecodeError as exc:
                # A 200 whose body is not JSON: a body cut in transit or a proxy's error page.
                last_error, cause = f"reply body is not JSON ({exc.msg})", exc
            if log is not None and not isinstance(cause, openai.APIStatusError):
                # The server may have generated (and billed) a reply nobody will read.
                log.lost(call_id, error=last_error)
            failures += 1
            if failures >= self.max_attempts:
                raise TransientError(
                    f"LLM server still failing after {failures} attempts: {last_error}"
                ) from cause
            delay = self.backoff_s(failures=failures, retry_after_s=retry_after)
            logger.info("LLM request failed (%s); retry %d in %.2f s", last_error, failures, delay)
            self._sleep(delay)
        return self._completion(
            response,
            messages=messages,
            attempts=attempts,
            latency_s=time.monotonic() - started,
            call_id=call_id,
        )

    def _completion(
        self, response, *, messages: list[dict], attempts: int, latency_s: float, call_id: int | None = None
    ) -> Completion:
        if not getattr(response, "choices", None):
            raise PermanentError(f"LLM server returned no choice: {_short(response)}")
        choice = response.choices[0]
        content = choice.message.content or ""
        usage = response.usage
        if usage is not None:
            prompt_tokens, completion_tokens = usage.prompt_tokens or 0, usage.completion_tokens or 0
        else:
            # Some servers omit usage; an estimate (about 4 characters a token) keeps budgets honest.
            prompt_tokens = estimate_tokens(messages)
            completion_tokens = len(content) // 4
        if self.budget is not None:
            # Recorded, never refused: these tokens are spent and the reply is worth keeping.
            self.budget.record(prompt_tokens + completion_tokens)
        return Completion(
            content=content,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency_s,
            attempts=attempts,
            finish_reason=choice.finish_reason,
            raw=response.to_dict(mode="json"),
            call_id=call_id,
        )

    def complete_many(
        self, *, batches: list[list[dict]], concurrency: int
    ) -> list[Completion | JudgeClientError]:
        """``complete`` for each message list, at most ``concurrency`` at a time, in input order.

        A batch that fails gives its ``JudgeClientError`` in its place instead of stopping the others.
        """
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")

        def one(messages: list[dict]) -> Completion | JudgeClientError:
            try:
                return self.complete(messages=messages)
            except JudgeClientError as exc:
                return exc

        if not batches:
            return []
        with ThreadPoolExecutor(max_workers=min(concurrency, len(batches))) as pool:
            return list(pool.map(one, batches))

    def cost(self, completion: Completion) -> float:
        """The price of ``completion`` at the client's prices per 1,000 tokens."""
        return (
            completion.prompt_tokens * self.price_per_1k_prompt
            + completion.completion_tokens * self.price_per_1k_completion
        ) / 1000
