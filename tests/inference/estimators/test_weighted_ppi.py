"""inference.estimators.weighted_ppi: inverse-probability PPI++ on the judge's confidence, against a case
worked by hand, against ppi_py where they coincide, and its design-based coverage."""

from __future__ import annotations

import math

import numpy as np
import ppi_py
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from inference import notes
from inference.designs import inclusion
from inference.estimators.weighted_ppi import (
    CONFIDENCE_FLOOR_SHARE,
    PPI_WEIGHTED,
    weighted_lambda,
    weighted_ppi,
)


def test_hand_computed_case():
    # r = y - c = -0.9, 0.8, 0.4; weights 2, 2, 1 (N_hat 5); Hajek mean of r: 0.2 / 5 = 0.04;
    # judge's mean confidence over the 5 units: 2.6 / 5 = 0.52; estimate 0.56.
    # Variance: 3/2 x [0.5 x 4 x 0.94^2 + 0.5 x 4 x 0.76^2 + 0] / 25 = 0.175344, above the
    # confidences' floor (3/4 x 3/2 x [2 x 0.09 + 2 x 0.16] / 25 = 0.0225).
    interval = weighted_ppi(
        y=[0, 1, 1],
        confidence=[0.9, 0.2, 0.6],
        pi=[0.5, 0.5, 1.0],
        confidence_all=[0.9, 0.2, 0.6, 0.8, 0.1],
        alpha=0.05,
        lam=1.0,
    )
    half = student_t.ppf(0.975, 2) * math.sqrt(0.175344)
    assert interval.method == PPI_WEIGHTED
    assert interval.mean == pytest.approx(0.56)
    assert interval.se == pytest.approx(math.sqrt(0.175344))
    # 0.56 -/+ 1.80 is cut to [0, 1].
    assert half > 0.56 and (interval.lo, interval.hi) == (0.0, 1.0)
    assert (interval.n, interval.N, interval.df, interval.lam) == (3, 5, 2, 1.0)
    assert notes.CONFIDENCE_FLOOR not in interval.note


def test_residuals_smaller_than_the_confidences_imply_keep_a_share_of_their_variance():
    # r = y - c = 0.1, -0.2, 0.4: the labels agree with the confidences more closely than their
    # Bernoulli variances c (1 - c) = 0.09, 0.16, 0.24 say they should. Observed variance
    # 3/2 x [2 x 0.06^2 + 2 x 0.24^2] / 25 = 0.007344; the floor 3/4 x 3/2 x [2 x 0.09 + 2 x 0.16]
    # / 25 = 0.0225 (the unit drawn with certainty adds nothing to either).
    interval = weighted_ppi(
        y=[1, 0, 1],
        confidence=[0.9, 0.2, 0.6],
        pi=[0.5, 0.5, 1.0],
        confidence_all=[0.9, 0.2, 0.6, 0.8, 0.1],
        alpha=0.05,
        lam=1.0,
    )
    assert CONFIDENCE_FLOOR_SHARE == 0.75
    assert interval.mean == pytest.approx(0.56)
    assert interval.se == pytest.approx(math.sqrt(0.0225))
    assert notes.CONFIDENCE_FLOOR in interval.note and interval.df == 2


def _corner_coverage(*, reps: int, seed: int) -> float:
    """Coverage in the grid's corner: a theme of N = 500 at a rate of about 97%, a calibrated
    judge of 90% accuracy, 300 labels drawn by its confidence: most of the theme is labelled,
    what is left are units the judge is sure of, drawn at the floor rate."""
    rng = np.random.default_rng(seed)
    N, d, covered = 500, 2 * norm.ppf(0.9), 0
    for _ in range(reps):
        log_odds = 4.5 + 0.8 * rng.normal(size=N)
        truth = (rng.random(N) < 1 / (1 + np.exp(-log_odds))).astype(float)
        signal = (2 * truth - 1) * d / 2 + rng.normal(size=N)
        c_all = 1 / (1 + np.exp(-(log_odds + d * signal)))
        pi = inclusion.confidence_probabilities(confidence=c_all, budget=300)
        drawn = rng.random(N) < pi
        interval = weighted_ppi(
            y=truth[drawn], confidence=c_all[drawn], pi=pi[drawn], confidence_all=c_all, alpha=0.05
        )
        covered += interval.lo <= truth.mean() <= interval.hi
    return covered / reps


def test_a_small_theme_labelled_past_half_keeps_coverage_where_only_sure_units_are_left(monkeypatch):
    # 300 replications: two binomial standard errors of 95% are 2.5 points.
    assert _corner_coverage(reps=300, seed=11) >= 0.93
    monkeypatch.setattr("inference.estimators.weighted_ppi.CONFIDENCE_FLOOR_SHARE", 0.0)
    assert _corner_coverage(reps=300, seed=11) < 0.91  # what the floor answers: 89%


@pytest.mark.parametrize("lam", [0.0, 0.4, 1.0])
def test_point_estimate_is_ppi_py_with_weights_and_every_unit_as_the_unlabeled_set(lam):
    rng = np.random.default_rng(7)
    c_all = rng.random(200)
    pi = inclusion.confidence_probabilities(confidence=c_all, budget=40)
    drawn = inclusion.poisson_draw(probabilities=pi, seed=1)
    y = (rng.random(200) < c_all).astype(float)[drawn]
    ours = weighted_ppi(y=y, confidence=c_all[drawn], pi=pi[drawn], confidence_all=c_all, alpha=0.1, lam=lam)
    theirs = ppi_py.ppi_mean_pointestimate(y, c_all[drawn], c_all, lam=lam, w=1 / pi[drawn])
    assert ours.mean == pytest.approx(float(np.ravel(theirs)[0]), rel=1e-12)


def test_equal_probabilities_give_the_simple_random_sample_variance_with_finite_population_factor():
    rng = np.random.default_rng(3)
    N, n = 500, 50
    c_all = rng.random(N)
    labeled = rng.choice(N, size=n, replace=False)
    y = (rng.random(n) < c_all[labeled]).astype(float)
    interval = weighted_ppi(
        y=y, confidence=c_all[labeled], pi=np.full(n, n / N), confidence_all=c_all, alpha=0.05, lam=1.0
    )
    residual = y - c_all[labeled]
    assert interval.mean == pytest.approx(c_all.mean() + residual.mean())
    assert interval.se is not None
    assert interval.se**2 == pytest.approx((1 - n / N) * np.var(residual, ddof=1) / n)


def test_lambda_zero_is_the_hajek_mean_of_the_labels():
    interval = weighted_ppi(
        y=[1, 0, 1, 1],
        confidence=[0.2, 0.3, 0.9, 0.1],
        pi=[0.5, 0.25, 0.5, 1.0],
        confidence_all=[0.5] * 10,
        alpha=0.05,
        lam=0.0,
    )
    assert interval.mean == pytest.approx((2 + 0 + 2 + 1) / (2 + 4 + 2 + 1))


def test_fitted_lambda_is_the_weighted_regression_slope_clipped():
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    c = np.array([0.8, 0.3, 0.6, 0.1, 0.4])
    pi = np.array([0.5, 0.5, 0.5, 0.5, 0.5])
    # equal weights: the ordinary least-squares slope
    slope = np.cov(y, c, bias=True)[0, 1] / np.var(c)
    assert weighted_lambda(y=y, c=c, pi=pi) == pytest.approx(min(1.0, slope))
    assert weighted_lambda(y=1 - y, c=c, pi=pi) == 0.0  # a judge pointing the wrong way
    assert weighted_lambda(y=y, c=c, pi=np.ones(5)) == 1.0  # a census: lambda does not matter


def test_degenerate_and_bad_inputs():
    assert math.isnan(weighted_ppi(y=[], confidence=[], pi=[], confidence_all=[0.5], alpha=0.05).mean)
    one = weighted_ppi(y=[1], confidence=[0.7], pi=[0.5], confidence_all=[0.7, 0.2], alpha=0.05)
    assert math.isinf(one.halfwidth)
    with pytest.raises(ValueError, match="pi"):
        weighted_ppi(y=[1, 0], confidence=[0.7, 0.1], pi=[0.0, 0.5], confidence_all=[0.7, 0.1], alpha=0.05)
    with pytest.raises(ValueError, match="confidence has"):
        weighted_ppi(y=[1, 0], confidence=[0.7], pi=[0.5, 0.5], confidence_all=[0.7, 0.1], alpha=0.05)


@pytest.mark.parametrize("sharpen", [1.0, 3.0])
def test_design_based_coverage_on_a_fixed_population_calibrated_or_not(sharpen):
    """One population; only the Poisson sample varies. 95% intervals cover about 95% of the time
    whether the confidence is calibrated (sharpen 1) or overconfident (sharpen 3)."""
    rng = np.random.default_rng(11)
    N = 600
    latent = rng.normal(0.8, 2.0, size=N)
    y_all = (rng.random(N) < 1 / (1 + np.exp(-latent))).astype(float)
    c_all = 1 / (1 + np.exp(-sharpen * latent))
    pi = inclusion.confidence_probabilities(confidence=c_all, budget=80)
    covered = []
    for seed in range(400):
        drawn = inclusion.poisson_draw(probabilities=pi, seed=seed)
        interval = weighted_ppi(
            y=y_all[drawn], confidence=c_all[drawn], pi=pi[drawn], confidence_all=c_all, alpha=0.05
        )
        covered.append(interval.lo <= y_all.mean() <= interval.hi)
    assert np.mean(covered) >= 0.92


def test_labels_all_equal_keep_the_variance_of_the_smoothed_rate():
    # A judge that says 0.9 everywhere and 12 labels all 1: the residuals are all 0.1, with no
    # variance, but the rate is not surely 0.9 + 0.1.
    interval = weighted_ppi(
        y=np.ones(12),
        confidence=np.full(12, 0.9),
        pi=np.full(12, 0.1),
        confidence_all=np.full(120, 0.9),
        alpha=0.05,
    )
    assert interval.note.startswith("all labels are equal")
    assert interval.halfwidth > 0.05
    assert interval.lo < 1.0


def test_a_verdict_as_the_prediction_with_no_disagreement_seen_keeps_the_rectifier_floor():
    # Ten labels drawn at pi = 0.2 from a stratum the judge called 1, two from one it called 0,
    # and the judge right on all twelve: the residuals are all 0. By hand: the smoothed
    # disagreement rate (0 + z^2/2) / (12 + z^2) and its variance through the design.
    y = np.array([1.0] * 10 + [0.0] * 2)
    pi = np.array([0.2] * 10 + [0.5] * 2)
    interval = weighted_ppi(
        y=y, confidence=y, pi=pi, confidence_all=np.array([1.0] * 50 + [0.0] * 4), alpha=0.05
    )
    z2 = 1.959963984540054**2
    rate = (z2 / 2) / (12 + z2)
    w = 1 / pi
    variance = 12 / 11 * rate * (1 - rate) * float(np.sum((1 - pi) * w**2)) / float(np.sum(w)) ** 2
    assert interval.note.startswith("rare disagreements or equal labels: rectifier variance floored")
    assert interval.mean == pytest.approx(50 / 54)
    assert interval.se == pytest.approx(math.sqrt(variance))
    assert interval.halfwidth > 0.05


def test_labels_all_drawn_with_certainty_keep_a_simple_random_sample_s_floor():
    # Two labels drawn with certainty, 300 other units left: the design's factor is zero, the
    # floor takes (1 - n/N) / n instead, so the interval is not a point.
    c_all = np.array([1.0] * 200 + [0.0] * 102)
    interval = weighted_ppi(
        y=[1.0, 0.0], confidence=[1.0, 0.0], pi=[1.0, 1.0], confidence_all=c_all, alpha=0.05
    )
    z2 = 1.959963984540054**2
    rate = (z2 / 2) / (2 + z2)
    assert interval.se == pytest.approx(math.sqrt((1 - 2 / 302) / 2 * rate * (1 - rate)))
    assert interval.hi > interval.lo


def test_an_unjudged_label_does_not_switch_the_verdict_floor_off():
    # 20 labels agreeing with 0/1 verdicts, plus one the judge did not label (c = 1/2): the
    # floor still holds, over the 20 judged labels.
    y = np.array([1.0] * 14 + [0.0] * 6)
    c_all = np.array([1.0] * 140 + [0.0] * 60 + [0.5])
    judged = weighted_ppi(y=y, confidence=y, pi=np.full(20, 0.1), confidence_all=c_all[:200], alpha=0.05)
    mixed = weighted_ppi(
        y=np.append(y, 1.0),
        confidence=np.append(y, 0.5),
        pi=np.full(21, 0.1),
        confidence_all=c_all,
        alpha=0.05,
    )
    assert judged.note.startswith("rare disagreements") and mixed.note.startswith("rare disagreements")
    assert mixed.halfwidth > 0.05
