"""The one client of OpenAI-compatible servers: its retry policy and error mapping, shared by chat
completions and embeddings, with the real ``openai`` SDK against the scripted server on 127.0.0.1.
The judge's use of it is in test_judge_client.py, the sample's in test_embeddings.py."""

from __future__ import annotations

import pytest

from integrations.openai_compatible import (
    Client,
    PermanentError,
    RetryPolicy,
    ServiceError,
    TransientError,
)
from tests.llm_server import RateLimited, ScriptedLLMServer, ServerError, Status, fake_embedding

MESSAGES = [{"role": "user", "content": "Bonjour.\nINDICES: [0]"}]


class Log:
    """A call log that keeps what it was told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple] = []

    def sent(self) -> int:
        self.events.append(("sent", len(self.events)))
        return len(self.events) - 1

    def refused(self, call_id: int, *, error: str) -> None:
        self.events.append(("refused", call_id, error))

    def lost(self, call_id: int, *, error: str) -> None:
        self.events.append(("lost", call_id, error))


@pytest.fixture
def server():
    with ScriptedLLMServer() as scripted:
        yield scripted


@pytest.fixture
def make_client():
    clients: list[Client] = []

    def make(server: ScriptedLLMServer, *, name: str = "LLM", **policy) -> tuple[Client, list[float]]:
        sleeps: list[float] = []
        options = {"max_attempts": 3, "backoff_base_s": 0.01, "backoff_max_s": 0.05, **policy}
        client = Client(
            base_url=server.base_url,
            api_key="k",
            timeout_s=0.3,
            policy=RetryPolicy(**options),
            name=name,
            sleep=sleeps.append,
        )
        clients.append(client)
        return client, sleeps

    yield make
    for client in clients:
        client.close()


def test_the_policy_refuses_nonsense_and_caps_every_wait():
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="backoff"):
        RetryPolicy(backoff_base_s=-1)
    policy = RetryPolicy(backoff_base_s=1.0, backoff_max_s=2.0)
    assert all(0 <= policy.backoff_s(failures=10) <= 2.0 for _ in range(100))
    assert policy.backoff_s(failures=1, retry_after_s=60) == 2.0
    assert policy.backoff_s(failures=1, retry_after_s=0.5) == 0.5


@pytest.mark.parametrize("endpoint", ["chat", "embed"])
def test_chat_and_embeddings_retry_the_same_faults_the_same_number_of_times(server, make_client, endpoint):
    client, sleeps = make_client(server)
    server.enqueue(ServerError(503), Status(409, "conflict"), RateLimited(retry_after_s=0.02))
    with pytest.raises(TransientError, match="LLM server unavailable after 3 attempts: HTTP 429"):
        if endpoint == "chat":
            client.chat(model="m", messages=MESSAGES, temperature=0)
        else:
            client.embed(model="m", inputs=["la dette"])
    assert [call.fault for call in server.calls] == ["500", "status", "429"]
    assert len(sleeps) == 2 and all(0 <= s <= 0.05 for s in sleeps)


def test_embeddings_honour_retry_after_like_chat_completions(server, make_client):
    client, sleeps = make_client(server)
    server.enqueue(RateLimited(retry_after_s=0.03))
    assert client.embed(model="m", inputs=["la dette"]) == [pytest.approx(fake_embedding("la dette"))]
    assert sleeps == [pytest.approx(0.03)]


@pytest.mark.parametrize(
    "fault",
    [
        Status(429, "You exceeded your current quota", code="insufficient_quota"),
        Status(401, "Incorrect API key"),
        Status(404, "model not found"),
    ],
)
def test_a_refusal_is_permanent_at_once_for_embeddings_as_for_chat(server, make_client, fault):
    client, sleeps = make_client(server, name="embedding")
    server.enqueue(fault)
    with pytest.raises(PermanentError, match=f"embedding server refused the request \\(HTTP {fault.status}"):
        client.embed(model="m", inputs=["la dette"])
    assert len(server.calls) == 1 and sleeps == []


def test_every_request_is_logged_before_it_is_sent_and_says_how_it_ended(server, make_client):
    client, _ = make_client(server)
    log = Log()
    server.enqueue("500", "broken_body")
    reply = client.chat(model="m", messages=MESSAGES, temperature=0, log=log)
    assert [event[0] for event in log.events] == ["sent", "refused", "sent", "lost", "sent"]
    assert log.events[1][2].startswith("HTTP 500")
    assert "not JSON" in log.events[3][2]
    assert (reply.attempts, reply.call_id) == (3, 4)


def test_before_request_runs_before_every_request_and_may_stop_the_call(server, make_client):
    client, _ = make_client(server)
    checks: list[int] = []

    class Spent(Exception):
        pass

    def check() -> None:
        checks.append(len(server.calls))
        if len(checks) == 2:
            raise Spent

    server.enqueue("500")
    with pytest.raises(Spent):
        client.chat(model="m", messages=MESSAGES, temperature=0, before_request=check)
    assert checks == [0, 1]
    assert len(server.calls) == 1


def test_a_chat_reply_carries_the_servers_usage_and_raw_response(server, make_client):
    client, _ = make_client(server)
    reply = client.chat(model="m", messages=MESSAGES, temperature=0)
    assert reply.prompt_tokens == reply.raw["usage"]["prompt_tokens"] > 0
    assert reply.completion_tokens == reply.raw["usage"]["completion_tokens"] > 0
    assert reply.raw["choices"][0]["message"]["content"] == reply.content
    assert (reply.attempts, reply.call_id) == (1, None)


def test_a_missing_key_is_a_permanent_error_naming_the_client(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(PermanentError, match="cannot configure the embedding client"):
        Client(base_url="http://127.0.0.1:1/v1", api_key=None, name="embedding")
    assert issubclass(TransientError, ServiceError) and issubclass(PermanentError, ServiceError)
