"""Label in batches, look after every batch, stop a theme when its interval is narrow enough: a
confidence sequence for PPI++ that holds whatever the judge's confidences.

A 95% confidence interval is honest for one look at a sample size fixed in advance. Looking after
every batch and stopping when the interval is narrow enough breaks it (the more looks, the more
often some look misses). A **confidence sequence** is a sequence of intervals that all contain
the truth at once with probability 1 - alpha, however many looks and whatever the stopping rule.

**The draws.** Within a theme of N units, each draw picks unit i with probability q_i (with
replacement; q from the confidence-driven design, ``inclusion.proportional_probabilities`` with a
budget of 1, or uniform), and a human labels it (a unit drawn again reuses its label). With the
judge's confidence c_i and C = (1/N) sum_i c_i its mean over the theme, each draw gives

    phi_j = lam_j C + (y_j - lam_j c_j) / (N q_j)

whose expectation is the theme's rate for any lam_j fixed before the draw: the draws are
independent and identically distributed given the lambdas (Hansen and Hurwitz 1943). lam_j is
the variance-minimising lambda fitted on the draws of the earlier batches only (``lam_start``
for the first batch), so it is predictable and the martingale argument holds.

**The sequence: betting.** phi_j is bounded, and its bounds [a_j, b_j] are known before the draw
(lam_j, the c_i and the q_i fix them: q_i is never below the floor, so 1 / (N q_i) is at most
1 / floor). The confidence sequence is Waudby-Smith and Ramdas's (2024, *Estimating means of
bounded random variables by betting*, JRSS B) hedged capital process: for a candidate rate m,

    K_t(m) = max( 1/2 prod_j (1 + l_j^+ (phi_j - m)), 1/2 prod_j (1 - l_j^- (phi_j - m)) )

is a nonnegative martingale when m is the rate, so by Ville's inequality it passes 1 / alpha with
probability at most alpha, ever: the rates m with K_t(m) < 1/alpha, intersected over the looks,
hold the truth at every look at once with probability 1 - alpha. Nothing asymptotic, nothing
assumed about the judge: an overconfident judge's sure-and-wrong units make phi_j large, and the
bounds say in advance how large it can be. The bets l_j are predictable plug-ins (their eq. 26):
sqrt(2 log(2 / alpha) / (s_{j-1}^2 max(j, t*))), tuned at the planned draws t*, each truncated at
1/2 of what keeps the capital nonnegative (1/2 / (m - a_j), 1/2 / (b_j - m)); s^2 is the running
variance of the phi, regularised by the variance guess worth ``PRIOR_WEIGHT`` draws. Any bets are
valid; good ones only narrow the sequence.

**What it costs.** A sequence valid for bounded terms of unknown variance pays for the range: at
the planned draws its half-width is about 1.4 times the fixed-size normal interval's when the
variance is not small against the range, more when it is (a judge that is nearly always right,
whose rare errors could weigh 1 / floor). ``bench/coverage_grid.py`` and
``bench/anytime_stop_bench.py`` measure it.

:func:`more_draws` answers "about how many more labels": the draws at which the half-width,
shrinking as 1 / sqrt(t) from the last look, reaches the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from inference.intervals import check_alpha, keep_around

# The variance guess counts as this many draws in the running variance.
PRIOR_WEIGHT = 10
# Each bet is at most this share of what keeps the capital nonnegative (Waudby-Smith and Ramdas
# use 1/2 or 3/4).
TRUNCATION = 0.5
# Candidate rates m on which the capital is computed: the sequence's bounds are these grid
# points, rounded outwards (never narrower than the truth allows).
GRID = 2001


@dataclass(frozen=True)
class Look:
    """The confidence sequence after one batch: ``draws`` made so far, ``labels`` distinct units
    labeled, the estimate ``mean`` (the running mean of the phi, within [0, 1]), the sequence's
    bounds ``lower`` and ``upper`` (every look so far intersected), the ``lam`` the batch used and
    the running ``variance`` estimate s_t^2."""

    draws: int
    labels: int
    mean: float
    lower: float
    upper: float
    lam: float
    variance: float = math.nan

    @property
    def bounds(self) -> tuple[float, float]:
        """The interval as shown: [lower, upper] around the estimate (``intervals.keep_around``:
        never inverted)."""
        estimate = min(1.0, max(0.0, self.mean))
        return keep_around(estimate=estimate, lo=self.lower, hi=self.upper)

    @property
    def lo(self) -> float:
        return self.bounds[0]

    @property
    def hi(self) -> float:
        return self.bounds[1]

    @property
    def halfwidth(self) -> float:
        lo, hi = self.bounds
        return (hi - lo) / 2


def running_moments(*, values: ArrayLike, variance_guess: float) -> tuple[np.ndarray, np.ndarray]:
    """Running means and regularised variances s_t^2 after each of ``values``: arrays of length t,
    s_t^2 = (PRIOR_WEIGHT * guess + sum_{j <= t} (x_j - m_t)^2) / (t + PRIOR_WEIGHT)."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("values: none given")
    t = np.arange(1, x.size + 1, dtype=float)
    means = np.cumsum(x) / t
    # sum (x - m_t)^2 = sum x^2 - t m_t^2
    squares = np.maximum(np.cumsum(x**2) - t * means**2, 0.0)
    return means, (PRIOR_WEIGHT * variance_guess + squares) / (t + PRIOR_WEIGHT)


def bets(*, values: ArrayLike, alpha: float, planned: float, variance_guess: float) -> np.ndarray:
    """The predictable bets before truncation: draw j's uses the variance of the draws before it
    (the guess alone for the first), sqrt(2 log(2 / alpha) / (s_{j-1}^2 max(j, planned)))."""
    check_alpha(alpha)
    x = np.asarray(values, dtype=float).ravel()
    _, variances = running_moments(values=x, variance_guess=variance_guess)
    before = np.concatenate([[max(variance_guess, 1e-12)], variances[:-1]])
    j = np.arange(1, x.size + 1, dtype=float)
    return np.sqrt(2 * math.log(2 / alpha) / (np.maximum(before, 1e-12) * np.maximum(j, planned)))


def betting_sequence(
    *,
    values: ArrayLike,
    low: ArrayLike,
    high: ArrayLike,
    alpha: float,
    planned: float,
    variance_guess: float,
    grid: int = GRID,
) -> tuple[np.ndarray, np.ndarray]:
    """The hedged betting confidence sequence of a mean in [0, 1] from observations ``values``,
    each within its predictable bounds [``low``, ``high``] (arrays parallel to the values): the
    lower and upper bounds after each observation, every earlier one intersected, on a grid of
    ``grid`` candidate rates (bounds rounded outwards to the grid). Where every candidate is
    excluded (observations inconsistent with any rate in [0, 1]) the sequence keeps its last
    bounds."""
    check_alpha(alpha)
    x = np.asarray(values, dtype=float).ravel()
    a = np.asarray(low, dtype=float).ravel()
    b = np.asarray(high, dtype=float).ravel()
    if not (x.shape == a.shape == b.shape):
        raise ValueError("values, low and high differ in length")
    if np.any(x < a - 1e-12) or np.any(x > b + 1e-12):
        raise ValueError("an observation lies outside its bounds")
    m = np.linspace(0.0, 1.0, grid)
    raw = bets(values=x, alpha=alpha, planned=planned, variance_guess=variance_guess)
    with np.errstate(divide="ignore", invalid="ignore"):
        up_cap = np.where(m[None, :] > a[:, None], TRUNCATION / (m[None, :] - a[:, None]), np.inf)
        down_cap = np.where(b[:, None] > m[None, :], TRUNCATION / (b[:, None] - m[None, :]), np.inf)
    gap = x[:, None] - m[None, :]
    up = np.cumsum(np.log1p(np.minimum(raw[:, None], up_cap) * gap), axis=0)
    down = np.cumsum(np.log1p(-np.minimum(raw[:, None], down_cap) * gap), axis=0)
    capital = np.logaddexp(up, down) - math.log(2)
    # Once excluded, a rate stays excluded (the running intersection).
    kept = ~np.logical_or.accumulate(capital >= math.log(1 / alpha), axis=0)
    step = 1.0 / (grid - 1)
    first = kept.argmax(axis=1)
    last = grid - 1 - kept[:, ::-1].argmax(axis=1)
    lower = np.maximum(0.0, m[first] - step)
    upper = np.minimum(1.0, m[last] + step)
    # Where no rate is left, keep the last bounds that held one (or all of [0, 1] before any).
    empty = ~kept.any(axis=1)
    if empty.any():
        held = np.where(~empty, np.arange(x.size), -1)
        held = np.maximum.accumulate(held)
        lower = np.where(held >= 0, lower[np.maximum(held, 0)], 0.0)
        upper = np.where(held >= 0, upper[np.maximum(held, 0)], 1.0)
    return lower, upper


def planned_draws(*, target_halfwidth: float, variance_guess: float, alpha: float) -> int:
    """The draws t* at which the sequence, tuned there, should reach ``target_halfwidth`` if the
    variance is ``variance_guess`` and small bets are not truncated: at t* the half-width is
    about sqrt(2 log(2 / alpha) v / t*) (the bets' linear and quadratic terms alike), so
    t* = 2 log(2 / alpha) v / h^2, about 1.9 times the fixed-size normal interval's draws at
    alpha = 0.05."""
    check_alpha(alpha)
    if not (target_halfwidth > 0):
        raise ValueError("target_halfwidth must be positive")
    if not (variance_guess > 0):
        raise ValueError("variance_guess must be positive")
    return max(1, math.ceil(2 * math.log(2 / alpha) * variance_guess / target_halfwidth**2))


def more_draws(*, t: int, halfwidth: float, target_halfwidth: float, limit: int) -> int:
    """Draws still needed for the half-width to reach ``target_halfwidth`` if it keeps shrinking
    as 1 / sqrt(t) from ``halfwidth`` after ``t`` draws: ceil(t (h / target)^2) - t, and
    ``limit`` - t + 1 when even ``limit`` draws would not do (out of reach)."""
    if not (target_halfwidth > 0):
        raise ValueError("target_halfwidth must be positive")
    if halfwidth <= target_halfwidth:
        return 0
    needed = math.ceil(max(t, 1) * (halfwidth / target_halfwidth) ** 2)
    if needed > limit:
        return limit - t + 1
    return max(1, needed - t)


def _lambda(*, count: int, sums: dict[str, float], fallback: float) -> float:
    """Cov(a, g) / Var(g) clipped to [0, 1] over the first ``count`` draws (from their running
    sums of a, g, a g and g^2): the lam minimising Var(a - lam g)."""
    if count < 2:
        return fallback
    mean_a, mean_g = sums["a"] / count, sums["g"] / count
    var = sums["gg"] / count - mean_g**2
    if var <= 1e-12:
        return fallback
    return float(np.clip((sums["ag"] / count - mean_a * mean_g) / var, 0.0, 1.0))


def anytime_ppi(
    *,
    units: ArrayLike,
    y: ArrayLike,
    q: ArrayLike,
    confidence_all: ArrayLike,
    batch: int,
    alpha: float,
    planned: float,
    variance_guess: float,
    lam_start: float = 1.0,
    grid: int = GRID,
) -> list[Look]:
    """The confidence sequence for a theme's rate, looked at after every ``batch`` draws.

    ``units``: the index (0..N-1) of each draw in order, ``y`` its human label; ``q``: the draw
    probabilities of every unit (sum 1) and ``confidence_all`` the judge's confidence on every
    unit (N values). ``planned`` and ``variance_guess`` tune the bets (:func:`bets`). Returns one
    :class:`Look` per batch (the last may be shorter)."""
    check_alpha(alpha)
    index = np.asarray(units, dtype=int).ravel()
    labels = np.asarray(y, dtype=float).ravel()
    probabilities = np.asarray(q, dtype=float).ravel()
    c_all = np.asarray(confidence_all, dtype=float).ravel()
    N = c_all.shape[0]
    if labels.shape[0] != index.shape[0]:
        raise ValueError(f"y has {labels.shape[0]} values, expected {index.shape[0]}")
    if probabilities.shape[0] != N:
        raise ValueError(f"q has {probabilities.shape[0]} values, expected {N}")
    if np.any(probabilities <= 0) or abs(float(probabilities.sum()) - 1) > 1e-9:
        raise ValueError("q must be positive and sum to 1")
    if index.size and (index.min() < 0 or index.max() >= N):
        raise ValueError("units must index confidence_all")
    if np.any((labels != 0) & (labels != 1)):
        raise ValueError("y must be 0 or 1")
    if batch < 1:
        raise ValueError("batch must be at least 1")
    if not (planned > 0 and variance_guess > 0):
        raise ValueError("planned and variance_guess must be positive")
    mean_c = float(c_all.mean())
    scale_all = N * probabilities
    scale = scale_all[index]
    a = labels / scale
    g = c_all[index] / scale - mean_c
    lam = np.empty(index.size)
    lam_now = float(np.clip(lam_start, 0.0, 1.0))
    # Running sums, for each batch's lambda on the draws before it.
    sums = {
        name: np.concatenate([[0.0], np.cumsum(v)])
        for name, v in (("a", a), ("g", g), ("ag", a * g), ("gg", g * g))
    }
    for start in range(0, index.size, batch):
        stop = min(start + batch, index.size)
        lam_now = _lambda(count=start, sums={name: v[start] for name, v in sums.items()}, fallback=lam_now)
        lam[start:stop] = lam_now
    values = a - lam * g
    looks: list[Look] = []
    if not values.size:
        return looks
    # phi_j = lam C + (y - lam c_i) / (N q_i): over every unit i and y in {0, 1}, its least value
    # is lam (C - max_i c_i / (N q_i)) (y = 0), its greatest lam C + max_i (1 - lam c_i) / (N q_i).
    worst_low = float(np.max(c_all / scale_all))
    low = lam * (mean_c - worst_low)
    highest = {
        value: value * mean_c + float(np.max((1 - value * c_all) / scale_all)) for value in set(lam.tolist())
    }
    high = np.array([highest[value] for value in lam.tolist()])
    lower, upper = betting_sequence(
        values=values,
        low=low,
        high=high,
        alpha=alpha,
        planned=planned,
        variance_guess=variance_guess,
        grid=grid,
    )
    means, variances = running_moments(values=values, variance_guess=variance_guess)
    # Distinct units labeled after each draw: a draw counts when its unit was not drawn before.
    first = np.zeros(index.size, dtype=bool)
    first[np.unique(index, return_index=True)[1]] = True
    distinct = np.cumsum(first)
    for start in range(0, index.size, batch):
        stop = min(start + batch, index.size)
        looks.append(
            Look(
                draws=stop,
                labels=int(distinct[stop - 1]),
                mean=min(1.0, max(0.0, float(means[stop - 1]))),
                lower=float(lower[stop - 1]),
                upper=float(upper[stop - 1]),
                lam=float(lam[stop - 1]),
                variance=float(variances[stop - 1]),
            )
        )
    return looks
