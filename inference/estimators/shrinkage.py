"""Prediction-powered shrinkage across themes: small themes borrow strength from the judge.

An option, never the default. Each theme k has a PPI++ estimate theta_k with standard error s_k
and the judge's own rate m_k over the theme (known exactly: the judge labels every unit). The
judge's bias b_k = theta_k - m_k varies across themes with mean square tau^2; where s_k is large
(few labels) the theme's estimate is pulled toward its judge rate::

    shrunk_k = m_k + w_k (theta_k - m_k),   w_k = tau^2 / (tau^2 + s_k^2)

tau^2 = mean_k((theta_k - m_k)^2 - s_k^2), by moments across themes, at least Armstrong,
Kolesár and Plagborg-Møller's 2 mean(s^4) / (k mean(s^2)) and ``tau2_floor``. This is the
shape of prediction-powered adaptive shrinkage (PAS, Li and Ignatiadis 2025): shrink each
problem's PPI estimate toward its prediction mean, more where it is noisier. (PAS tunes its
weights by Stein's unbiased risk estimate; the moment estimate here is the simpler empirical
Bayes one.)

**Intervals.** The robust empirical Bayes confidence interval of Armstrong, Kolesár and
Plagborg-Møller (2022, Econometrica): shrunk_k -/+ cva(s_k^2 / tau^2) w_k s_k, where cva(t) is the
half-width, in standard errors, that keeps the non-coverage at most alpha for any bias
distribution whose normalised second moment is t (the worst case puts mass at 0 and at one
other point, their Proposition B.1). The guarantee is **on average over the themes**: 95% of
themes covered in expectation, not each theme 95% of the time. A theme whose judge bias is far
from the others' may be covered much less often; that is the price of the narrower intervals.
With few themes (under about 5) tau^2 itself is poorly estimated and the average guarantee is
only approximate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
from scipy.stats import norm

from inference.intervals import check_alpha, keep_around, quantile

PPI_SHRUNK = "ppi++-shrunk"


@dataclass(frozen=True)
class Shrunk:
    """One theme's shrunk estimate: ``mean``, interval ``lo``..``hi`` (cut to [0, 1]),
    ``weight`` w_k on the theme's own PPI++ estimate, and ``tau2`` the across-theme bias
    variance used."""

    mean: float
    lo: float
    hi: float
    weight: float
    tau2: float

    @property
    def halfwidth(self) -> float:
        return (self.hi - self.lo) / 2


def _non_coverage(b: float, chi: float) -> float:
    """P(|Z - b| > chi), Z standard normal."""
    return float(norm.sf(chi - b) + norm.cdf(-chi - b))


def _worst_non_coverage(t: float, chi: float) -> float:
    """Largest non-coverage over bias distributions with E b^2 = t: mass 1 - t/x^2 at 0 and t/x^2
    at x, for x^2 >= t (a grid fine enough for a critical value to three decimals)."""
    if t <= 0:
        return _non_coverage(0.0, chi)
    # Beyond chi + 8, r(x, chi) is 1 to 1e-15 and t / x^2 falls: the maximum lies below.
    root = math.sqrt(t)
    grid = np.linspace(root, max(root, chi + 8), 2000)
    shares = t / grid**2
    values = (1 - shares) * _non_coverage(0.0, chi) + shares * (norm.sf(chi - grid) + norm.cdf(-chi - grid))
    return float(np.max(values))


def _critical_value(t: float, alpha: float) -> float:
    z = quantile(alpha=alpha, df=None)
    if t <= 0:
        return z
    # Chebyshev: the worst non-coverage is at most t / (chi - z)^2 roughly, below alpha here.
    upper = z + math.sqrt(t / alpha) + 10
    return float(brentq(lambda chi: _worst_non_coverage(t, chi) - alpha, z, upper, xtol=1e-6))


# cva on a grid of t, log-spaced; between grid points it is interpolated on log t.
_GRID = np.geomspace(1e-4, 1e4, 161)


@cache
def _table(alpha: float) -> np.ndarray:
    return np.array([_critical_value(float(t), alpha) for t in _GRID])


def critical_value(t: float, alpha: float) -> float:
    """cva_alpha(t): the smallest chi with worst-case non-coverage at most alpha when the
    normalised bias has second moment t (t = 0: the normal quantile). Tabulated once per alpha
    and interpolated on log t (to about 1e-3); beyond t = 1e4 it grows as sqrt(t), as
    Chebyshev's bound does."""
    check_alpha(alpha)
    if t <= _GRID[0]:
        return (
            _critical_value(0.0, alpha)
            if t <= 0
            else float(np.interp(t, [0.0, _GRID[0]], [_critical_value(0.0, alpha), _table(alpha)[0]]))
        )
    table = _table(alpha)
    if t >= _GRID[-1]:
        return float(table[-1] * math.sqrt(t / _GRID[-1]))
    return float(np.interp(math.log(t), np.log(_GRID), table))


def shrink_to_judge(
    *,
    estimates: ArrayLike,
    standard_errors: ArrayLike,
    judge_means: ArrayLike,
    alpha: float = 0.05,
    tau2_floor: float = 1e-4,
) -> list[Shrunk]:
    """Shrunk estimates and robust empirical Bayes intervals, one per theme, in order (see the
    module). Needs at least 2 themes, finite estimates and positive standard errors."""
    theta = np.asarray(estimates, dtype=float)
    se = np.asarray(standard_errors, dtype=float)
    m = np.asarray(judge_means, dtype=float)
    if not (theta.shape == se.shape == m.shape) or theta.size < 2:
        raise ValueError("need the same number (at least 2) of estimates, standard errors and judge means")
    if not (
        np.all(np.isfinite(theta)) and np.all(np.isfinite(m)) and np.all(np.isfinite(se)) and np.all(se > 0)
    ):
        raise ValueError("estimates and judge means must be finite, standard errors finite and positive")
    # Armstrong, Kolesár and Plagborg-Møller's lower bound 2 mean(s^4) / (k mean(s^2)) keeps a
    # moment estimate that chance made small from shrinking everything to the judge.
    bound = 2 * float(np.mean(se**4)) / (theta.size * float(np.mean(se**2)))
    tau2 = max(float(np.mean((theta - m) ** 2 - se**2)), bound, tau2_floor)
    out = []
    for k in range(theta.size):
        w = tau2 / (tau2 + se[k] ** 2)
        centre = m[k] + w * (theta[k] - m[k])
        chi = critical_value(float(se[k] ** 2 / tau2), alpha)
        half = chi * w * se[k]
        mean = float(min(1.0, max(0.0, centre)))
        lo, hi = keep_around(estimate=mean, lo=centre - half, hi=centre + half)
        out.append(
            Shrunk(
                mean=mean,
                lo=lo,
                hi=hi,
                weight=float(w),
                tau2=tau2,
            )
        )
    return out
