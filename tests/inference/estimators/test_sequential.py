"""inference.estimators.sequential: the betting confidence sequence by hand, its validity over all looks,
the planner's draws, and anytime PPI++ (predictable lambdas, bounds that hold every draw)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from inference.estimators import sequential


def test_the_bets_are_the_predictable_plug_in_tuned_at_the_planned_draws():
    values = np.array([0.2, 0.4, 0.1])
    bets = sequential.bets(values=values, alpha=0.05, planned=50, variance_guess=0.04)
    # Draw 1: the guess alone; draw 2: the variance after draw 1, (10 * 0.04 + 0) / 11; draw 3:
    # after draws 1 and 2, (10 * 0.04 + 0.02) / 12 (their squared deviations: 0.01 + 0.01).
    before = [0.04, 0.4 / 11, 0.42 / 12]
    expected = [math.sqrt(2 * math.log(2 / 0.05) / (v * 50)) for v in before]
    assert bets == pytest.approx(expected, rel=1e-12)
    # Past the planned draws the bet shrinks with j.
    late = sequential.bets(values=np.full(80, 0.2), alpha=0.05, planned=50, variance_guess=0.04)
    assert late[79] < late[49]


def test_the_capital_excludes_a_rate_exactly_when_it_passes_one_over_alpha_by_hand():
    # Four observations in [0, 1] near 0.9: the rate 0.2 is far, its capital is computed by hand.
    values = np.array([0.9, 1.0, 0.8, 0.9])
    low, high = np.zeros(4), np.ones(4)
    raw = sequential.bets(values=values, alpha=0.1, planned=4, variance_guess=0.25)
    m = 0.2
    up = np.prod(1 + np.minimum(raw, 0.5 / (m - 0)) * (values - m))
    down = np.prod(1 - np.minimum(raw, 0.5 / (1 - m)) * (values - m))
    capital = 0.5 * up + 0.5 * down
    lower, upper = sequential.betting_sequence(
        values=values, low=low, high=high, alpha=0.1, planned=4, variance_guess=0.25, grid=1001
    )
    assert (capital >= 1 / 0.1) == (lower[-1] > m)
    # The bounds never widen from one look to the next (the running intersection).
    assert np.all(np.diff(lower) >= 0) and np.all(np.diff(upper) <= 0)
    assert 0 <= lower[-1] <= values.mean() <= upper[-1] <= 1


def test_the_sequence_holds_the_mean_at_every_look_at_least_1_minus_alpha_of_the_time():
    # Bounded draws of a skewed law (10% of 1s among 0s, bounds [0, 1]), 300 sequences of 400
    # draws: the sequence's guarantee is over every look at once, whatever the variance guess.
    rng = np.random.default_rng(20261201)
    misses = 0
    for _ in range(300):
        x = (rng.random(400) < 0.1).astype(float)
        lower, upper = sequential.betting_sequence(
            values=x, low=np.zeros(400), high=np.ones(400), alpha=0.05, planned=100, variance_guess=0.01,
            grid=401,
        )  # fmt: skip
        misses += bool(np.any((lower > 0.1) | (upper < 0.1)))
    assert misses / 300 <= 0.05


def test_observations_outside_their_bounds_are_refused():
    with pytest.raises(ValueError, match="outside its bounds"):
        sequential.betting_sequence(
            values=[1.5], low=[0.0], high=[1.0], alpha=0.05, planned=1, variance_guess=0.1
        )


def test_planned_draws_and_more_draws_by_hand():
    # t* = 2 log(2 / alpha) v / h^2.
    assert sequential.planned_draws(target_halfwidth=0.05, variance_guess=0.25, alpha=0.05) == math.ceil(
        2 * math.log(40) * 0.25 / 0.0025
    )
    # From a half-width of 0.1 after 100 draws to 0.05: t (h / target)^2 = 400, so 300 more.
    assert sequential.more_draws(t=100, halfwidth=0.1, target_halfwidth=0.05, limit=10_000) == 300
    assert sequential.more_draws(t=100, halfwidth=0.04, target_halfwidth=0.05, limit=10_000) == 0
    assert sequential.more_draws(t=100, halfwidth=0.1, target_halfwidth=0.05, limit=200) == 101


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
    # Each look's bounds are the sequence's up to then: never wider than the look before.
    assert all(a.lower <= b.lower and b.upper <= a.upper for a, b in zip(looks, looks[1:], strict=False))


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
        sequential.planned_draws(target_halfwidth=0.1, variance_guess=0.1, alpha=1.5)
