"""The real ``openai`` client, through JudgeClient, against the scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import time

import openai
import pytest

from evaluation.judge.client import (
    BudgetExceeded,
    Completion,
    JudgeClient,
    JudgeClientError,
    PermanentError,
    TokenBudget,
    TransientError,
)
from evaluation.judge.parsing import VerdictError, parse_verdicts
from evaluation.judge.prompts import VERDICT_JSON_SCHEMA, build_relevance_messages, build_veracity_messages
from tests.llm_server import RateLimited, ScriptedLLMServer, Slow, Status, fake_embedding

SOURCE = {
    "id": "4ca822",
    "title": "Rapport annuel",
    "page": 3,
    "text": "Le chiffre d'affaires atteint 12,4 M€.",
}
MESSAGES = build_veracity_messages(
    question="Quel est le chiffre d'affaires ?",
    sources=[SOURCE],
    sentences=[
        {"index": 0, "text": "Bonjour.", "paragraph": ""},
        {"index": 1, "text": "Le chiffre d'affaires atteint 12,4 M€ [^4ca822^].", "paragraph": ""},
        {"index": 2, "text": "Il a doublé en un an [^4ca822^].", "paragraph": ""},
    ],
)
INDICES = [0, 1, 2]


@pytest.fixture
def server():
    with ScriptedLLMServer() as scripted:
        yield scripted


@pytest.fixture
def make_client():
    clients: list[JudgeClient] = []

    def make(server: ScriptedLLMServer, **overrides) -> JudgeClient:
        options = {
            "base_url": server.base_url,
            "api_key": "test-key",
            "model": "judge-model",
            "timeout_s": 0.3,
            "max_attempts": 4,
            "backoff_base_s": 0.01,
            "backoff_max_s": 0.05,
        }
        options.update(overrides)
        client = JudgeClient(**options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def test_a_completion_carries_content_usage_latency_and_the_raw_response(server, make_client):
    completion = make_client(server).complete(messages=MESSAGES)
    assert [v.label for v in parse_verdicts(completion.content, expected_indices=INDICES)] == [1, 1, 1]
    prompt_chars = sum(len(m["content"]) for m in MESSAGES)
    assert completion.prompt_tokens == prompt_chars // 4
    assert completion.completion_tokens == len(completion.content) // 4
    assert completion.attempts == 1
    assert completion.finish_reason == "stop"
    assert 0 < completion.latency_s < 5
    assert completion.raw["usage"]["prompt_tokens"] == completion.prompt_tokens
    assert completion.raw["choices"][0]["message"]["content"] == completion.content
    json.dumps(completion.raw)  # JSON-able, for audit


def test_the_request_carries_model_temperature_messages_and_json_mode(server, make_client):
    make_client(server, temperature=0.0, max_tokens=512).complete(messages=MESSAGES)
    request = server.requests[0]
    assert request["model"] == "judge-model"
    assert request["temperature"] == 0.0
    assert request["max_tokens"] == 512
    assert request["messages"] == MESSAGES
    assert request["response_format"] == {"type": "json_object"}
    assert server.calls[0].headers["authorization"] == "Bearer test-key"


def test_json_schema_mode_sends_the_verdict_schema(server, make_client):
    make_client(server, response_format="json_schema").complete(messages=MESSAGES)
    sent = server.requests[0]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["schema"] == VERDICT_JSON_SCHEMA
    assert sent["json_schema"]["strict"] is True


def test_no_response_format_is_sent_when_disabled(server, make_client):
    make_client(server, response_format="none").complete(messages=MESSAGES)
    assert "response_format" not in server.requests[0]


def test_cost_follows_the_prices_per_thousand_tokens(server, make_client):
    client = make_client(server, price_per_1k_prompt=0.5, price_per_1k_completion=2.0)
    completion = client.complete(messages=MESSAGES)
    expected = completion.prompt_tokens * 0.5 / 1000 + completion.completion_tokens * 2.0 / 1000
    assert client.cost(completion) == pytest.approx(expected)
    assert client.cost(completion) > 0


def test_a_rate_limited_request_is_retried_after_at_least_retry_after(server, make_client):
    server.enqueue(RateLimited(retry_after_s=0.2))
    completion = make_client(server, backoff_max_s=1.0, sleep=time.sleep).complete(messages=MESSAGES)
    first, second = server.calls
    assert first.fault == "429"
    assert second.received_at - first.received_at >= 0.2
    assert completion.attempts == 2


def test_retry_after_is_honoured_exactly_and_capped_by_backoff_max(server, make_client):
    sleeps: list[float] = []
    server.enqueue(RateLimited(retry_after_s=0.03), RateLimited(retry_after_s=30))
    make_client(server, backoff_max_s=0.05, sleep=sleeps.append).complete(messages=MESSAGES)
    assert sleeps == [pytest.approx(0.03), 0.05]


def test_a_rate_limit_without_retry_after_backs_off_with_jitter_under_the_exponential_ceiling(
    server, make_client
):
    sleeps: list[float] = []
    server.enqueue(*[RateLimited(with_header=False)] * 3)
    completion = make_client(server, backoff_base_s=0.01, backoff_max_s=1.0, sleep=sleeps.append).complete(
        messages=MESSAGES
    )
    assert completion.attempts == 4
    assert len(sleeps) == 3
    assert all(0 <= s <= 0.01 * 2**n for n, s in enumerate(sleeps))


def test_full_jitter_spreads_delays_and_respects_the_cap(server, make_client):
    client = make_client(server, backoff_base_s=0.1, backoff_max_s=0.5)
    delays = [client.backoff_s(failures=5) for _ in range(200)]
    assert max(delays) <= 0.5
    assert len({round(d, 6) for d in delays}) > 100
    assert client.backoff_s(failures=1, retry_after_s=0.3) == 0.3


def test_a_server_error_is_retried(server, make_client):
    server.enqueue("500", "500")
    completion = make_client(server).complete(messages=MESSAGES)
    assert completion.attempts == 3
    assert [c.fault for c in server.calls] == ["500", "500", None]
    assert len(parse_verdicts(completion.content, expected_indices=INDICES)) == 3


def test_server_errors_on_every_attempt_raise_a_transient_error(server, make_client):
    server.enqueue("500", "500", "500")
    with pytest.raises(TransientError, match="after 3 attempts: HTTP 500"):
        make_client(server, max_attempts=3).complete(messages=MESSAGES)
    assert len(server.requests) == 3


def test_a_slow_reply_times_out_and_is_retried(server, make_client):
    server.enqueue(Slow(seconds=1.0))
    completion = make_client(server, timeout_s=0.3).complete(messages=MESSAGES)
    assert completion.attempts == 2
    assert completion.latency_s >= 0.3


def test_a_reply_that_times_out_on_every_attempt_raises_a_transient_error(server, make_client):
    server.enqueue("slow", "slow")
    started = time.monotonic()
    with pytest.raises(TransientError, match="no reply within 0.3 s"):
        make_client(server, timeout_s=0.3, max_attempts=2).complete(messages=MESSAGES)
    assert time.monotonic() - started >= 0.6
    assert len(server.requests) == 2


def test_a_reply_body_that_is_not_json_is_retried_as_transient(server, make_client):
    server.enqueue("broken_body")
    assert make_client(server).complete(messages=MESSAGES).attempts == 2
    server.enqueue("broken_body", "broken_body")
    with pytest.raises(TransientError, match="reply body is not JSON"):
        make_client(server, max_attempts=2).complete(messages=MESSAGES)


def test_an_unreachable_server_raises_a_transient_error_after_retries():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = JudgeClient(
        base_url=f"http://127.0.0.1:{port}/v1", api_key="k", model="m", max_attempts=2, backoff_base_s=0.0
    )
    with client, pytest.raises(TransientError, match="after 2 attempts: connection failed"):
        client.complete(messages=MESSAGES)


@pytest.mark.parametrize(
    "fault",
    [Status(401, "Incorrect API key"), Status(404, "model not found"), Status(400, "messages too long")],
)
def test_other_client_errors_are_permanent_and_not_retried(server, make_client, fault):
    server.enqueue(fault)
    with pytest.raises(PermanentError, match=f"HTTP {fault.status}: {fault.message}"):
        make_client(server).complete(messages=MESSAGES)
    assert len(server.requests) == 1


def test_an_exhausted_quota_is_permanent_despite_its_429(server, make_client):
    server.enqueue(Status(429, "You exceeded your current quota", code="insufficient_quota"))
    with pytest.raises(PermanentError, match="quota"):
        make_client(server).complete(messages=MESSAGES)
    assert len(server.requests) == 1


def test_an_invalid_json_reply_is_returned_and_rejected_by_the_parser(server, make_client):
    server.enqueue("invalid_json")
    completion = make_client(server).complete(messages=MESSAGES)
    with pytest.raises(VerdictError, match="no JSON"):
        parse_verdicts(completion.content, expected_indices=INDICES)


def test_a_reply_with_one_verdict_missing_is_rejected_by_the_parser(server, make_client):
    server.enqueue("wrong_count")
    completion = make_client(server).complete(messages=MESSAGES)
    with pytest.raises(VerdictError, match=r"missing \[2\]"):
        parse_verdicts(completion.content, expected_indices=INDICES)


def test_a_truncated_reply_reports_its_length_finish_and_is_rejected_by_the_parser(server, make_client):
    server.enqueue("truncated")
    completion = make_client(server).complete(messages=MESSAGES)
    assert completion.finish_reason == "length"
    with pytest.raises(VerdictError, match="truncated"):
        parse_verdicts(completion.content, expected_indices=INDICES)


def test_a_fenced_reply_with_prose_parses(server, make_client):
    server.labeler = lambda index, request: 0 if index == 2 else 1
    server.enqueue("fenced")
    completion = make_client(server).complete(messages=MESSAGES)
    assert completion.content.startswith("Voici")
    assert [v.label for v in parse_verdicts(completion.content, expected_indices=INDICES)] == [1, 1, 0]


def test_a_rejected_response_format_falls_back_once_and_is_remembered(make_client):
    with ScriptedLLMServer(reject_response_format=True) as server:
        client = make_client(server)
        first = client.complete(messages=MESSAGES)
        second = client.complete(messages=MESSAGES)
        sent = ["response_format" in request for request in server.requests]
    assert sent == [True, False, False]
    assert (first.attempts, second.attempts) == (2, 1)
    assert client.sends_response_format is False


def test_a_one_off_response_format_rejection_also_falls_back(server, make_client):
    server.enqueue("reject_response_format")
    completion = make_client(server).complete(messages=MESSAGES)
    assert completion.attempts == 2
    assert "response_format" not in server.requests[1]


def test_a_bad_request_after_dropping_response_format_is_permanent(server, make_client):
    server.enqueue("reject_response_format", Status(400, "context length exceeded"))
    with pytest.raises(PermanentError, match="context length exceeded"):
        make_client(server).complete(messages=MESSAGES)
    assert ["response_format" in request for request in server.requests] == [True, False]


def test_usage_is_counted_in_the_budget_and_a_spent_budget_stops_requests(server, make_client):
    budget = TokenBudget(limit=50)
    client = make_client(server, budget=budget)
    completion = client.complete(messages=MESSAGES)
    assert budget.spent == completion.prompt_tokens + completion.completion_tokens
    assert budget.remaining == 0
    with pytest.raises(BudgetExceeded, match="used up"):
        client.complete(messages=MESSAGES)
    assert len(server.requests) == 1


def test_a_budget_with_room_lets_requests_through(server, make_client):
    budget = TokenBudget(limit=1_000_000)
    client = make_client(server, budget=budget)
    client.complete(messages=MESSAGES)
    client.complete(messages=MESSAGES)
    assert len(server.requests) == 2
    assert 0 < budget.spent < budget.limit


def test_token_budget_charge_raises_when_over_and_keeps_the_count():
    budget = TokenBudget(limit=100)
    assert budget.charge(60) == 60
    with pytest.raises(BudgetExceeded):
        budget.charge(60)
    assert budget.spent == 120
    assert budget.remaining == 0
    with pytest.raises(BudgetExceeded):
        budget.ensure_available()


def test_token_budget_counts_exactly_under_concurrent_charges():
    budget = TokenBudget(limit=10**9)

    def charge_many():
        for _ in range(2000):
            budget.charge(1)

    threads = [threading.Thread(target=charge_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert budget.spent == 16_000


def test_complete_many_preserves_order_at_concurrency_8():
    def labeler(index: int, request: dict) -> int:
        question_length = len(request["messages"][-1]["content"])
        time.sleep(0.002 * (question_length % 7))  # replies come back out of order
        return question_length % 2

    batches = [build_relevance_messages(question="x" * (8 * i + i % 2), answer="a") for i in range(16)]
    with ScriptedLLMServer(latency_s=0.05, labeler=labeler) as server:
        client = JudgeClient(base_url=server.base_url, api_key="k", model="m", timeout_s=5)
        with client:
            results = client.complete_many(batches=batches, concurrency=8)
        max_in_flight = server.max_in_flight
    assert all(isinstance(r, Completion) for r in results)
    expected_labels = [len(b[-1]["content"]) % 2 for b in batches]
    labels = [parse_verdicts(r.content, expected_indices=[0])[0].label for r in results]
    assert labels == expected_labels
    assert [r.prompt_tokens for r in results] == [sum(len(m["content"]) for m in b) // 4 for b in batches]
    assert 2 <= max_in_flight <= 8


def test_complete_many_puts_each_failure_in_its_place(server, make_client):
    server.enqueue("500", "500", Status(401, "bad key"))
    results = make_client(server, max_attempts=2).complete_many(batches=[MESSAGES] * 3, concurrency=1)
    assert isinstance(results[0], TransientError)
    assert isinstance(results[1], PermanentError)
    assert isinstance(results[2], Completion)
    assert all(isinstance(r, Completion | JudgeClientError) for r in results)


def test_one_client_serves_64_concurrent_requests(make_client):
    with ScriptedLLMServer(latency_s=0.2) as server:
        results = make_client(server, timeout_s=10).complete_many(batches=[MESSAGES] * 64, concurrency=64)
        assert server.max_in_flight >= 32
    assert all(isinstance(r, Completion) for r in results)


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError, match="response_format"):
        JudgeClient(base_url="http://127.0.0.1:1/v1", api_key="k", model="m", response_format="xml")
    with pytest.raises(ValueError, match="max_attempts"):
        JudgeClient(base_url="http://127.0.0.1:1/v1", api_key="k", model="m", max_attempts=0)
    with pytest.raises(PermanentError, match="model"):
        JudgeClient(base_url="http://127.0.0.1:1/v1", api_key="k", model="")


def test_the_scripted_server_serves_deterministic_embeddings_to_the_openai_client(server):
    texts = ["la dette nette", "le bilan consolidé"]
    with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
        as_base64 = sdk.embeddings.create(model="embedder", input=texts)
        as_floats = sdk.embeddings.create(model="embedder", input=texts, encoding_format="float")
    for response in (as_base64, as_floats):
        vectors = [item.embedding for item in response.data]
        assert [len(v) for v in vectors] == [16, 16]
        for vector, text in zip(vectors, texts, strict=True):
            assert vector == pytest.approx(fake_embedding(text), abs=1e-6)
    assert fake_embedding(texts[0]) != fake_embedding(texts[1])
