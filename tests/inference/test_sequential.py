"""inference.sequential: the confidence sequence's boundary worked by hand, its time-uniform
coverage in a seeded simulation, and a lambda that only earlier batches choose."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inference import sequential


def test_tuning_solves_the_optimality_equation():
    rho = sequential.tuning(planned=100, variance_guess=0.25, alpha=0.05)
    x = rho**2 * 100 * 0.25
    assert x == pytest.approx(math.log1p(x) - 2 * math.log(0.05))


def test_boundary_by_hand():
    rho, t, v = 0.3, 50, 0.2
    spread = t * v * rho**2 + 1
    expected = math.sqrt(2 * spread / (t**2 * rho**2) * math.log(math.sqrt(spread) / 0.05))
    assert float(sequential.boundary(t=t, variance=v, alpha=0.05, rho=rho)) == pytest.approx(expected)


def test_running_means_and_regularised_variance():
    values = np.array([1.0, 0.0, 1.0, 1.0])
    means, halves = sequential.confidence_sequence(values=values, alpha=0.05, rho=0.5, variance_guess=0.2)
    assert means == pytest.approx([1, 0.5, 2 / 3, 0.75])
    variance = (sequential.PRIOR_WEIGHT * 0.2 + np.var(values) * 4) / (4 + sequential.PRIOR_WEIGHT)
    assert halves[-1] == pytest.approx(
        float(sequential.boundary(t=4, variance=variance, alpha=0.05, rho=0.5))
    )


def test_covers_at_every_look_at_once_at_least_95_percent():
    rng = np.random.default_rng(5)
    rho = sequential.tuning(planned=100, variance_guess=0.21, alpha=0.05)
    misses = 0
    for _ in range(500):
        values = (rng.random(400) < 0.3).astype(float)
        means, halves = sequential.confidence_sequence(
            values=values, alpha=0.05, rho=rho, variance_guess=0.21
        )
        misses += bool(np.any(np.abs(means - 0.3) > halves))
    assert misses / 500 <= 0.05


def test_more_draws_is_the_first_step_whose_boundary_reaches_the_target():
    rho = sequential.tuning(planned=200, variance_guess=0.1, alpha=0.05)
    more = sequential.more_draws(t=50, variance=0.1, target_halfwidth=0.08, alpha=0.05, rho=rho, limit=10_000)
    reached = 50 + more
    assert sequential.boundary(t=reached, variance=0.1, alpha=0.05, rho=rho) <= 0.08
    assert sequential.boundary(t=reached - 1, variance=0.1, alpha=0.05, rho=rho) > 0.08
    assert (
        sequential.more_draws(t=50, variance=0.1, target_halfwidth=1e-4, alpha=0.05, rho=rho, limit=60) == 11
    )


def test_anytime_ppi_lambda_depends_on_earlier_batches_only():
    rng = np.random.default_rng(2)
    N = 300
    confidence = rng.random(N)
    truth = (rng.random(N) < confidence).astype(float)
    q = np.full(N, 1 / N)
    units = rng.integers(0, N, size=60)
    kwargs: dict = {
        "q": q,
        "confidence_all": confidence,
        "batch": 20,
        "alpha": 0.05,
        "planned": 60,
        "variance_guess": 0.2,
    }
    looks = sequential.anytime_ppi(units=units, y=truth[units], **kwargs)
    assert [look.draws for look in looks] == [20, 40, 60]
    assert looks[0].lam == 1.0  # lam_start
    changed = truth[units].copy()
    changed[40:] = 1 - changed[40:]  # the last batch's labels cannot move the lambda it used
    assert sequential.anytime_ppi(units=units, y=changed, **kwargs)[2].lam == looks[2].lam
    assert looks[-1].labels == np.unique(units).size
    assert 0 <= looks[-1].lo <= looks[-1].hi <= 1


def test_anytime_ppi_is_unbiased_for_the_theme_rate_under_unequal_draws():
    rng = np.random.default_rng(9)
    N = 200
    confidence = rng.random(N)
    truth = (rng.random(N) < confidence).astype(float)
    q = (0.2 + np.sqrt(confidence * (1 - confidence))) / np.sum(0.2 + np.sqrt(confidence * (1 - confidence)))
    finals = []
    for _ in range(300):
        units = rng.choice(N, size=50, p=q)
        looks = sequential.anytime_ppi(
            units=units,
            y=truth[units],
            q=q,
            confidence_all=confidence,
            batch=10,
            alpha=0.05,
            planned=50,
            variance_guess=0.05,
        )
        finals.append(looks[-1].mean)
    assert np.mean(finals) == pytest.approx(truth.mean(), abs=0.01)


def test_bad_input():
    with pytest.raises(ValueError, match="sum to 1"):
        sequential.anytime_ppi(
            units=[0],
            y=[1],
            q=[0.5, 0.6],
            confidence_all=[0.5, 0.5],
            batch=1,
            alpha=0.05,
            planned=10,
            variance_guess=0.1,
        )
    with pytest.raises(ValueError, match="alpha"):
        sequential.tuning(planned=10, variance_guess=0.1, alpha=1.5)
