"""Retrieval ranking metrics against gold chunk ids, and the bootstrap over questions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluation.measures.retrieval import metric_names, ranking_metrics
from inference.estimators.bootstrap import question_bootstrap_means


def test_ranking_metrics_by_hand():
    # Gold {a, c}; ranking b, a, d, c.
    m = ranking_metrics(ranked=["b", "a", "d", "c"], gold={"a", "c"}, ks=[1, 2, 4])
    assert (m["precision@1"], m["precision@2"], m["precision@4"]) == (0.0, 0.5, 0.5)
    assert (m["recall@1"], m["recall@2"], m["recall@4"]) == (0.0, 0.5, 1.0)
    ideal2 = 1 + 1 / math.log2(3)
    assert m["ndcg@2"] == pytest.approx((1 / math.log2(3)) / ideal2)
    assert m["ndcg@4"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / ideal2)
    assert m["mrr"] == 0.5


def test_a_perfect_ranking_scores_one_and_a_ranking_without_gold_zero():
    perfect = ranking_metrics(ranked=["a", "c", "x"], gold={"a", "c"}, ks=[2])
    assert (perfect["precision@2"], perfect["recall@2"], perfect["ndcg@2"], perfect["mrr"]) == (1, 1, 1, 1)
    none = ranking_metrics(ranked=["x", "y"], gold={"a"}, ks=[5])
    assert (none["precision@5"], none["recall@5"], none["ndcg@5"], none["mrr"]) == (0, 0, 0, 0)


def test_precision_counts_k_even_when_fewer_chunks_were_retrieved():
    assert ranking_metrics(ranked=["a"], gold={"a"}, ks=[5])["precision@5"] == 0.2


def test_metric_names_follow_the_order_of_the_report():
    assert metric_names([1, 5]) == [
        "precision@1", "precision@5", "recall@1", "recall@5", "ndcg@1", "ndcg@5", "mrr",
    ]  # fmt: skip


def test_the_bootstrap_keeps_a_questions_answers_together():
    # Two questions, every answer of one scores 1 and of the other 0: a resample holds each
    # question whole, so the means it can give are 0, 1/3, 2/3 or 1 weighted by answers.
    values = np.array([[1.0], [1.0], [0.0], [0.0], [0.0], [0.0]])
    questions = ["q1", "q1", "q2", "q2", "q2", "q2"]
    (mean,) = question_bootstrap_means(values=values, questions=questions, resamples=500)
    assert mean.mean == pytest.approx(1 / 3)
    assert (mean.lo, mean.hi) == (0.0, 1.0)
    assert (mean.n, mean.questions) == (6, 2)


def test_the_bootstrap_interval_narrows_with_more_questions_and_is_reproducible():
    rng = np.random.default_rng(1)
    values = rng.random((400, 2))
    questions = [i // 4 for i in range(400)]
    first = question_bootstrap_means(values=values, questions=questions)
    again = question_bootstrap_means(values=values, questions=questions)
    assert first == again
    for column, mean in enumerate(first):
        assert mean.lo < values[:, column].mean() < mean.hi
        assert mean.hi - mean.lo < 0.1


def test_no_answer_gives_no_mean():
    (mean,) = question_bootstrap_means(values=np.zeros((0, 1)), questions=[])
    assert mean.mean is None and mean.n == 0
