"""Retrieval ranking metrics against gold chunk ids, and means with a bootstrap over questions.

Pure functions over ranked ids and arrays; ``evaluation.measures.evidence`` reads the campaign.
Relevance is binary: a retrieved chunk is relevant when its id is one of the question's gold
chunk ids. For one answer's ranking r_1, r_2, ... and the gold set G (Manning, Raghavan and
Schütze 2008, ch. 8; Järvelin and Kekäläinen 2002 for nDCG; Voorhees 1999 for MRR):

- precision@k = |{r_1..r_k} ∩ G| / k
- recall@k = |{r_1..r_k} ∩ G| / |G|
- nDCG@k = DCG@k / IDCG@k, DCG@k = sum over i <= k of rel_i / log2(i + 1), IDCG@k the DCG of
  the ideal ranking (min(k, |G|) relevant chunks first)
- reciprocal rank = 1 / the rank of the first relevant chunk (0 when none is retrieved); its
  mean over answers is the MRR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_KS = (1, 3, 5, 10)
METRICS = ("precision", "recall", "ndcg", "mrr")
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def ranking_metrics(*, ranked: Sequence[str], gold: set[str], ks: Sequence[int]) -> dict[str, float]:
    """precision@k, recall@k and nDCG@k for each k of ``ks`` (keys ``precision@5`` ...) and the
    reciprocal rank (``mrr``) of one ranking against the gold ids. ``gold`` must not be empty."""
    if not gold:
        raise ValueError("gold must not be empty")
    relevant = [chunk in gold for chunk in ranked]
    result: dict[str, float] = {}
    for k in ks:
        hits = sum(relevant[:k])
        dcg = sum(1 / math.log2(i + 2) for i, rel in enumerate(relevant[:k]) if rel)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
        result[f"precision@{k}"] = hits / k
        result[f"recall@{k}"] = hits / len(gold)
        result[f"ndcg@{k}"] = dcg / ideal
    first = next((i for i, rel in enumerate(relevant) if rel), None)
    result["mrr"] = 0.0 if first is None else 1 / (first + 1)
    return result


def metric_names(ks: Sequence[int]) -> list[str]:
    """The keys of ``ranking_metrics`` in reading order."""
    return [f"{metric}@{k}" for metric in ("precision", "recall", "ndcg") for k in ks] + ["mrr"]


@dataclass(frozen=True)
class Mean:
    """A mean over answers with a percentile bootstrap interval over questions (the unit that
    is resampled), ``alpha`` its level: ``n`` answers of ``questions`` questions."""

    mean: float | None
    lo: float | None
    hi: float | None
    n: int
    questions: int
    alpha: float
    method: str = "percentile bootstrap over questions"

    def as_dict(self) -> dict[str, object]:
        return {
            "mean": self.mean,
            "lo": self.lo,
            "hi": self.hi,
            "n": self.n,
            "questions": self.questions,
            "alpha": self.alpha,
            "method": self.method,
        }


def question_bootstrap_means(
    *,
    values: np.ndarray,
    questions: Sequence[object],
    alpha: float = 0.05,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> list[Mean]:
    """The mean over answers of each column of ``values`` (answers x measures), each with a
    percentile bootstrap interval that resamples questions with replacement and keeps each
    drawn question's answers together (answers to one question are not independent; Davison
    and Hinkley 1997, section 3.8). The statistic of a resample is the mean over all its
    answers. Reproducible from ``seed``; the same draws serve every column."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 2 or values.shape[0] != len(questions):
        raise ValueError("values must be answers x measures, one question per answer")
    measures = values.shape[1]
    n = values.shape[0]
    if n == 0:
        return [Mean(None, None, None, 0, 0, alpha) for _ in range(measures)]
    codes: dict[object, int] = {}
    index = np.array([codes.setdefault(q, len(codes)) for q in questions])
    groups = len(codes)
    sums = np.zeros((groups, measures))
    np.add.at(sums, index, values)
    counts = np.bincount(index, minlength=groups).astype(float)
    means = values.mean(axis=0)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, groups, size=(resamples, groups))
    # How often each question is drawn in each resample, then sums and counts by matrix products.
    weights = np.zeros((resamples, groups))
    np.add.at(weights, (np.repeat(np.arange(resamples), groups), draws.ravel()), 1.0)
    boot = (weights @ sums) / (weights @ counts)[:, None]
    lo = np.quantile(boot, alpha / 2, axis=0)
    hi = np.quantile(boot, 1 - alpha / 2, axis=0)
    return [
        Mean(
            mean=float(means[j]),
            lo=float(lo[j]),
            hi=float(hi[j]),
            n=n,
            questions=groups,
            alpha=alpha,
        )
        for j in range(measures)
    ]
