"""Embedding texts for the stratified sample.

Two backends:

- ``"tfidf"`` (default, offline): TF-IDF on word 1-2 grams followed by a truncated SVD (latent
  semantic analysis). Deterministic for the same texts and seed.
- ``"openai"``: any OpenAI-compatible ``/embeddings`` endpoint, through
  ``integrations.openai_compatible`` (the one module that talks to such servers).

Both return float32 arrays whose rows have unit L2 norm, except the rows of texts that carry no
word at all (blank, punctuation only), which are zero: such a text has no direction to normalise.
"""

from __future__ import annotations

import numpy as np
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from integrations import openai_compatible
from integrations.openai_compatible import PermanentError, RetryPolicy, ServiceError, TransientError

BACKENDS = ("tfidf", "openai")

# Below this many texts a term seen once is kept: pruning would leave too few terms to compare texts.
MIN_DF_FROM_TEXTS = 50


# The embedding server's errors are the service's, under this module's names: ``EmbeddingError``
# for any failure (``PermanentError``: refused, or an unusable reply), ``TransientEmbeddingError``
# when the server stayed unreachable, timed out, rate-limited or failing (5xx) on every attempt.
EmbeddingError = ServiceError
TransientEmbeddingError = TransientError


def embed_texts(
    *,
    texts: list[str],
    backend: str = "tfidf",
    dimensions: int = 64,
    seed: int = 0,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    batch_size: int = 256,
    timeout: float = 60.0,
    max_attempts: int = 5,
) -> np.ndarray:
    """Embed ``texts`` as a float32 array of shape ``(len(texts), d)`` with L2-normalised rows.

    ``"tfidf"``: ``d == dimensions``; the same texts and ``seed`` give the same array. When the
    corpus has no more texts or distinct terms than ``dimensions``, an exact SVD replaces the
    randomised one and the missing columns are zero (distances between texts are unchanged).
    ``base_url``, ``api_key``, ``model`` and ``batch_size`` are ignored.

    ``"openai"``: ``model`` is required; ``base_url`` and ``api_key`` default to the SDK's
    ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` environment variables. Texts go in batches of
    ``batch_size``; ``d`` is the model's native size (``dimensions`` is not sent, because many
    OpenAI-compatible servers reject it). Blank texts are not sent (the OpenAI API rejects empty
    inputs) and get zero rows. Each request is tried up to ``max_attempts`` times under the retry
    policy of ``integrations.openai_compatible``, ``timeout`` seconds each. Raises
    :class:`TransientEmbeddingError` when the server stays unavailable, a ``PermanentError`` (an
    :class:`EmbeddingError` too) for any other failure.

    Raises ValueError on an unknown backend or invalid arguments.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: {backend!r} is not one of {', '.join(BACKENDS)}")
    if not isinstance(dimensions, int) or dimensions < 1:
        raise ValueError(f"dimensions: must be a positive integer, got {dimensions!r}")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: must be a positive integer, got {batch_size!r}")
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"texts[{position}]: expected a string, got {type(text).__name__}")
    if backend == "tfidf":
        return _embed_tfidf(texts=texts, dimensions=dimensions, seed=seed)
    if not model:
        raise ValueError("model: required by the openai backend")
    if max_attempts < 1:
        raise ValueError(f"max_attempts: must be at least 1, got {max_attempts!r}")
    return _embed_openai(
        texts=texts,
        base_url=base_url,
        api_key=api_key,
        model=model,
        batch_size=batch_size,
        timeout=timeout,
        max_attempts=max_attempts,
    )


def _embed_tfidf(*, texts: list[str], dimensions: int, seed: int) -> np.ndarray:
    if not texts:
        return np.zeros((0, dimensions), dtype=np.float32)
    matrix = _tfidf_matrix(texts=texts)
    if matrix is None:
        return np.zeros((len(texts), dimensions), dtype=np.float32)
    n_texts, n_terms = matrix.shape
    if min(n_texts, n_terms) > dimensions:
        svd = TruncatedSVD(n_components=dimensions, algorithm="randomized", random_state=seed % 2**32)
        reduced = svd.fit_transform(matrix)
    else:
        reduced = _exact_svd(dense=matrix.toarray().astype(np.float64), dimensions=dimensions)
    return _normalise_rows(np.asarray(reduced, dtype=np.float32))


def _tfidf_matrix(*, texts: list[str]):
    """The TF-IDF matrix (sparse, float32), or None when no text contains a single word."""
    min_dfs = (2, 1) if len(texts) >= MIN_DF_FROM_TEXTS else (1,)
    for min_df in min_dfs:
        vectorizer = TfidfVectorizer(
            ngram_range=(1, 2),
            sublinear_tf=True,
            min_df=min_df,
            # "unicode", not "ascii": ascii folding deletes letters such as "œ" instead of keeping them.
            strip_accents="unicode",
            lowercase=True,
            dtype=np.float32,
        )
        try:
            return vectorizer.fit_transform(texts)
        except ValueError:
            # Raised when no term survives (empty vocabulary, or pruning by min_df removed all).
            continue
    return None


def _exact_svd(*, dense: np.ndarray, dimensions: int) -> np.ndarray:
    """Project ``dense`` on its singular vectors, padded with zero columns up to ``dimensions``."""
    u, s, _ = np.linalg.svd(dense, full_matrices=False)
    rank = min(dimensions, s.shape[0])
    projected = u[:, :rank] * s[:rank]
    # A singular vector's sign is arbitrary; fix it so that equal inputs give equal outputs everywhere.
    signs = np.sign(projected[np.argmax(np.abs(projected), axis=0), np.arange(rank)])
    signs[signs == 0] = 1.0
    projected = projected * signs
    out = np.zeros((dense.shape[0], dimensions), dtype=np.float64)
    out[:, :rank] = projected
    return out


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return np.ascontiguousarray(matrix, dtype=np.float32)


def _embed_openai(
    *,
    texts: list[str],
    base_url: str | None,
    api_key: str | None,
    model: str,
    batch_size: int,
    timeout: float,
    max_attempts: int,
) -> np.ndarray:
    to_send = [position for position, text in enumerate(texts) if text.strip()]
    rows: np.ndarray | None = None
    with openai_compatible.Client(
        base_url=base_url,
        api_key=api_key,
        timeout_s=timeout,
        policy=RetryPolicy(max_attempts=max_attempts),
        name="embedding",
    ) as client:
        for start in range(0, len(to_send), batch_size):
            positions = to_send[start : start + batch_size]
            vectors = _as_matrix(client.embed(model=model, inputs=[texts[p] for p in positions]))
            if rows is None:
                rows = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            elif vectors.shape[1] != rows.shape[1]:
                width, earlier = vectors.shape[1], rows.shape[1]
                raise PermanentError(
                    f"embedding server: vectors of {width} dimensions after {earlier} earlier"
                )
            rows[positions] = vectors
    if rows is None:
        # Nothing was sent, so the model's size is unknown: a zero-width array says so honestly.
        return np.zeros((len(texts), 0), dtype=np.float32)
    return _normalise_rows(rows)


def _as_matrix(vectors: list[list[float]]) -> np.ndarray:
    try:
        matrix = np.array(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise PermanentError(f"embedding server: malformed vectors ({exc})") from exc
    if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
        raise PermanentError("embedding server: vectors are empty, ragged or not finite")
    return matrix
