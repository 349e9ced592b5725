"""inference.reliability.calibration: Platt's map against scikit-learn's logistic regression and
Platt's targets by hand, the cross-fitting (no label's prediction fitted on it), the judge's mean
over bins."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import expit, logit
from sklearn.linear_model import LogisticRegression

from inference.reliability.calibration import (
    IDENTITY,
    MIN_LABELS,
    Platt,
    crossfit,
    fit_platt,
    folds_of,
    histogram,
)


def _judge(seed: int, n: int, *, k: float) -> tuple[np.ndarray, np.ndarray]:
    """Labels drawn from sigmoid(z) and a judge whose logits are k times too large."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 2, n)
    y = (rng.random(n) < expit(z)).astype(float)
    return expit(k * z), y


@pytest.mark.parametrize("k", [1.0, 3.0, 1 / 3])
def test_platts_map_undoes_logits_k_times_too_large(k):
    c, y = _judge(1, 4000, k=k)
    fitted = fit_platt(confidence=c, labels=y)
    assert fitted.slope == pytest.approx(1 / k, rel=0.1)
    assert abs(fitted.intercept) < 0.15


def test_platts_map_is_the_maximum_likelihood_fit_on_platts_targets_by_hand():
    c, y = _judge(2, 300, k=2.0)
    fitted = fit_platt(confidence=c, labels=y)
    ones, zeros = y.sum(), (1 - y).sum()
    target = np.where(y == 1, (ones + 1) / (ones + 2), 1 / (zeros + 2))
    s = logit(c)
    p = expit(fitted.slope * s + fitted.intercept)
    # The likelihood's gradient vanishes at the fit.
    assert float(np.sum((p - target) * s)) == pytest.approx(0, abs=1e-6)
    assert float(np.sum(p - target)) == pytest.approx(0, abs=1e-6)
    # With 0/1 targets it is scikit-learn's unpenalised logistic regression on the logit; Platt's
    # targets pull it a little toward the base rate, so the two are close on 300 labels.
    reference = LogisticRegression(C=1e12, max_iter=1000).fit(s[:, None], y)
    assert fitted.slope == pytest.approx(float(reference.coef_[0][0]), rel=0.05)


def test_labels_all_equal_or_separated_leave_a_finite_map():
    all_ones = fit_platt(confidence=np.full(30, 0.9), labels=np.ones(30))
    # The targets are all 31/32: a constant probability (slope 0), finite.
    assert all_ones.slope == pytest.approx(0, abs=1e-9)
    assert float(all_ones.apply([0.9])[0]) == pytest.approx(31 / 32)
    separated = fit_platt(
        confidence=np.r_[np.full(15, 0.9), np.full(15, 0.1)], labels=np.r_[np.ones(15), np.zeros(15)]
    )
    assert np.isfinite(separated.slope) and separated.slope > 1
    assert float(separated.apply([0.9])[0]) == pytest.approx(16 / 17, rel=1e-6)


def test_below_the_least_labels_the_map_is_the_identity():
    c, y = _judge(3, MIN_LABELS - 1, k=3.0)
    assert fit_platt(confidence=c, labels=y) == IDENTITY
    assert list(IDENTITY.apply(c)) == list(c)
    assert Platt.from_json(fit_platt(confidence=c, labels=y).as_json()) == IDENTITY
    assert Platt.from_json(None) == IDENTITY


def test_cross_fitting_never_predicts_a_label_with_a_map_fitted_on_it():
    c, y = _judge(4, 60, k=3.0)
    clusters = np.arange(60) // 3
    fit = crossfit(confidence=c, labels=y, clusters=clusters)
    folds = folds_of(clusters)
    assert fit.fitted and len(fit.maps) == 5
    # A cluster's units share their fold.
    for g in range(20):
        assert len(set(folds[clusters == g])) == 1
    for k, fold_map in enumerate(fit.maps):
        inside = folds == k
        again = fit_platt(confidence=c[~inside], labels=y[~inside], least=1)
        assert fold_map == again
        assert fit.labeled[inside] == pytest.approx(again.apply(c[inside]))
    assert fit.whole == fit_platt(confidence=c, labels=y)


def test_the_judges_mean_is_the_folds_means_weighted_by_their_shares():
    c, y = _judge(5, 40, k=2.0)
    fit = crossfit(confidence=c, labels=y)
    everything = np.linspace(0.01, 0.99, 500)
    w = np.random.default_rng(0).uniform(1, 5, 40)
    shares = np.bincount(fit.folds, weights=w, minlength=len(fit.maps))
    means = [float(np.mean(m.apply(everything))) for m in fit.maps]
    assert fit.mean_of(everything, weights=w) == pytest.approx(float(np.dot(shares, means) / shares.sum()))
    # The labeled rows of one group only: their folds' shares.
    rows = np.arange(10)
    mine = np.bincount(fit.folds[rows], weights=w[rows], minlength=len(fit.maps))
    assert fit.mean_of(everything, rows=rows, weights=w[rows]) == pytest.approx(
        float(np.dot(mine, means) / mine.sum())
    )


@given(values=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200))
def test_the_bins_keep_the_exact_mean_and_every_unit(values):
    c = np.array(values)
    means, counts = histogram(c)
    assert counts.sum() == c.size
    assert float(np.dot(means, counts)) / c.size == pytest.approx(float(c.mean()), abs=1e-12)
    assert np.all((means >= 0) & (means <= 1))


def test_bins_on_the_logit_keep_an_overconfident_judges_sure_units_apart():
    # 0.9991 and 0.99999 are one bin of the probability's thousandths, two of the logit's.
    means, _ = histogram(np.array([0.9991, 0.99999]))
    assert means.size == 2
