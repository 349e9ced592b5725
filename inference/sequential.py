"""Label in batches, look after every batch, stop a theme when its interval is narrow enough: a
confidence sequence for PPI++.

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

**The sequence.** The asymptotic confidence sequence of Waudby-Smith, Arnold, Wu and Ramdas
(2024, *Time-uniform central limit theory and asymptotic confidence sequences*, Annals of
Statistics), after t draws with running mean m_t and variance estimate s_t^2::

    m_t -/+ sqrt( 2 (t s_t^2 rho^2 + 1) / (t^2 rho^2) * log( sqrt(t s_t^2 rho^2 + 1) / alpha ) )

rho tunes where the sequence is tightest: rho^2 = x / (t* v) with x solving x = log(1 + x) -
2 log alpha (about -2 log alpha + log(1 - 2 log alpha)), t* the planned number of draws and v a
variance guess (from a pilot, or the planner); any rho is valid, a bad guess only costs width.
s_t^2 is regularised by the guess, (v + sum_j (phi_j - m_t)^2) / (t + 1), so the first few draws
cannot claim a variance of zero. The price of looking at will: at the planned t* the half-width is
1.55 times the fixed-n normal one's at alpha = 0.05, as many as 2.4 times the draws for one
half-width (``bench/efficiency_bench.py`` measures what it costs against today's design).

:func:`more_draws` answers "about how many more labels": the smallest t whose half-width, with the
current variance estimate, reaches the target, minus the draws made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from inference.intervals import check_alpha, keep_around

# The variance guess counts as this many observations in the running variance.
PRIOR_WEIGHT = 10


@dataclass(frozen=True)
class Look:
    """The confidence sequence after one batch: ``draws`` made so far, ``labels`` distinct units
    labeled, the estimate ``mean`` and ``halfwidth`` (the interval is mean -/+ halfwidth, cut to
    [0, 1] where shown), the ``lam`` the batch used and the running ``variance`` estimate s_t^2
    (what :func:`more_draws` extrapolates with)."""

    draws: int
    labels: int
    mean: float
    halfwidth: float
    lam: float
    variance: float = math.nan

    @property
    def bounds(self) -> tuple[float, float]:
        """The interval as shown: mean -/+ halfwidth cut to [0, 1], around the estimate clipped
        to [0, 1] (``intervals.keep_around``: never inverted)."""
        estimate = min(1.0, max(0.0, self.mean))
        return keep_around(estimate=estimate, lo=self.mean - self.halfwidth, hi=self.mean + self.halfwidth)

    @property
    def lo(self) -> float:
        return self.bounds[0]

    @property
    def hi(self) -> float:
        return self.bounds[1]


def tuning(*, planned: float, variance_guess: float, alpha: float) -> float:
    """rho making the sequence tightest after ``planned`` draws of variance ``variance_guess``."""
    check_alpha(alpha)
    if not (planned > 0 and variance_guess > 0):
        raise ValueError("planned and variance_guess must be positive")
    c = -2 * math.log(alpha)
    x = brentq(lambda x: x - math.log1p(x) - c, 1e-9, 10 * c + 10)
    return math.sqrt(x / (planned * variance_guess))


def boundary(*, t: ArrayLike, variance: ArrayLike, alpha: float, rho: float) -> np.ndarray:
    """Half-width of the sequence after t draws with variance estimate ``variance``."""
    check_alpha(alpha)
    steps = np.asarray(t, dtype=float)
    v = np.asarray(variance, dtype=float)
    spread = steps * v * rho**2 + 1
    return np.sqrt(2 * spread / (steps**2 * rho**2) * np.log(np.sqrt(spread) / alpha))


def running_moments(*, values: ArrayLike, variance_guess: float) -> tuple[np.ndarray, np.ndarray]:
    """Running means and regularised variances s_t^2 after each of ``values``: arrays of length t."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("values: none given")
    t = np.arange(1, x.size + 1, dtype=float)
    means = np.cumsum(x) / t
    # sum (x - m_t)^2 = sum x^2 - t m_t^2
    squares = np.maximum(np.cumsum(x**2) - t * means**2, 0.0)
    return means, (PRIOR_WEIGHT * variance_guess + squares) / (t + PRIOR_WEIGHT)


def confidence_sequence(
    *, values: ArrayLike, alpha: float, rho: float, variance_guess: float
) -> tuple[np.ndarray, np.ndarray]:
    """Running means and half-widths after each of the observations ``values`` (independent, of
    a common mean): arrays of length t."""
    means, variance = running_moments(values=values, variance_guess=variance_guess)
    t = np.arange(1, means.size + 1, dtype=float)
    return means, boundary(t=t, variance=variance, alpha=alpha, rho=rho)


def planned_draws(*, target_halfwidth: float, variance_guess: float, alpha: float) -> int:
    """The draws t* at which a sequence tuned for t* (:func:`tuning`) reaches ``target_halfwidth``
    if the variance is ``variance_guess``. Tuned at t*, rho^2 t* v is a constant x, so the
    half-width there is sqrt(v / t*) K with K = boundary(1) for a sequence tuned at 1."""
    if not (target_halfwidth > 0):
        raise ValueError("target_halfwidth must be positive")
    rho = tuning(planned=1, variance_guess=variance_guess, alpha=alpha)
    at_one = float(boundary(t=1, variance=variance_guess, alpha=alpha, rho=rho))
    return max(1, math.ceil((at_one / target_halfwidth) ** 2))


def more_draws(
    *, t: int, variance: float, target_halfwidth: float, alpha: float, rho: float, limit: int
) -> int:
    """Draws still needed for the half-width to reach ``target_halfwidth`` if the variance stays
    ``variance``: the smallest t' >= t with boundary(t') <= target, minus t; ``limit`` - t + 1
    when even ``limit`` draws would not do (out of reach)."""
    if not (target_halfwidth > 0):
        raise ValueError("target_halfwidth must be positive")
    steps = np.arange(max(t, 1), limit + 1)
    reached = np.flatnonzero(boundary(t=steps, variance=variance, alpha=alpha, rho=rho) <= target_halfwidth)
    if reached.size == 0:
        return limit - t + 1
    return int(steps[reached[0]]) - t


def _lambda(*, a: np.ndarray, g: np.ndarray, fallback: float) -> float:
    """Cov(a, g) / Var(g) clipped to [0, 1]: the lam minimising Var(a - lam g)."""
    if a.size < 2:
        return fallback
    var = float(np.var(g))
    if var <= 1e-12:
        return fallback
    return float(np.clip(np.mean((a - a.mean()) * (g - g.mean())) / var, 0.0, 1.0))


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
) -> list[Look]:
    """The confidence sequence for a theme's rate, looked at after every ``batch`` draws.

    ``units``: the index (0..N-1) of each draw in order, ``y`` its human label; ``q``: the draw
    probabilities of every unit (sum 1) and ``confidence_all`` the judge's confidence on every
    unit (N values). ``planned`` and ``variance_guess`` set rho (:func:`tuning`). Returns one
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
    if batch < 1:
        raise ValueError("batch must be at least 1")
    rho = tuning(planned=planned, variance_guess=variance_guess, alpha=alpha)
    scale = N * probabilities[index]
    a = labels / scale
    g = c_all[index] / scale - float(c_all.mean())
    lam = np.empty(index.size)
    looks: list[Look] = []
    lam_now = float(np.clip(lam_start, 0.0, 1.0))
    for start in range(0, index.size, batch):
        stop = min(start + batch, index.size)
        lam_now = _lambda(a=a[:start], g=g[:start], fallback=lam_now)
        lam[start:stop] = lam_now
    values = a - lam * g
    if not values.size:
        return looks
    means, variances = running_moments(values=values, variance_guess=variance_guess)
    halfwidths = boundary(
        t=np.arange(1, values.size + 1, dtype=float), variance=variances, alpha=alpha, rho=rho
    )
    for start in range(0, index.size, batch):
        stop = min(start + batch, index.size)
        looks.append(
            Look(
                draws=stop,
                labels=int(np.unique(index[:stop]).size),
                mean=float(means[stop - 1]),
                halfwidth=float(halfwidths[stop - 1]),
                lam=float(lam[stop - 1]),
                variance=float(variances[stop - 1]),
            )
        )
    return looks
