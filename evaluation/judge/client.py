"""The LLM judge's client: chat completions from one model, on top of the one module that talks to
OpenAI-compatible servers (``integrations.openai_compatible``: the SDK, the retry policy, the
error mapping).

What is the judge's own: the JSON output asked of the server (``json_object``, or the verdicts'
``json_schema``), the ``TokenBudget`` shared by several clients or threads that stops spending once
it is used up, the estimate of tokens for servers that omit usage, and prices. Errors come out as
two kinds the caller can act on: ``TransientError`` (try again later) and ``PermanentError`` (fix
the configuration or the request), plus ``BudgetExceeded``.

One client is safe to share between threads; bounded concurrency is the caller's (or
``complete_many``'s) business.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import cast

from annotation.text import clean_text, clean_value
from evaluation.judge.prompts import VERDICT_JSON_SCHEMA, verdict_schema
from integrations import openai_compatible
from integrations.openai_compatible import (
    REFUSED,
    SETUP,
    TIMEOUT,
    UNREACHABLE,
    UNREADABLE,
    CallLog,
    PermanentError,
    RetryPolicy,
    TransientError,
)

__all__ = [
    "REFUSED",
    "RESPONSE_FORMATS",
    "SETUP",
    "TIMEOUT",
    "UNREACHABLE",
    "UNREADABLE",
    "BudgetExceeded",
    "CallLog",
    "Completion",
    "JudgeClient",
    "JudgeClientError",
    "PermanentError",
    "TokenBudget",
    "TransientError",
    "estimate_tokens",
]

RESPONSE_FORMATS = ("json_object", "json_schema", "none")
# What ``JudgeClient.probe`` asks: a reply of one token, whatever it says.
PROBE_MESSAGES = [{"role": "user", "content": "Reply with OK."}]

# Any failure to get a completion from the LLM server: the service's errors, under the judge's name.
JudgeClientError = openai_compatible.ServiceError


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
        top_logprobs: int | None = None,
        samples: int | None = None,
        price_per_1k_prompt: float = 0.0,
        price_per_1k_completion: float = 0.0,
        budget: TokenBudget | None = None,
        sleep: Callable[[float], None] = time.sleep,
        shared: bool = False,
        labels: tuple[int, ...] = (0, 1),
    ) -> None:
        """``shared``: use this process's connection pool to the server, kept open across clients.
        ``labels``: the label values the ``json_schema`` response format allows (a categorical
        criterion's category values)."""
        if response_format not in RESPONSE_FORMATS:
            raise ValueError(
                f"response_format: {response_format!r} is not one of {', '.join(RESPONSE_FORMATS)}"
            )
        policy = RetryPolicy(
            max_attempts=max_attempts, backoff_base_s=backoff_base_s, backoff_max_s=backoff_max_s
        )
        if timeout_s <= 0:
            raise ValueError("timeout_s must be > 0")
        if not model:
            raise PermanentError("no judge model configured")
        self._server = openai_compatible.Client(
            base_url=base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            policy=policy,
            name="LLM",
            shared=shared,
            sleep=sleep,
        )
        self.model = model
        self.temperature = temperature
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.max_tokens = max_tokens
        self.response_format = response_format
        # Ask for the reply's token log-probabilities (and this many alternatives per token): the
        # judge's confidence in each verdict (evaluation.judge.confidence).
        self.top_logprobs = top_logprobs
        # Ask for this many completions of each prompt (sampled verdicts: the judge's confidence
        # is the share that agree with the first).
        self.samples = samples
        self.price_per_1k_prompt = price_per_1k_prompt
        self.price_per_1k_completion = price_per_1k_completion
        self.budget = budget
        if response_format == "json_object":
            self._format: dict | None = {"type": "json_object"}
        elif response_format == "json_schema":
            self._format = {
                "type": "json_schema",
                "json_schema": {
                    "name": "verdicts",
                    "strict": True,
                    "schema": VERDICT_JSON_SCHEMA if labels == (0, 1) else verdict_schema(labels),
                },
            }
        else:
            self._format = None

    def close(self) -> None:
        """Close the client's connections (a shared pool stays open for the next client)."""
        self._server.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """The server's address as requests go to it."""
        return self._server.base_url

    def probe(self) -> None:
        """The smallest request that shows the judge can be called: a one-line question to the
        model with ``max_tokens`` 1 (sent again at once without it when the server refuses that
        parameter), the judge's temperature, no JSON mode, no log-probabilities, under the
        client's attempts and timeout. Raises ``TransientError`` or ``PermanentError`` as
        ``complete`` does; counts nothing in a budget and records no call."""
        self._server.chat(
            model=self.model, messages=PROBE_MESSAGES, temperature=self.temperature, max_tokens=1
        )

    @property
    def sends_response_format(self) -> bool:
        """False once the server has rejected ``response_format`` (for the client's lifetime)."""
        return self._format is not None and self._server.sends_response_format

    def backoff_s(self, *, failures: int, retry_after_s: float | None = None) -> float:
        """Seconds to wait after ``failures`` consecutive transient failures (the retry policy's)."""
        return self._server.policy.backoff_s(failures=failures, retry_after_s=retry_after_s)

    def complete(self, *, messages: list[dict], log: CallLog | None = None) -> Completion:
        """One chat completion for ``messages``, retried on transient failures.

        The retry policy of ``integrations.openai_compatible``: 429 (after ``Retry-After`` when
        given, capped by ``backoff_max_s``), 408, 409, 5xx, timeouts, connection errors and
        bodies that are not JSON are tried up to ``max_attempts`` times, then raise
        ``TransientError``. A 400/422 that names ``response_format`` is retried once without it,
        and the client stops sending it. Any other refusal raises ``PermanentError`` at once.
        With a budget, raises ``BudgetExceeded`` before sending when it is used up; the tokens of
        every completion are counted in it. With a ``log``, every HTTP request is recorded in it
        before it is sent, and one that got no usable reply says how it ended.
        """
        started = time.monotonic()
        reply = self._server.chat(
            model=self.model,
            messages=messages,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            response_format=self._format,
            top_logprobs=self.top_logprobs,
            choices=self.samples,
            log=log,
            before_request=self.budget.ensure_available if self.budget is not None else None,
        )
        if reply.prompt_tokens is None or reply.completion_tokens is None:
            # Some servers omit usage; an estimate (about 4 characters a token) keeps budgets honest.
            prompt_tokens, completion_tokens = estimate_tokens(messages), len(reply.content) // 4
        else:
            prompt_tokens, completion_tokens = reply.prompt_tokens, reply.completion_tokens
        if self.budget is not None:
            # Recorded, never refused: these tokens are spent and the reply is worth keeping.
            self.budget.record(prompt_tokens + completion_tokens)
        return Completion(
            # The judge's words are untrusted text: the rule on control characters (annotation.text).
            content=clean_text(reply.content),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=time.monotonic() - started,
            attempts=reply.attempts,
            finish_reason=reply.finish_reason,
            raw=cast(dict, clean_value(reply.raw)),
            call_id=reply.call_id,
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
