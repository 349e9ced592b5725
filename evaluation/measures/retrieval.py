"""Retrieval ranking metrics against gold chunk ids (their means over answers, with a bootstrap
over questions, are ``inference.estimators.bootstrap``'s).

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

DEFAULT_KS = (1, 3, 5, 10)
METRICS = ("precision", "recall", "ndcg", "mrr")


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
