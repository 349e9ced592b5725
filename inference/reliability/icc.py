"""Repeated answers to one question: the intra-question correlation ICC(1) from the one-way
analysis of variance with its F interval, the rate with questions as clusters, and the interval's
width against the repetitions used (measured by subsampling, predicted by the design effect)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import f as f_dist

from inference import intervals
from inference.estimators import means


@dataclass(frozen=True)
class ICC:
    """ICC(1) from the one-way ANOVA of values grouped by question: the estimate, its 1 - alpha
    F interval, the mean squares between and within questions, the F ratio, k0 (the mean group
    size of unequal groups), the number of groups and of values. NaN where undefined (fewer than
    two questions, no question with two answers, no variation at all)."""

    value: float
    lo: float
    hi: float
    ms_between: float
    ms_within: float
    f: float
    k0: float
    groups: int
    n: int
    alpha: float

    @property
    def has_interval(self) -> bool:
        return math.isfinite(self.lo) and math.isfinite(self.hi)


@dataclass(frozen=True)
class WidthPoint:
    """The interval's width with ``r`` repetitions per question: measured (mean over ``draws``
    subsamples of min(r, n_i) answers per question) and predicted by the design effect."""

    r: int
    mean_width: float
    predicted_width: float
    draws: int
    answers: float  # mean number of answers used per draw


def icc_oneway(*, groups: Sequence[Sequence[float]], alpha: float) -> ICC:
    """ICC(1) of values grouped by question, from the one-way ANOVA (Shrout and Fleiss 1979):

    MSB = sum_i n_i (m_i - m)^2 / (g - 1), MSW = sum_ij (y_ij - m_i)^2 / (N - g),
    k0 = (N - sum_i n_i^2 / N) / (g - 1) (the mean group size; n when every group has n values),
    ICC = (MSB - MSW) / (MSB + (k0 - 1) MSW).

    Interval (McGraw and Wong 1996, case 1): with F = MSB / MSW, F_L = F / F_{1-alpha/2}(g - 1,
    N - g) and F_U = F F_{1-alpha/2}(N - g, g - 1), [(F_L - 1) / (F_L + k0 - 1), (F_U - 1) /
    (F_U + k0 - 1)]; exact for balanced normal data, an approximation otherwise. Groups are the
    questions with at least one value. NaN where undefined: fewer than two groups, no group with
    two values, or no variation at all; with variation between questions only, ICC = 1 and no
    interval.
    """
    arrays = [np.asarray(group, dtype=float) for group in groups if len(group)]
    g = len(arrays)
    n = sum(array.size for array in arrays)
    nan = math.nan
    if g < 2 or n <= g:
        return ICC(nan, nan, nan, nan, nan, nan, nan, g, n, alpha)
    grand = float(np.concatenate(arrays).mean())
    ss_between = sum(array.size * (float(array.mean()) - grand) ** 2 for array in arrays)
    ss_within = sum(float(np.sum((array - array.mean()) ** 2)) for array in arrays)
    ms_between = ss_between / (g - 1)
    ms_within = ss_within / (n - g)
    k0 = (n - sum(array.size**2 for array in arrays) / n) / (g - 1)
    if ms_within == 0:
        value = 1.0 if ms_between > 0 else nan
        return ICC(value, nan, nan, ms_between, ms_within, math.inf if ms_between else nan, k0, g, n, alpha)
    value = (ms_between - ms_within) / (ms_between + (k0 - 1) * ms_within)
    ratio = ms_between / ms_within
    f_lo = ratio / float(f_dist.ppf(1 - alpha / 2, g - 1, n - g))
    f_hi = ratio * float(f_dist.ppf(1 - alpha / 2, n - g, g - 1))
    lo = (f_lo - 1) / (f_lo + k0 - 1)
    hi = (f_hi - 1) / (f_hi + k0 - 1)
    return ICC(value, lo, hi, ms_between, ms_within, ratio, k0, g, n, alpha)


def clustered_estimate(*, groups: Sequence[Sequence[float]], alpha: float) -> intervals.Interval:
    """The mean of every value with its cluster-robust interval, questions as clusters
    (``estimators.classical_mean``: t with G - 1 degrees of freedom, kept in [0, 1])."""
    values = [value for group in groups for value in group]
    clusters = [index for index, group in enumerate(groups) for _ in group]
    return means.classical_mean(y=values, alpha=alpha, clusters=clusters)


def _width(interval: intervals.Interval) -> float:
    width = interval.shown_hi - interval.shown_lo
    return width if math.isfinite(width) else math.nan


def width_curve(
    *, groups: Sequence[Sequence[float]], alpha: float, draws: int, seed: int, icc: float
) -> list[WidthPoint]:
    """The clustered interval's width with r = 1..R repetitions per question (R the most any
    question has). Measured: each draw orders every question's answers at random (one
    ``numpy.random.default_rng(seed)`` for the whole curve), keeps the first min(r, n_i) and
    computes :func:`clustered_estimate` of them, from each question's running sums in that order
    (``means.clustered_means``: one pass per draw, where reading the answers again for each r
    took minutes at 1,000 repetitions of 1,000 questions); the width is the mean over ``draws``
    (one draw where no question has more than r answers: every draw would keep them all).
    Predicted by the design effect: 2 t_{G-1} sqrt(S^2 (1 + (r - 1) max(ICC, 0)) / (G r)) (at
    most 1), S^2 the variance of every value (ddof 1), G the number of questions; NaN without an
    ICC."""
    arrays = [np.asarray(group, dtype=float) for group in groups if len(group)]
    if not arrays:
        return []
    G = len(arrays)
    R = max(array.size for array in arrays)
    matrix = np.full((G, R), np.nan)
    for row, array in enumerate(arrays):
        matrix[row, : array.size] = array
    present = ~np.isnan(matrix)
    sizes = present.sum(axis=1)
    # Column r - 1: how many answers each question keeps with r repetitions.
    counts = np.minimum(np.arange(1, R + 1)[None, :], sizes[:, None])
    rng = np.random.default_rng(seed)
    widths: list[list[float]] = [[] for _ in range(R)]
    for draw in range(draws):
        keys = rng.random((G, R))
        keys[~present] = 2.0  # absent repetitions sort last
        shuffled = np.take_along_axis(matrix, np.argsort(keys, axis=1), axis=1)
        # Each question's sum over its first r answers in this order; with r >= R every draw
        # keeps every answer, so only the first draw is computed there.
        kept = R if draw == 0 else R - 1
        sums = np.cumsum(np.nan_to_num(shuffled[:, :kept], nan=0.0), axis=1)
        for r, interval in enumerate(means.clustered_means(sums=sums, counts=counts[:, :kept], alpha=alpha)):
            widths[r].append(_width(interval))
    everything = matrix[present]
    variance = float(everything.var(ddof=1)) if everything.size > 1 else math.nan
    q = intervals.quantile(alpha=alpha, df=G - 1) if G > 1 else math.inf
    rho = max(icc, 0.0) if math.isfinite(icc) else math.nan
    points = []
    for r in range(1, R + 1):
        finite = [w for w in widths[r - 1] if math.isfinite(w)]
        # An interval of a rate is at most [0, 1] wide.
        predicted = (
            min(1.0, 2 * q * math.sqrt(variance * (1 + (r - 1) * rho) / (G * r)))
            if math.isfinite(rho) and math.isfinite(variance) and math.isfinite(q)
            else math.nan
        )
        points.append(
            WidthPoint(
                r=r,
                mean_width=float(np.mean(finite)) if finite else math.nan,
                predicted_width=predicted,
                draws=len(widths[r - 1]),
                answers=float(counts[:, r - 1].sum()),
            )
        )
    return points
