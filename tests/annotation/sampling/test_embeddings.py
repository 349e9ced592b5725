"""Local TF-IDF embeddings, and the OpenAI-compatible backend against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from annotation.sampling.embeddings import EmbeddingError, TransientEmbeddingError, embed_texts
from tests.llm_server import ScriptedLLMServer, fake_embedding

TOPICS = {
    "finance": "bilan comptable trésorerie dette bancaire capitaux propres résultat net exercice",
    "rh": "salariés contrat de travail convention collective congés payés recrutement paie",
}


def topic_corpus(per_topic: int = 60) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(0)
    texts, labels = [], []
    for topic, words in TOPICS.items():
        vocabulary = words.split()
        for _ in range(per_topic):
            chosen = rng.choice(vocabulary, size=8)
            texts.append("Selon le rapport, " + " ".join(chosen) + " de la société.")
            labels.append(topic)
    return texts, labels


def assert_unit_rows(vectors: np.ndarray) -> None:
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


# TF-IDF


def test_tfidf_gives_float32_unit_rows_of_the_requested_size():
    texts, _ = topic_corpus()
    vectors = embed_texts(texts=texts, dimensions=16)
    assert vectors.shape == (len(texts), 16)
    assert vectors.dtype == np.float32
    assert_unit_rows(vectors)


def test_tfidf_is_deterministic_for_the_same_texts_and_seed():
    texts, _ = topic_corpus()
    np.testing.assert_array_equal(
        embed_texts(texts=texts, dimensions=16, seed=3), embed_texts(texts=texts, dimensions=16, seed=3)
    )


def test_tfidf_puts_each_text_nearest_to_texts_of_its_own_topic():
    texts, labels = topic_corpus()
    vectors = embed_texts(texts=texts, dimensions=16)
    similarity = vectors @ vectors.T
    np.fill_diagonal(similarity, -np.inf)
    nearest = similarity.argmax(axis=1)
    assert all(labels[i] == labels[j] for i, j in enumerate(nearest))


def test_tfidf_ignores_accents_and_case():
    vectors = embed_texts(
        texts=["Société financière générale", "SOCIETE FINANCIERE GENERALE", "Congés payés des salariés"]
    )
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert float(vectors[0] @ vectors[2]) < 0.5


def test_tfidf_falls_back_to_an_exact_projection_for_a_tiny_corpus():
    texts = ["la dette bancaire du groupe", "la dette bancaire a baissé", "les congés des salariés"]
    vectors = embed_texts(texts=texts, dimensions=64)
    assert vectors.shape == (3, 64)
    assert np.isfinite(vectors).all()
    assert_unit_rows(vectors)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


def test_tfidf_falls_back_when_the_vocabulary_is_smaller_than_the_dimensions():
    rng = np.random.default_rng(1)
    texts = [" ".join(rng.choice(["dette", "bilan", "paie"], size=4)) for _ in range(200)]
    vectors = embed_texts(texts=texts, dimensions=64)
    assert vectors.shape == (200, 64)
    assert_unit_rows(vectors)
    np.testing.assert_array_equal(vectors, embed_texts(texts=texts, dimensions=64))


def test_texts_without_words_get_zero_rows():
    vectors = embed_texts(texts=["la dette bancaire", "", "  ?! ", "la dette du groupe"], dimensions=8)
    assert not vectors[1].any() and not vectors[2].any()
    assert_unit_rows(vectors[[0, 3]])
    assert not embed_texts(texts=["", "..."], dimensions=8).any()


def test_no_texts_give_an_empty_array():
    vectors = embed_texts(texts=[], dimensions=8)
    assert vectors.shape == (0, 8)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(texts=["a b"], backend="word2vec"), "backend"),
        (dict(texts=["a b"], dimensions=0), "dimensions"),
        (dict(texts=["a b", None]), r"texts\[1\]"),
        (dict(texts=["a b"], backend="openai"), "model"),
        (dict(texts=["a b"], backend="openai", model="m", batch_size=0), "batch_size"),
    ],
)
def test_invalid_arguments_are_rejected(arguments, message):
    with pytest.raises(ValueError, match=message):
        embed_texts(**arguments)


# OpenAI-compatible backend


class ScriptedEmbeddings(BaseHTTPRequestHandler):
    """``POST /v1/embeddings``: a 4-dimensional vector per text, sent back in reverse order."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        status, payload = self.server.script(body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def vector_of(text: str) -> list[float]:
    return [float(len(text)), float(text.count("a")), 1.0, float(len(text.split()))]


def embeddings_payload(body: dict) -> tuple[int, dict]:
    data = [
        {"object": "embedding", "index": index, "embedding": vector_of(text)}
        for index, text in enumerate(body["input"])
    ]
    return 200, {
        "object": "list",
        "model": body["model"],
        "data": data[::-1],
        "usage": {"prompt_tokens": 1, "total_tokens": 1},
    }


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedEmbeddings)
    httpd.requests = []
    httpd.script = embeddings_payload
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    httpd.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def embed_remote(server, texts, **extra):
    arguments = dict(
        texts=texts,
        backend="openai",
        base_url=server.base_url,
        api_key="test",
        model="embedder",
        max_attempts=1,
    )
    return embed_texts(**{**arguments, **extra})


def test_openai_backend_sends_batches_and_keeps_the_order_of_the_texts(server):
    texts = ["une phrase", "la dette", "bilan annuel de la société", "paie", "a a a"]
    vectors = embed_remote(server, texts, batch_size=2)
    assert [request["input"] for request in server.requests] == [texts[0:2], texts[2:4], texts[4:]]
    assert {request["model"] for request in server.requests} == {"embedder"}
    expected = np.array([vector_of(t) for t in texts], dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)


def test_openai_backend_does_not_send_blank_texts_and_gives_them_zero_rows(server):
    vectors = embed_remote(server, ["la dette", "   ", "", "le bilan"])
    assert server.requests[0]["input"] == ["la dette", "le bilan"]
    assert vectors.shape == (4, 4)
    assert not vectors[1].any() and not vectors[2].any()
    assert_unit_rows(vectors[[0, 3]])


def test_openai_backend_reports_a_refused_request_as_a_permanent_error(server):
    server.script = lambda body: (
        400,
        {"error": {"message": "unknown model", "type": "invalid_request_error"}},
    )
    with pytest.raises(EmbeddingError, match=r"refused the request \(HTTP 400: unknown model\)") as caught:
        embed_remote(server, ["la dette"])
    assert not isinstance(caught.value, TransientEmbeddingError)


def test_openai_backend_reports_a_failing_server_as_transient(server):
    server.script = lambda body: (503, {"error": {"message": "overloaded"}})
    with pytest.raises(
        TransientEmbeddingError, match="embedding server unavailable after 1 attempt: HTTP 503: overloaded"
    ):
        embed_remote(server, ["la dette"])
    assert len(server.requests) == 1


def test_openai_backend_retries_a_failing_server_up_to_max_attempts(server):
    replies = iter([(503, {"error": {"message": "overloaded"}})])
    server.script = lambda body: next(replies, None) or embeddings_payload(body)
    vectors = embed_remote(server, ["la dette"], max_attempts=2)
    assert len(server.requests) == 2
    assert_unit_rows(vectors)


def test_openai_backend_rejects_a_reply_with_missing_vectors(server):
    def short(body):
        status, payload = embeddings_payload(body)
        payload["data"] = payload["data"][1:]
        return status, payload

    server.script = short
    with pytest.raises(EmbeddingError, match="1 vectors for 2 texts"):
        embed_remote(server, ["la dette", "le bilan"])


def test_openai_backend_reports_an_unreachable_server_as_transient():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransientEmbeddingError):
        embed_texts(
            texts=["la dette"],
            backend="openai",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="test",
            model="embedder",
            max_attempts=1,
            timeout=2.0,
        )


def test_openai_backend_returns_the_scripted_servers_vectors_after_a_rate_limit():
    texts = ["la dette bancaire", "les congés payés"]
    with ScriptedLLMServer() as llm:
        llm.enqueue("429")
        vectors = embed_texts(
            texts=texts, backend="openai", base_url=llm.base_url, api_key="test", model="m", max_attempts=2
        )
        assert [call.path for call in llm.calls] == ["/v1/embeddings", "/v1/embeddings"]
    np.testing.assert_allclose(vectors, [fake_embedding(t) for t in texts], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fault", ["invalid_json", "truncated"])
def test_openai_backend_reports_an_unreadable_reply_as_transient(fault):
    with ScriptedLLMServer() as llm:
        llm.enqueue(fault)
        with pytest.raises(TransientEmbeddingError, match="reply body is not JSON"):
            embed_texts(
                texts=["la dette"],
                backend="openai",
                base_url=llm.base_url,
                api_key="test",
                model="m",
                max_attempts=1,
            )
