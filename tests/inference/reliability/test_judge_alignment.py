"""inference.reliability.judge_alignment: a judge against the human labels, with intervals, and the Dorner
ceiling of what a judge agreeing that often could save."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm
from sklearn.metrics import cohen_kappa_score

from inference.intervals import wilson
from inference.reliability.judge_alignment import (
    _ceiling_rho2,
    alignment,
    clustered_wilson,
    dorner_ceiling,
    phi,
    saving_factor,
)

Q = float(norm.ppf(0.975))


def labels(seed: int, n: int, prevalence: float, agreement: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prevalence).astype(int)
    return y, np.where(rng.random(n) < agreement, y, 1 - y)


def test_figures_on_a_table_worked_by_hand():
    # tp 40, fp 5, fn 10, tn 45, one unit per question.
    y = np.array([1] * 40 + [0] * 5 + [1] * 10 + [0] * 45)
    f = np.array([1] * 40 + [1] * 5 + [0] * 10 + [0] * 45)
    found = alignment(y=y, yhat=f, clusters=np.arange(100))
    assert found.confusion == {"tp": 40, "fp": 5, "fn": 10, "tn": 45}
    assert found.agreement.mean == 0.85
    assert (found.agreement.lo, found.agreement.hi) == pytest.approx(wilson(p=0.85, n=100, q=Q))
    assert found.sensitivity.mean == 40 / 50 and found.specificity.mean == 45 / 50
    assert (found.sensitivity.lo, found.sensitivity.hi) == pytest.approx(wilson(p=0.8, n=50, q=Q))
    assert found.kappa.value == pytest.approx(cohen_kappa_score(y, f))
    rho = (40 * 45 - 5 * 10) / math.sqrt(50 * 50 * 45 * 55)
    assert found.factor.value == pytest.approx(1 / (1 - rho**2))
    assert found.kappa.lo < found.kappa.value < found.kappa.hi
    assert found.factor.lo <= found.factor.value <= found.factor.hi
    # The ceiling is over every table with that agreement and human rate: at least this one.
    assert found.ceiling.value >= found.factor.value - 1e-9


def test_the_bootstrap_is_seeded_and_resamples_clusters():
    y, f = labels(1, 300, 0.6, 0.85)
    questions = np.arange(300) // 6
    one = alignment(y=y, yhat=f, clusters=questions)
    again = alignment(y=y, yhat=f, clusters=questions)
    assert one.kappa == again.kappa and one.ceiling == again.ceiling
    assert one.clusters == 50 and one.resamples == 1000


def test_units_of_one_cluster_count_as_fewer_than_their_number():
    # Every question's six answers judged alike: the agreement is worth about the questions.
    rng = np.random.default_rng(2)
    per_question = rng.random(40) < 0.8
    hits = np.repeat(per_question, 6)
    clustered = clustered_wilson(hits=hits, clusters=np.repeat(np.arange(40), 6), alpha=0.05)
    alone = clustered_wilson(hits=hits, clusters=np.arange(240), alpha=0.05)
    assert (alone.lo, alone.hi) == pytest.approx(wilson(p=hits.mean(), n=240, q=Q))
    assert (clustered.lo, clustered.hi) == pytest.approx(wilson(p=hits.mean(), n=40, q=Q), rel=1e-9)
    assert clustered.hi - clustered.lo > alone.hi - alone.lo


def test_saving_factor_and_phi():
    assert saving_factor(0.0) == 1.0 and saving_factor(-0.3) == 1.0
    assert saving_factor(math.sqrt(0.5)) == pytest.approx(2.0)
    assert math.isinf(saving_factor(1.0)) and math.isnan(saving_factor(math.nan))
    assert math.isnan(phi(tp=3, fp=2, fn=0, tn=0))


def ceiling_by_enumeration(agreement: float, rate: float) -> float:
    best = 0.0
    for fp in np.linspace(0, 1 - agreement, 4001):
        fn = 1 - agreement - fp
        tp, tn = rate - fn, 1 - rate - fp
        if min(tp, tn, fn, fp) < -1e-12:
            continue
        value = phi(tp=tp, fp=fp, fn=fn, tn=tn)
        if not math.isnan(value) and value > 0:
            best = max(best, value * value)
    return 1 / (1 - best)


@pytest.mark.parametrize(
    ("agreement", "rate"), list(itertools.product([0.6, 0.8, 0.9, 0.97], [0.2, 0.5, 0.85]))
)
def test_the_ceiling_is_the_largest_factor_over_the_tables_of_that_agreement_and_rate(agreement, rate):
    assert dorner_ceiling(agreement=agreement, rate=rate) == pytest.approx(
        ceiling_by_enumeration(agreement, rate), rel=1e-4
    )


def ceiling_on_a_grid(agreement: np.ndarray, rate: np.ndarray, points: int) -> np.ndarray:
    """rho^2's largest value over ``points`` shares of false positives among the disagreements."""
    d, p = 1 - agreement, rate
    low, high = np.maximum(0.0, d - p), np.minimum(d, 1 - p)
    x = low[:, None] + (high - low)[:, None] * np.linspace(0.0, 1.0, points)
    q = (p - d)[:, None] + 2 * x
    cov = (p * (1 - p) - d * (1 - p))[:, None] + x * (1 - 2 * p)[:, None]
    denominator = (p * (1 - p))[:, None] * q * (1 - q)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho2 = np.where((denominator > 1e-15) & (cov > 0), cov * cov / denominator, 0.0)
    return np.where(high >= low - 1e-12, np.max(np.minimum(rho2, 1.0), axis=1), np.nan)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=1, max_size=40))
def test_the_ceiling_is_the_maximum_a_fine_grid_approaches(pairs):
    """Over bootstrap-like arrays of (agreement, rate): never below a grid of 20,001 points, and
    within what such a grid can miss of the maximum."""
    agreement, rate = (np.array(column) for column in zip(*pairs, strict=True))
    exact = _ceiling_rho2(agreement, rate)
    grid = ceiling_on_a_grid(agreement, rate, 20_001)
    assert np.array_equal(np.isnan(exact), np.isnan(grid))
    kept = ~np.isnan(exact)
    assert np.all((exact >= 0) & (exact <= 1) | ~kept)
    # Never below, but for rounding: at a rate 1e-7 from 1 and an agreement 1e-16 from 1 the two
    # formulas' arithmetic differ by 5.5e-10 at the same end of the range.
    assert np.all(exact[kept] >= grid[kept] - 1e-9)
    assert np.allclose(exact[kept], grid[kept], atol=1e-6)


@pytest.mark.parametrize("rate", [0.5, 0.6, 0.75, 0.9, 0.99])
def test_a_judge_no_better_than_the_rate_it_measures_saves_at_most_half_the_labels(rate):
    # Dorner, Nastl and Hardt (2025), Theorem 6 and Corollary 7: agreement <= rate, factor <= 2.
    for agreement in np.linspace(0.5, rate, 7):
        assert dorner_ceiling(agreement=float(agreement), rate=rate) <= 2.0 + 1e-9
    assert math.isinf(dorner_ceiling(agreement=1.0, rate=rate))


def test_bad_inputs():
    with pytest.raises(ValueError, match="0/1"):
        alignment(y=[2], yhat=[1], clusters=[1])
    with pytest.raises(ValueError, match="length"):
        alignment(y=[1, 0], yhat=[1], clusters=[1, 2])
    empty = alignment(y=[], yhat=[], clusters=[])
    assert empty.agreement is None and empty.kappa.value is None
